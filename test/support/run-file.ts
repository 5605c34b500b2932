import { relative } from "node:path";
import { expect } from "vitest";
import { RUN_FILE_VAR } from "./x11-leaks.js";

// Setup file of every test file: what the file starts carries its name, so the run's guard
// (run-guard.ts) can say which file left a desktop running.
const path = expect.getState().testPath;
if (path) process.env[RUN_FILE_VAR] = relative(process.cwd(), path);
