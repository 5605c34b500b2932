import { setClockTicks } from "../../os/linux/proc.js";
import { uiError } from "../../shared/errors.js";
import { sameInstance } from "../../shared/identity.js";
import type {
  AccessibilityPort,
  CapturePort,
  InputPort,
  Platform,
  SharedSegment,
  WindowInfo,
} from "../../shared/platform.js";
import type { PressLedger } from "../../shared/pressLedger.js";
import { X11Accessibility } from "./atspi.js";
import { X11Capture } from "./capture.js";
import { X11Desktop } from "./desktop.js";
import { X11Input } from "./input.js";
import { detachOrphanSegments } from "./shmOrphans.js";
import { XConnection } from "./xconn.js";

/**
 * The X11 platform for one worker (thread or process). Loaded only inside workers: it opens this
 * worker's own X connections (one X owner per worker) and, for the uia worker, the a11y bus.
 * Ports a worker kind does not use are created lazily, so e.g. a capture worker never needs XTest.
 */
export async function createX11Platform(opts: {
  workerKind: "capture" | "input" | "uia" | "other";
  /** Records the keycodes typed and remapped by typeText (src/guardian). */
  ledger?: PressLedger;
  /** Segments a terminated worker thread of this kind left attached: detached first. */
  orphanSegments?: readonly SharedSegment[];
  /** Tests of the path without libX11-xcb: Xlib's connection gets no xcb view (xconn.ts). */
  withoutXlibXcb?: boolean;
}): Promise<Platform> {
  const x = XConnection.open({ withoutXlibXcb: opts.withoutXlibXcb === true });
  detachOrphanSegments(x.n, opts.orphanSegments ?? []);
  let segmentsListener: ((segments: SharedSegment[]) => void) | undefined;
  const newCapture = () => new X11Capture(x, (segments) => segmentsListener?.(segments));
  const hz = Number(x.n.sysconf(2)); // _SC_CLK_TCK
  setClockTicks(hz);
  const desktop = new X11Desktop(x);
  let capture: X11Capture | null = null;
  let input: X11Input | null = null;
  const accessibility = new X11Accessibility({ popupAreas: popupAreasOn(desktop) });
  if (opts.workerKind === "input") input = new X11Input(x, opts.ledger);
  if (opts.workerKind === "capture") capture = newCapture();
  let disposed = false;

  const captureProxy: CapturePort = {
    captureScreen: (rect, into, afterRead) => {
      if (disposed) return Promise.reject(uiError("platform_unavailable"));
      capture ??= newCapture();
      return capture.captureScreen(rect, into, afterRead);
    },
    askRead: (rect, into, afterRead) => {
      if (disposed) return null;
      capture ??= newCapture();
      return capture.askRead(rect, into, afterRead);
    },
  };
  const inputPort = (): X11Input => {
    if (disposed) throw uiError("platform_unavailable");
    input ??= new X11Input(x, opts.ledger);
    return input;
  };
  const inputProxy: InputPort = {
    moveTo: (px, py) => inputPort().moveTo(px, py),
    buttonDown: (b, proof, prove) => inputPort().buttonDown(b, proof, prove),
    buttonUp: (b) => inputPort().buttonUp(b),
    wheel: (n, proof) => inputPort().wheel(n, proof),
    keyDown: (k, proof) => inputPort().keyDown(k, proof),
    keyUp: (k) => inputPort().keyUp(k),
    typeText: (h, t, m, gate) => inputPort().typeText(h, t, m, gate),
  };
  const a11yProxy: AccessibilityPort = {
    openSession: (w) => accessibility.openSession(w),
  };
  const dispose = async () => {
    if (disposed) return;
    disposed = true;
    await desktop.dispose();
    accessibility.dispose();
    capture?.dispose();
    x.close();
  };
  return {
    desktop,
    capture: captureProxy,
    input: inputProxy,
    accessibility: a11yProxy,
    dispose,
    nativeFds: () => x.fds(),
    onSharedSegments: (listener) => {
      segmentsListener = listener;
    },
  };
}

/**
 * The X server's word on which of the process's other windows are popups of the granted one
 * (their rects, and the unlisted windows of its own), and which are other windows of it.
 */
function popupAreasOn(desktop: X11Desktop) {
  return async (w: WindowInfo, shownBefore: ReadonlySet<string>) => {
    const all = await desktop.listWindows();
    const now = all.find((o) => o.hwnd === w.hwnd) ?? w;
    const own = now.instance;
    const same = all.filter(
      (o) =>
        o.hwnd !== now.hwnd &&
        o.visible &&
        !o.iconic &&
        own !== null &&
        o.instance !== null &&
        sameInstance(o.instance, own),
    );
    const popups = new Set((await desktop.popupsOf(now, same, shownBefore)).map((o) => o.hwnd));
    return {
      popups: [
        ...same.filter((o) => popups.has(o.hwnd)).map((o) => o.rect),
        ...(await desktop.unlistedOwnWindows(now, shownBefore)),
      ],
      others: same.filter((o) => !popups.has(o.hwnd)).map((o) => o.rect),
    };
  };
}
