import type { CapabilityLine } from "../shared/dialogLines.js";
import { uiError } from "../shared/errors.js";
import { SETTINGS } from "../shared/settings.js";
import { checkSetting, readSettingOrDefault } from "../shared/settingsReader.js";
import type { LeaseDialog, LeaseDialogAnswer, LeaseDialogContent } from "./dialogPort.js";
import type { Env } from "./endpoint.js";
import { LEASE_CAPABILITY_WORDS, type LeaseCapability } from "./protocol.js";

export type { LeaseDialog, LeaseDialogAnswer, LeaseDialogContent } from "./dialogPort.js";

/**
 * UIINSPECT_CONSENT_TIMEOUT_MS, as the MCP server reads it (default 60000, 100–600000): how long
 * a lease dialog stays open. The server refuses to start on a bad value; the broker and the
 * manager, which a person runs, use the default instead.
 */
export function leaseDialogTimeoutMs(env: Env): number {
  return readSettingOrDefault(env, SETTINGS.consentTimeoutMs);
}

export const LEASE_DIALOG_TITLE = "uiinspect-mcp: unattended access lease";

function localTime(iso: string): string {
  const d = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, "0");
  const off = -d.getTimezoneOffset();
  const sign = off >= 0 ? "+" : "-";
  const abs = Math.abs(off);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(
    d.getMinutes(),
  )} (UTC${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)})`;
}

export function buildLeaseDialogContent(
  action: "activate" | "extend",
  hours: number,
  capabilities: readonly LeaseCapability[],
  expiresAt: string,
): LeaseDialogContent {
  const lines: CapabilityLine[] = capabilities.map((c) => ({
    name: c,
    description: LEASE_CAPABILITY_WORDS[c],
  }));
  const head =
    action === "activate"
      ? `Turn on unattended access for ${hours} hour${hours === 1 ? "" : "s"}?`
      : `Extend unattended access by ${hours} hour${hours === 1 ? "" : "s"}?`;
  const text = [
    head,
    "",
    "Every local uiinspect client in this sign-in session (every uiinspect-mcp server that any",
    "program running as your user account starts, for any AI agent) will be able to do the",
    "following to the windows its policy allows, WITHOUT asking you again:",
    ...lines.map((l) => `  - ${l.name}: ${l.description}`),
    "",
    `until ${localTime(expiresAt)} [${expiresAt}],`,
    "unless you end it earlier with: uiinspect-mcp manager lease revoke",
    "",
    "Anyone who can run programs as your user account can also use or end this lease.",
    "If you are not sure, choose Deny.",
  ].join("\n");
  return {
    kind: "lease",
    action,
    hours,
    capabilities: lines,
    expires_at: expiresAt,
    default_button: "deny",
    title: LEASE_DIALOG_TITLE,
    text,
  };
}

/**
 * Linux: our own X11 window (src/platforms/x11/dialog), shown by the broker's own child process,
 * never a program found on PATH. Deny is focused by default; only a person's input counts (no
 * XTEST, no synthetic events, a 1 s security delay, nothing while another window covers it).
 * Closing or timing out is a denial.
 */
export class X11LeaseDialog implements LeaseDialog {
  readonly kind = "x11";
  constructor(private readonly env: Env = process.env) {}

  async prompt(content: LeaseDialogContent, signal: AbortSignal): Promise<LeaseDialogAnswer> {
    const { showTrustedDialog } = await import("../platforms/x11/dialog/spawn.js");
    try {
      return await showTrustedDialog(
        { title: content.title, text: content.text, timeoutMs: leaseDialogTimeoutMs(this.env) + 5000 },
        this.env,
        signal,
      );
    } catch {
      if (signal.aborted) throw uiError("consent_timeout");
      throw uiError("consent_denied", "The lease dialog could not be shown.");
    }
  }
}

/**
 * Picks the dialog from UIINSPECT_LEASE_DIALOG: "x11" (Linux default) or "messagebox"
 * (Windows default). Nothing else is accepted, and there is no value that answers by itself.
 */
export async function selectLeaseDialog(env: Env = process.env): Promise<LeaseDialog> {
  const read = checkSetting(env, SETTINGS.leaseDialog);
  const wanted = read.ok ? (read.value ?? (process.platform === "win32" ? "messagebox" : "x11")) : null;
  if (wanted === "x11" && process.platform !== "win32") return new X11LeaseDialog(env);
  if (wanted === "messagebox" && process.platform === "win32") {
    const { WindowsMessageBoxDialog } = await import("./native/windows.js");
    return new WindowsMessageBoxDialog(env);
  }
  throw uiError("invalid_argument", "UIINSPECT_LEASE_DIALOG must be x11 (Linux) or messagebox (Windows).");
}
