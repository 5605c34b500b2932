import {
  dialogEntryPath,
  UNSAFE_XTEST_SETTING,
  unsafeXtestConsent,
} from "../../platforms/x11/dialog/spawn.js";
import { WAYLAND_DIALOG_PROGRAM } from "../../shared/dialogPresence.js";

/** What health_check (and so doctor) says about the consent dialog: mechanism, program, unsafe setting. */
export interface ConsentDialogFacts {
  mechanism: string;
  /** The absolute program the dialog runs as, when it is a process of its own. */
  program: string | null;
  unsafe_allow_xtest_consent: boolean;
  /** Present, and loud, while the unsafe setting is on. */
  warning?: string;
  /** What the platform itself cannot stop (said on every run where it applies). */
  limit?: string;
}

/** What GNOME's Wayland session does not stop (docs/wayland.md, measured). */
export const WAYLAND_LIMIT =
  "this GNOME lets any program of your user drive mutter's RemoteDesktop (input) and ScreenCast (pixels) without a dialog, so it can answer both consent dialogs: consent here stops the agent's own tools, not malware already running as you";

export function describeConsentDialog(
  platform: string | null,
  env: Record<string, string | undefined>,
): ConsentDialogFacts {
  if (platform === "x11") {
    const unsafe = unsafeXtestConsent(env);
    return {
      mechanism:
        "own X11 window; XTEST and synthetic input ignored, 1 s security delay, input ignored while covered",
      program: `${process.execPath} ${dialogEntryPath()}`,
      unsafe_allow_xtest_consent: unsafe,
      ...(unsafe
        ? {
            warning: `UNSAFE: ${UNSAFE_XTEST_SETTING}=1 lets XTest input (any local program) answer consent and lease dialogs. For tests only.`,
          }
        : {}),
    };
  }
  if (platform === "win32")
    return {
      mechanism: "own Win32 dialog thread in the input worker",
      program: null,
      unsafe_allow_xtest_consent: false,
    };
  if (platform === "wayland") {
    const unsafe = unsafeXtestConsent(env);
    return {
      mechanism: `two gates: zenity's question box (${unsafe ? "on the accessibility bus, so any program can press its buttons" : "kept off the accessibility bus"}; Deny is the default), then the compositor's portal dialog where the person picks the window and allows control; a grant ends with its portal session`,
      program: WAYLAND_DIALOG_PROGRAM,
      unsafe_allow_xtest_consent: unsafe,
      limit: WAYLAND_LIMIT,
      ...(unsafe
        ? {
            warning: `UNSAFE: ${UNSAFE_XTEST_SETTING}=1 puts the consent dialog on the accessibility bus, where any local program presses its buttons. For tests only.`,
          }
        : {}),
    };
  }
  if (platform === "fake")
    return { mechanism: "simulated (scripted answers)", program: null, unsafe_allow_xtest_consent: false };
  return { mechanism: "none", program: null, unsafe_allow_xtest_consent: false };
}
