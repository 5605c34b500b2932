import type { DialogReport } from "../../shared/consentReport.js";
import type { CapabilityLine } from "../../shared/dialogLines.js";

/**
 * The consent dialog port. Implementations: the fake platform's scripted prompter
 * (fakePrompter.ts), our own X11 window on X11 (x11Prompter.ts), a TaskDialog on Win32.
 * Content is built by the server from OS facts only (buildDialogContent); a prompter
 * shows exactly that and never anything the target controls (e.g. its window title).
 */

export interface ConsentDialogContent {
  kind: "consent";
  executable_path: string;
  pid: number;
  /** RFC 3339. */
  process_start: string;
  capabilities: CapabilityLine[];
  /** The MCP client's self-asserted name, or the CN / subject an authenticated transport proved. */
  client_label: string;
  /** True unless a certificate or token proved the identity (client_verified says how). */
  client_label_self_reported: boolean;
  client_verified?: { method: "mtls" | "oauth"; fingerprint: string };
  /** RFC 3339: when a grant from this decision first expires (renewed silently while it stands). */
  expires_at: string;
  default_button: "deny";
  /**
   * Present when the executable is a known interpreter or runtime (python, node, java, wine…):
   * says that the approval covers every program it runs. Also part of `text`.
   */
  interpreter_warning?: string;
  /** The whole text exactly as shown to the person. */
  text: string;
}

export type ConsentAnswer = "approve" | "deny";

export type { DialogReport } from "../../shared/consentReport.js";

export interface ConsentPrompter {
  /** Whether this prompter is a simulation (the demo labels it so). */
  readonly simulated: boolean;
  /**
   * Shows the dialog and resolves with the person's answer. When `signal` aborts (timeout,
   * target exit, server shutdown) the dialog must be closed and the promise rejected. A dialog that
   * can say what input it ignored (and whether it closed itself because its window was tampered
   * with) calls `onReport` as that changes, before it answers.
   */
  prompt(
    content: ConsentDialogContent,
    signal: AbortSignal,
    onReport?: (r: DialogReport) => void,
  ): Promise<ConsentAnswer>;
}
