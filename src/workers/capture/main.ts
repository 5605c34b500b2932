import { runWorker } from "../runtime.js";
import { captureHandlers } from "./handlers.js";
import { warmEncoder } from "./png.js";

await runWorker(captureHandlers);
// Once ready: the encoder is loaded while the agent is still deciding what to capture.
warmEncoder();
