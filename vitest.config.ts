import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Generous: a limit only catches hangs, and a loaded CI machine runs the X11 and Wine suites several times slower.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: "forks",
    fileParallelism: true,
    maxWorkers: 2,
    // Fails the run when a private X11 desktop a test started is still alive at the end.
    globalSetup: ["test/support/run-guard.ts"],
    setupFiles: ["test/support/run-file.ts"],
  },
});
