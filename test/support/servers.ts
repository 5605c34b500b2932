import { afterAll, afterEach } from "vitest";
import type { PortalPort } from "../../src/supervisor/consent/portalGate.js";
import { InProcessHarness } from "./inProcess.js";
import { type FakeDesktop, LOOSE_BUDGETS, McpHarness, type ServerHarness } from "./mcp.js";

/**
 * The one way a test starts a server on the simulated desktop: in process by default
 * (test/support/inProcess.ts), or the built CLI over stdio for the smoke and e2e suites that
 * need a process of its own. Every server started here is closed by the hook the file installs.
 */

export interface FakeServerOptions {
  /** A whole policy document, written next to the scenario (none: the environment decides). */
  policy?: Record<string, unknown>;
  env?: Record<string, string>;
  /** In process only: the supervisor's clock (ManualTime's). */
  clock?: () => number;
  client?: { name: string; version: string };
  via?: "inprocess" | "stdio";
  /** In process only: a compositor portal (the second consent gate) scripted by the test. */
  portalPort?: PortalPort;
}

const live: ServerHarness[] = [];
/** Policy files get a new name each time: a running server watches its file for changes. */
let policies = 0;

/** Starts a server on `d` with loose budgets (rate tests set their own in `env`). */
export async function serveFake(d: FakeDesktop, o: FakeServerOptions = {}): Promise<ServerHarness> {
  const env: Record<string, string> = {
    UIINSPECT_PLATFORM: "fake",
    UIINSPECT_FAKE_DESKTOP: d.path,
    ...(o.policy
      ? { DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(o.policy, `policy-${++policies}.json`) }
      : {}),
    ...LOOSE_BUDGETS,
    ...o.env,
  };
  const h =
    o.via === "stdio"
      ? await McpHarness.start(env, o.client)
      : await InProcessHarness.start(env, o.client, {
          clock: o.clock,
          ...(o.portalPort ? { portalPort: o.portalPort } : {}),
        });
  live.push(h);
  return h;
}

/** Tracks a server started some other way, so the file's hook closes it too. */
export async function track<T extends ServerHarness>(started: Promise<T>): Promise<T> {
  const h = await started;
  live.push(h);
  return h;
}

async function closeAll(): Promise<void> {
  await Promise.all(live.splice(0).map((h) => h.close()));
}

/** Closes every server a test file started, after each test. */
export function closeServersAfterEach(): void {
  afterEach(closeAll);
}

/** Closes them once at the end (files that share one server between tests). */
export function closeServersAfterAll(): void {
  afterAll(closeAll);
}
