import { execFileSync, spawn } from "node:child_process";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI } from "../support/mcp.js";
import { scratchDir } from "../support/scratch.js";
import { processesOfState } from "../support/x11-leaks.js";
import { REPO, waitFor, x11CliSuite } from "./support.js";

/**
 * `uiinspect-mcp sandbox start` ended by a signal (its caller timed out and killed it, a person
 * pressed Ctrl-C, a CI step was cancelled) stops what it had started before it exits: no process
 * of the desktop is left and its folder is gone, whether the signal came while the script was
 * starting the desktop or while the command waited for the app's window.
 */

const run = x11CliSuite("sandbox start ended by a signal");
const SCRIPT = join(REPO, "sandbox/x11-session.sh");

describe.skipIf(!run)("sandbox start ended by a signal", () => {
  let work: string;
  let noWindow: string;
  const states: string[] = [];

  beforeAll(() => {
    work = scratchDir("sandbox-sig");
    // An app that runs and never maps a window: start waits for it until it is signalled.
    noWindow = join(work, "no-window");
    writeFileSync(noWindow, "#!/bin/sh\nexec sleep 600\n", { mode: 0o755 });
  });

  afterAll(() => {
    // Whatever a failing case left is stopped by the script that started it.
    for (const state of states)
      if (existsSync(join(state, "xvfb.pid")))
        execFileSync("bash", [SCRIPT, "stop", state], { stdio: "inherit" });
    if (work) rmSync(work, { recursive: true, force: true });
  });

  const cases = [
    { when: "while the script starts the desktop", file: "xvfb.pid", app: false },
    { when: "while it waits for the app's window", file: "app.pid", app: true },
  ];
  for (const c of cases) {
    it(`SIGTERM ${c.when}: exit 143, nothing of the desktop left`, async () => {
      const state = join(work, c.app ? "app" : "desktop");
      states.push(state);
      const args = [CLI, "sandbox", "start", "--dir", state, ...(c.app ? ["--app", noWindow] : [])];
      const child = spawn(process.execPath, args, { stdio: ["ignore", "ignore", "inherit"] });
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
        child.once("exit", (code, signal) => r({ code, signal })),
      );
      await waitFor(`${c.file} in the sandbox's folder`, async () => existsSync(join(state, c.file)), 60_000);
      child.kill("SIGTERM");
      expect(await exited).toEqual({ code: 143, signal: null });
      expect(processesOfState(state).filter((pid) => pid !== process.pid)).toEqual([]);
      expect(existsSync(state)).toBe(false);
    }, 120_000);
  }
});
