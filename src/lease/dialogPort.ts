import type { CapabilityLine } from "../shared/dialogLines.js";

/**
 * The trusted lease dialog, shown by the broker itself (not by whoever asks it): a request
 * to activate or extend can come from any process of the same user, so the decision must come
 * from a person at a dialog the broker owns, with Deny as the default button.
 * No test hook answers it: tests answer the real dialog with synthetic input under Xvfb.
 */

export interface LeaseDialogContent {
  kind: "lease";
  action: "activate" | "extend";
  hours: number;
  capabilities: CapabilityLine[];
  /** RFC 3339 UTC: the lease ends exactly here if approved. */
  expires_at: string;
  default_button: "deny";
  title: string;
  /** The whole text exactly as shown. */
  text: string;
}

export type LeaseDialogAnswer = "approve" | "deny";

export interface LeaseDialog {
  readonly kind: string;
  /** Resolves with the answer; when `signal` aborts the dialog is closed and the promise rejects. */
  prompt(content: LeaseDialogContent, signal: AbortSignal): Promise<LeaseDialogAnswer>;
}
