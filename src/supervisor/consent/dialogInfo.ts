import {
  dialogEntryPath,
  UNSAFE_XTEST_SETTING,
  unsafeXtestConsent,
} from "../../platforms/x11/dialog/spawn.js";

/** What health_check (and so doctor) says about the consent dialog: mechanism, program, unsafe setting. */
export interface ConsentDialogFacts {
  mechanism: string;
  /** The absolute program the dialog runs as, when it is a process of its own. */
  program: string | null;
  unsafe_allow_xtest_consent: boolean;
  /** Present, and loud, while the unsafe setting is on. */
  warning?: string;
}

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
    return unsafe
      ? {
          mechanism: "zenity question box (any program of the user can answer it on this compositor)",
          program: "/usr/bin/zenity",
          unsafe_allow_xtest_consent: true,
          warning: `UNSAFE: ${UNSAFE_XTEST_SETTING}=1 lets any local program answer consent dialogs (mutter's RemoteDesktop, AT-SPI). For tests only.`,
        }
      : {
          mechanism: "none: on this compositor any program of the user can answer a dialog (docs/wayland.md)",
          program: null,
          unsafe_allow_xtest_consent: false,
        };
  }
  if (platform === "fake")
    return { mechanism: "simulated (scripted answers)", program: null, unsafe_allow_xtest_consent: false };
  return { mechanism: "none", program: null, unsafe_allow_xtest_consent: false };
}
