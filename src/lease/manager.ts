import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { isUiError } from "../shared/errors.js";
import { sleep } from "../shared/sleep.js";
import { brokerEnv, inheritedNodeOptions } from "./brokerNodeOptions.js";
import { LeaseClient } from "./client.js";
import { leaseDialogTimeoutMs } from "./dialog.js";
import type { Env } from "./endpoint.js";
import { LEASE_CAPABILITIES, LEASE_HOURS, type LeaseStatus, LeaseStatusSchema } from "./protocol.js";
import { resolveScope } from "./scope.js";

/**
 * `uiinspect-mcp manager lease activate --hours N | extend --hours N | status | revoke`.
 * The manager never decides anything itself: activation and extension are approved (or not) by
 * a person at the dialog the broker shows. The manager starts the broker when needed.
 */

export interface ManagerIO {
  out(text: string): void;
  err(text: string): void;
}

export interface ManagerOptions {
  env?: Env;
  io?: ManagerIO;
  /** The command that starts a broker (argv[0] is the executable). Default: this Node + brokerMain.js. */
  brokerCommand?: string[];
  /** How long to wait for a freshly started broker to answer. */
  brokerStartTimeoutMs?: number;
}

/** Exit codes: 0 done, 1 denied / timed out / nothing to extend, 2 usage, 3 broker unavailable. */
export const MANAGER_EXIT = { ok: 0, refused: 1, usage: 2, unavailable: 3 } as const;

const USAGE = [
  "usage: uiinspect-mcp manager lease activate --hours N",
  "       uiinspect-mcp manager lease extend --hours N",
  "       uiinspect-mcp manager lease status",
  "       uiinspect-mcp manager lease revoke",
  `N is exactly one of ${LEASE_HOURS.join(", ")}.`,
].join("\n");

// `uiinspect-mcp manager …` is a command for a person, never the MCP server: its stdout
// carries no MCP frames, so writing the answer there is right.
const defaultIO: ManagerIO = {
  out: (t) => process.stdout.write(t),
  err: (t) => process.stderr.write(t),
};

function parseHours(args: string[]): number | "missing" | "invalid" {
  let raw: string | undefined;
  for (const [i, a] of args.entries()) {
    if (a === "--hours") raw = args[i + 1];
    else if (a.startsWith("--hours=")) raw = a.slice("--hours=".length);
  }
  if (raw === undefined) return "missing";
  if (!/^\d{1,2}$/.test(raw)) return "invalid";
  const n = Number(raw);
  return (LEASE_HOURS as readonly number[]).includes(n) ? n : "invalid";
}

function describe(s: LeaseStatus): string {
  if (!s.active || !s.expires_at) return "No unattended lease is active.\n";
  return `Unattended lease active until ${s.expires_at} for: ${s.capabilities.join(", ")}.\n`;
}

/**
 * How long one manager request may take. It includes starting the connection (on Windows a link
 * worker, ~2 s under load), so it is generous: a running broker answers in milliseconds and a
 * missing one fails as soon as the connection is tried; only a broker that accepts and never
 * answers (or a pipe whose every instance is busy) costs the whole wait.
 */
const MANAGER_REQUEST_MS = 15_000;

async function answers(probe: LeaseClient, timeoutMs: number): Promise<boolean> {
  try {
    await probe.statusDetail(timeoutMs);
    return true;
  } catch {
    return false;
  }
}

async function ensureBroker(env: Env, opts: ManagerOptions): Promise<boolean> {
  // One client for every probe: its connection groundwork (the Windows link worker) starts once.
  const probe = new LeaseClient({ env, timeoutMs: MANAGER_REQUEST_MS });
  probe.prepare();
  try {
    if (await answers(probe, MANAGER_REQUEST_MS)) return true;
    const [program, ...programArgs] = opts.brokerCommand ?? [
      process.execPath,
      ...inheritedNodeOptions(process.execArgv),
      fileURLToPath(new URL("./brokerMain.js", import.meta.url)),
    ];
    // An empty command starts nothing: the broker then does not answer, as when it fails to start.
    if (program === undefined) return false;
    const child = spawn(program, programArgs, {
      detached: true,
      stdio: "ignore",
      env: brokerEnv(env) as NodeJS.ProcessEnv,
      windowsHide: true,
    });
    child.on("error", () => {});
    child.unref();
    const until = Date.now() + (opts.brokerStartTimeoutMs ?? 15_000);
    while (Date.now() < until) {
      await sleep(100);
      // Within the start wait: a broker that accepts but never answers cannot stretch it.
      const left = until - Date.now();
      if (left > 0 && (await answers(probe, Math.min(MANAGER_REQUEST_MS, left)))) return true;
    }
    return false;
  } finally {
    await probe.close();
  }
}

