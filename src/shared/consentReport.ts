import { z } from "zod";

/**
 * What a consent dialog of ours tells its parent about the input it did not count, besides its
 * answer: counts and kinds only (never a key, a position or any text), whether the display looks
 * virtual (no input device but XTEST ones, as on Xvfb), and whether it closed itself because its
 * own window was tampered with. The supervisor turns it into the words of a denial or a timeout.
 */

export const IGNORED_KINDS = ["injected", "synthetic", "too_early", "covered", "keyboard"] as const;
export type IgnoredKind = (typeof IGNORED_KINDS)[number];

const Count = z.number().int().min(0).max(1_000_000_000);

export const DialogReportSchema = z
  .object({
    ignored: z
      .object({
        injected: Count,
        synthetic: Count,
        too_early: Count,
        covered: Count,
        keyboard: Count,
      })
      .strict(),
    virtual_display: z.boolean(),
    tampered: z.boolean(),
  })
  .strict();

export type DialogReport = z.infer<typeof DialogReportSchema>;

export function emptyReport(): DialogReport {
  return {
    ignored: { injected: 0, synthetic: 0, too_early: 0, covered: 0, keyboard: 0 },
    virtual_display: false,
    tampered: false,
  };
}

const KIND_WORDS: Record<IgnoredKind, string> = {
  injected: "from an injected (XTest) device",
  synthetic: "synthetic (sent by another program)",
  too_early:
    "before Allow was enabled (the security delay, restarted when the dialog appears, moves, is uncovered or the pointer lands on it)",
  covered: "while another window covered the dialog",
  keyboard: "a key on Allow (only a pointer click can approve)",
};

export const TAMPERED_NOTE =
  "Another program changed the consent dialog's window (a window inside it, or the dialog moved into another window), so the dialog closed itself as a denial. Nothing was approved and nothing is kept: ask again.";

/** One sentence about what the dialog ignored, or "" when it ignored nothing. */
export function ignoredSentence(r: DialogReport | null): string {
  if (!r) return "";
  const parts = IGNORED_KINDS.filter((k) => r.ignored[k] > 0).map((k) => `${r.ignored[k]} ${KIND_WORDS[k]}`);
  let s = parts.length > 0 ? ` The dialog ignored input: ${parts.join("; ")}.` : "";
  if (r.virtual_display)
    s +=
      " This display has no input device but XTest ones (a virtual display such as Xvfb), so nobody can answer the dialog here; tests set UIINSPECT_UNSAFE_ALLOW_XTEST_CONSENT=1 (never on a desktop a person uses).";
  return s;
}
