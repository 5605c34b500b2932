import { runWorker } from "../runtime.js";
import { uiaHandlers } from "./handlers.js";

await runWorker(uiaHandlers);
