import { runWorker } from "../runtime.js";
import { inputHandlers } from "./handlers.js";

await runWorker(inputHandlers);
