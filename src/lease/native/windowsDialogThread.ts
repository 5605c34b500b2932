import { parentPort, workerData } from "node:worker_threads";
import { guardDialogThread } from "../../platforms/win32/dialogGuard.js";
import * as w from "../../platforms/win32/ffi.js";

/**
 * The lease MessageBox's own thread (a worker_thread: its own OS thread and message loop),
 * started by WindowsMessageBoxDialog in the broker. The low-level hooks of guardDialogThread
 * run only on the thread that installed them and only while that thread pumps messages, so
 * they are installed here, on the thread that then blocks in MessageBoxW, whose modal loop
 * pumps them (a koffi `.async` call runs on a koffi thread that runs no JS of ours, so the
 * hooks could not be installed there). It reports its thread id first, so the broker can find
 * and close the box by thread, then its answer.
 */

interface Init {
  text: string;
  title: string;
  /** The unsafe test setting: injected (SendInput) input may answer; the security delay stays. */
  allowInjected: boolean;
}

const IDYES = 6;
const MB_YESNO = 0x4;
const MB_ICONWARNING = 0x30;
const MB_DEFBUTTON2 = 0x100;
const MB_SETFOREGROUND = 0x10000;
const MB_TOPMOST = 0x40000;

const init = workerData as Init;
const port = parentPort;
if (port) {
  const tid = w.GetCurrentThreadId();
  const guard = guardDialogThread(tid, init.allowInjected === true, [IDYES]);
  port.postMessage({ type: "thread", tid });
  let r = 0;
  try {
    r = w.MessageBoxW(
      0,
      init.text,
      init.title,
      MB_YESNO | MB_ICONWARNING | MB_DEFBUTTON2 | MB_SETFOREGROUND | MB_TOPMOST,
    );
  } finally {
    guard.stop();
  }
  port.postMessage({ type: "answer", answer: r === IDYES ? "approve" : "deny" });
}
