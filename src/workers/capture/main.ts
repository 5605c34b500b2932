import { runWorker } from "../runtime.js";
import { captureHandlers } from "./handlers.js";

await runWorker(captureHandlers);
