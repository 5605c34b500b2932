import { runWorker } from "../runtime.js";
import { warmEncoder } from "./encode.js";
import { captureHandlers } from "./handlers.js";

await runWorker(captureHandlers);
// Once ready: the encoder is loaded while the agent is still deciding what to capture.
await warmEncoder();
