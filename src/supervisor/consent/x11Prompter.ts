import { showTrustedDialog } from "../../platforms/x11/dialog/spawn.js";
import type { ConsentAnswer, ConsentDialogContent, ConsentPrompter, DialogReport } from "./prompter.js";

/**
 * The consent dialog on X11: our own window (src/platforms/x11/dialog), never a program found on
 * PATH. It shows exactly the server-built `content.text`, Deny is focused by default, and it
 * accepts only a person's pointer click on Allow (XTEST and synthetic events, input within the
 * security delay, and input while another window overlaps it are all ignored; keys never
 * approve), and closes itself as a denial when its window is tampered with. Its own
 * timeout is the backstop after the broker's deadline; a window it closed is never an approval.
 */

export const CONSENT_DIALOG_TITLE = "uiinspect-mcp: access request";

/** How much later than the broker's deadline the dialog's own timeout fires. */
const BACKSTOP_MS = 5000;

export class X11Prompter implements ConsentPrompter {
  readonly simulated = false;

  constructor(
    private readonly env: Record<string, string | undefined>,
    private readonly timeoutMs: number,
  ) {}

  prompt(
    content: ConsentDialogContent,
    signal: AbortSignal,
    onReport?: (r: DialogReport) => void,
  ): Promise<ConsentAnswer> {
    return showTrustedDialog(
      { title: CONSENT_DIALOG_TITLE, text: content.text, timeoutMs: this.timeoutMs + BACKSTOP_MS },
      this.env,
      signal,
      onReport,
    );
  }
}