type Verb = "activate" | "extend" | "status" | "revoke";

/** The verb and its hours from argv, or null after printing the usage. */
function parseManagerArgs(argv: string[], io: ManagerIO): { verb: Verb; hours: number } | null {
  const [noun, verb, ...rest] = argv;
  if (noun !== "lease" || !verb || !["activate", "extend", "status", "revoke"].includes(verb)) {
    io.err(`${USAGE}\n`);
    return null;
  }
  const needsHours = verb === "activate" || verb === "extend";
  let hours = 0;
  if (needsHours) {
    const h = parseHours(rest);
    if (typeof h !== "number") {
      io.err(
        `${h === "missing" ? "--hours is required" : "--hours is not allowed"}: choose exactly one of ${LEASE_HOURS.join(", ")}.\n`,
      );
      return null;
    }
    hours = h;
  }
  const unknown = rest.filter(
    (a, i) => !(a === "--hours" || a.startsWith("--hours=") || rest[i - 1] === "--hours"),
  );
  if (unknown.length > 0 || (!needsHours && rest.length > 0)) {
    io.err(`${USAGE}\n`);
    return null;
  }
  return { verb: verb as Verb, hours };
}

/** status and revoke: one request to a broker that may not be running. */
async function statusOrRevoke(verb: "status" | "revoke", env: Env, io: ManagerIO): Promise<number> {
  const c = new LeaseClient({ env, timeoutMs: MANAGER_REQUEST_MS });
  try {
    if (verb === "status") {
      io.out(describe(await c.statusDetail()));
    } else {
      const revoked = await c.revoke();
      io.out(revoked ? "The unattended lease was revoked.\n" : "No unattended lease was active.\n");
    }
    return MANAGER_EXIT.ok;
  } catch (e) {
    if (isUiError(e) && e.code === "broker_unavailable") {
      io.out("No lease broker is running in this sign-in session: no unattended lease is active.\n");
      return MANAGER_EXIT.ok;
    }
    io.err(`The broker refused: ${isUiError(e) ? e.code : "error"}\n`);
    return MANAGER_EXIT.unavailable;
  } finally {
    await c.close();
  }
}

/** activate and extend: the broker's dialog decides; every refusal says what happened. */
async function activateOrExtend(
  verb: "activate" | "extend",
  hours: number,
  env: Env,
  io: ManagerIO,
): Promise<number> {
  const c = new LeaseClient({ env });
  try {
    io.out("Waiting for your answer in the lease dialog (Deny is the default)...\n");
    const result =
      verb === "activate"
        ? await c.request(
            { op: "activate", hours, capabilities: [...LEASE_CAPABILITIES] },
            leaseDialogTimeoutMs(env) + 5000,
          )
        : await c.request({ op: "extend", hours }, leaseDialogTimeoutMs(env) + 5000);
    const s = LeaseStatusSchema.safeParse(result);
    if (!s.success) {
      io.err("The broker answered something unexpected.\n");
      return MANAGER_EXIT.unavailable;
    }
    io.out(describe(s.data));
    return MANAGER_EXIT.ok;
  } catch (e) {
    const code = isUiError(e) ? e.code : "broker_unavailable";
    if (code === "consent_denied") io.err("Denied: nothing was changed.\n");
    else if (code === "consent_timeout") io.err("The dialog timed out: nothing was changed.\n");
    else if (code === "lease_revoked") io.err("No unattended lease is active; use activate.\n");
    else if (code === "rate_limited") io.err("Another lease dialog is already open.\n");
    else {
      io.err(`The lease broker is unavailable (${code}).\n`);
      return MANAGER_EXIT.unavailable;
    }
    return MANAGER_EXIT.refused;
  } finally {
    await c.close();
  }
}

export async function runManager(argv: string[], opts: ManagerOptions = {}): Promise<number> {
  const env = opts.env ?? process.env;
  const io = opts.io ?? defaultIO;
  const args = parseManagerArgs(argv, io);
  if (!args) return MANAGER_EXIT.usage;
  try {
    await resolveScope(env);
  } catch (e) {
    io.err(`Cannot reach a lease broker: ${isUiError(e) ? e.message : "unknown reason"}\n`);
    return MANAGER_EXIT.unavailable;
  }
  const { verb, hours } = args;
  if (verb === "status" || verb === "revoke") return statusOrRevoke(verb, env, io);
  if (verb === "activate" && !(await ensureBroker(env, opts))) {
    io.err("The lease broker could not be started.\n");
    return MANAGER_EXIT.unavailable;
  }
  return activateOrExtend(verb, hours, env, io);
}
