import { expect } from "vitest";
import { FakeDesktop, filePolicy, RUFFLE, ruffleWindow, type ServerHarness } from "./mcp.js";
import { serveFake } from "./servers.js";

export { closeServersAfterAll, closeServersAfterEach } from "./servers.js";

/**
 * Helpers for the consent / authorization tests: the simulated desktop, its scripted consent
 * answer, and the in-process server on it (test/support/inProcess.ts).
 */

export type Consent = { answer: "approve" | "deny" | "timeout" | "ignore"; delay_ms?: number };
export type Win = Record<string, unknown>;

export const START = "2026-11-30T08:00:00Z";
export const RESTART = "2026-11-30T09:30:00Z";

/** An allowed Ruffle window number n: hwnd 1000+n, pid 4000+n; 1..12 do not overlap. */
export function win(n: number, over: Win = {}): Win {
  const l = ((n - 1) % 4) * 420;
  const t = (Math.floor((n - 1) / 4) % 3) * 340;
  return ruffleWindow({
    hwnd: 1000 + n,
    pid: 4000 + n,
    title: `Ruffle - game${n}.swf`,
    z: n,
    rect: [l, t, l + 400, t + 320],
    ...over,
  });
}

/** A point inside the policy's safe region "stage" ([10,50,330,290], window-relative). */
export const IN_STAGE = { x: 40, y: 80 };

/** A scenario file plus the scripted consent answer, rewritable between calls. */
export class Desk {
  readonly fake: FakeDesktop;
  windows: Win[];
  consent: Consent | null;

  constructor(windows: Win[], consent: Consent | null = { answer: "approve", delay_ms: 0 }) {
    this.windows = windows;
    this.consent = consent;
    this.fake = new FakeDesktop(this.doc());
  }

  private doc(): Record<string, unknown> {
    const d: Record<string, unknown> = {
      session: 1,
      foreground: (this.windows[0]?.hwnd as number | undefined) ?? null,
      windows: this.windows,
    };
    if (this.consent) d.consent = this.consent;
    return d;
  }

  /** Rewrites the file with new windows and/or a new consent script. */
  set(change: { windows?: Win[]; consent?: Consent | null }): void {
    if (change.windows) this.windows = change.windows;
    if (change.consent !== undefined) this.consent = change.consent;
    this.fake.write(this.doc());
  }

  /** Same pid, same path, new process start: the PID was reused by another process. */
  reusePid(hwnd: number, start = RESTART): void {
    this.set({ windows: this.windows.map((w) => (w.hwnd === hwnd ? { ...w, process_start: start } : w)) });
  }

  /** Lines the fake prompter wrote (one per dialog shown). */
  prompts(): Array<Record<string, unknown>> {
    return this.fake.promptLog();
  }

  effects(): Array<Record<string, unknown>> {
    return this.fake.effectsLog();
  }

  /** Writes a policy file (a new name each time, so files never overwrite each other). */
  policy(over: Record<string, unknown> = {}): string {
    this.policies++;
    return this.fake.writePolicy(filePolicy(over), `policy-${this.policies}.json`);
  }
  private policies = 0;
}

export interface ServeOptions {
  env?: Record<string, string>;
  client?: { name: string; version: string };
  /** Overrides of the e2e file policy (default: every action allowed). */
  policy?: Record<string, unknown>;
  /** The supervisor's clock (ManualTime's, where grant or token expiry is the point). */
  clock?: () => number;
}

/** Starts the in-process server on the desk with a file policy (all actions allowed) and loose budgets. */
export function serve(desk: Desk, opts: ServeOptions = {}): Promise<ServerHarness> {
  return serveFake(desk.fake, {
    policy: filePolicy(opts.policy),
    env: opts.env,
    clock: opts.clock,
    client: opts.client,
  });
}

/** Polls until `pred` holds (a state the test waits for, not a timing assertion). */
export async function until(pred: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await sleep(25);
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface AuditEvent {
  time: string;
  correlation_id: string;
  client: string;
  tool: string;
  action: string;
  outcome: string;
  reason: string;
  pid: number | null;
  process_start: string | null;
}

export async function audit(h: ServerHarness, limit = 100): Promise<AuditEvent[]> {
  return (await h.ok("get_audit_events", { limit })).events as AuditEvent[];
}

export async function grants(h: ServerHarness): Promise<Array<Record<string, unknown>>> {
  return (await h.ok("get_access_state")).grants as Array<Record<string, unknown>>;
}

export { RUFFLE };

const OLD_START = new Date(START).toISOString();

/** Window 1001 (pid 4001) changed instance: no grant, one audited revocation of the old one. */
export async function expectRevoked(h: ServerHarness): Promise<void> {
  expect(await grants(h)).toEqual([]);
  const rev = (await audit(h)).filter((e) => e.tool === "revocation");
  expect(rev).toHaveLength(1);
  expect(rev[0]).toMatchObject({
    outcome: "deny",
    reason: "target_changed",
    pid: 4001,
    process_start: OLD_START,
  });
}

/** The new process behind the same pid is a stranger: it needs its own dialog. */
export async function newInstanceNeedsItsOwnDialog(
  h: ServerHarness,
  desk: Desk,
  before: number,
): Promise<void> {
  expect((await h.call("click_window", { hwnd: 1001, ...IN_STAGE })).code).toBe("consent_required");
  expect(await h.ok("request_access", { hwnd: 1001 })).toMatchObject({
    decision: "approved",
    source: "dialog",
  });
  const prompts = desk.prompts();
  expect(prompts).toHaveLength(before + 1);
  expect(prompts.at(-1)).toMatchObject({ pid: 4001, process_start: new Date(RESTART).toISOString() });
}
