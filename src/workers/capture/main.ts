import { yieldCpuToSupervisor } from "../priority.js";
import { runWorker } from "../runtime.js";
import { captureHandlers } from "./handlers.js";
import { warmEncoder } from "./png.js";

yieldCpuToSupervisor();
await runWorker(captureHandlers);
// Once ready: the encoder is loaded while the agent is still deciding what to capture.
warmEncoder();
