import { randomBytes } from "node:crypto";
import {
  describeLeaks,
  type LeakedProcess,
  leakedX11Processes,
  RUN_TOKEN_VAR,
  stopLeaks,
} from "./x11-leaks.js";

/**
 * Global setup of the whole test run: marks the run's environment with a token of its own, and
 * at the end fails the run, naming them, when processes of a private X11 desktop that carry the
 * token are still alive (a session a test started and never stopped), after stopping them.
 */

/** How long a desktop that is being torn down may take to be gone before it counts as left over. */
const SETTLE_MS = 3000;

let token = "";

export function setup(): void {
  token = `${process.pid}.${randomBytes(8).toString("hex")}`;
  process.env[RUN_TOKEN_VAR] = token;
}

async function settled(): Promise<LeakedProcess[]> {
  const deadline = Date.now() + SETTLE_MS;
  for (;;) {
    const leaks = leakedX11Processes(token);
    if (leaks.length === 0 || Date.now() >= deadline) return leaks;
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function teardown(): Promise<void> {
  const leaks = await settled();
  if (leaks.length === 0) return;
  stopLeaks(leaks);
  const message = `test run left processes of private X11 desktops running (now ended):\n${describeLeaks(leaks)}`;
  process.stderr.write(`\n${message}\n`);
  throw new Error(message);
}
