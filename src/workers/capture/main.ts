import { lowerObservationPriority, scheduleAsBatch } from "../../os/linux/scheduling.js";
import { runWorker } from "../runtime.js";
import { captureHandlers } from "./handlers.js";
import { warmEncoder } from "./png.js";

// An observation worker yields the CPU to the supervisor thread (src/os/linux/scheduling.ts).
scheduleAsBatch();
lowerObservationPriority();
await runWorker(captureHandlers);
// Once ready: the encoder is loaded while the agent is still deciding what to capture.
warmEncoder();
