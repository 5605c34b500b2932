import { lowerObservationPriority, scheduleAsBatch } from "../../os/linux/scheduling.js";
import { runWorker } from "../runtime.js";
import { uiaHandlers } from "./handlers.js";

// An observation worker yields the CPU to the supervisor thread (src/os/linux/scheduling.ts).
scheduleAsBatch();
lowerObservationPriority();
await runWorker(uiaHandlers);
