import { isMainThread } from "node:worker_threads";
import { favourSupervisorThread, scheduleAsBatch } from "../../os/linux/scheduling.js";
import { runWorker } from "../runtime.js";
import { captureHandlers } from "./handlers.js";
import { warmEncoder } from "./png.js";

// An observation worker yields the CPU to the supervisor thread (src/os/linux/scheduling.ts).
scheduleAsBatch();
// The supervisor loads no native code, so the capture worker, which the server starts with
// itself, asks the supervisor thread's short slice for it. Only as a thread of the server: its
// main thread's id is the process id. A worker process leaves its parent alone.
if (!isMainThread) favourSupervisorThread(process.pid);
await runWorker(captureHandlers);
// Once ready: the encoder is loaded while the agent is still deciding what to capture.
warmEncoder();
