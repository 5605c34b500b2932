import { yieldCpuToSupervisor } from "../priority.js";
import { runWorker } from "../runtime.js";
import { uiaHandlers } from "./handlers.js";

yieldCpuToSupervisor();
await runWorker(uiaHandlers);
