import { parentPort, workerData } from "node:worker_threads";
import * as w from "../../os/win32/ffi.js";
import { guardDialogThread } from "../../platforms/win32/dialogGuard.js";
import { type DialogThreadInit, IDYES, yesNoBox } from "../../platforms/win32/yesNoBox.js";

/**
 * The lease MessageBox's own thread (a worker_thread: its own OS thread and message loop),
 * started by WindowsMessageBoxDialog in the broker. The low-level hooks of guardDialogThread
 * run only on the thread that installed them and only while that thread pumps messages, so
 * they are installed here, on the thread that then blocks in MessageBoxW, whose modal loop
 * pumps them (a koffi `.async` call runs on a koffi thread that runs no JS of ours, so the
 * hooks could not be installed there). It reports its thread id first, so the broker can find
 * and close the box by thread, then its answer.
 */

const init = workerData as DialogThreadInit;
const port = parentPort;
if (port) {
  const tid = w.GetCurrentThreadId();
  const guard = guardDialogThread(tid, init.allowInjected === true, [IDYES]);
  port.postMessage({ type: "thread", tid });
  let approved = false;
  try {
    approved = yesNoBox(init.text, init.title);
  } finally {
    guard.stop();
  }
  port.postMessage({ type: "answer", answer: approved ? "approve" : "deny" });
}
