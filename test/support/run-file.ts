import { relative } from "node:path";
import { afterAll, expect } from "vitest";
import { removeScratchDirs } from "./scratch.js";
import { RUN_FILE_VAR } from "./x11-leaks.js";

// Setup file of every test file: what the file starts carries its name, so the run's guard
// (run-guard.ts) can say which file left a desktop running.
const path = expect.getState().testPath;
if (path) process.env[RUN_FILE_VAR] = relative(process.cwd(), path);

// After the file's own afterAll hooks (vitest runs a setup file's hooks outermost): its servers
// and apps have stopped writing into its scratch folders by then.
afterAll(removeScratchDirs);
