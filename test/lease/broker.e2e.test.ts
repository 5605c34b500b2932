import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  answerDialog,
  auditEvents,
  buildLease,
  ClientProc,
  copyForOtherUid,
  FIXTURES,
  instanceOf,
  manager,
  OUT,
  run,
  type Sandbox,
  sandbox,
  sleep,
  socketPath,
  startXvfb,
  waitFor,
  type Xvfb,
} from "./helpers.js";

// A real broker process, the real manager, the real zenity dialog answered with xdotool under Xvfb.
const OTHER_UID = 4242;

let x: Xvfb;
let sb: Sandbox;
let target: ChildProcess;
let targetInstance: ReturnType<typeof instanceOf>;
const clients: ClientProc[] = [];

function brokerPid(): number {
  const lines = auditEvents(sb.auditPath).filter((e) => e.event === "broker_start");
  return Number(lines[lines.length - 1]!.broker_pid);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

beforeAll(async () => {
  buildLease();
  x = await startXvfb();
  sb = sandbox(x.display);
  target = spawn("sleep", ["600"], { stdio: "ignore" });
  await sleep(100);
  targetInstance = instanceOf(target.pid!, `${x.display}:${process.getuid!()}`);
}, 120_000);

afterAll(() => {
  for (const c of clients) c.stop();
  target?.kill("SIGKILL");
  try {
    const pid = brokerPid();
    if (isAlive(pid)) process.kill(pid, "SIGTERM");
  } catch {
    // No broker was started.
  }
  x?.stop();
  if (sb) rmSync(sb.root, { recursive: true, force: true });
});

describe("lease manager and broker (real processes, Linux)", () => {
  it("refuses hours outside 1, 2, 5, 8, 12, 24 and lists them, starting nothing", async () => {
    for (const bad of ["3", "0", "25", "1.5", "-1", "abc"]) {
      const r = await manager(["lease", "activate", "--hours", bad], sb.env);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("1, 2, 5, 8, 12, 24");
    }
    const r = await manager(["lease", "extend"], sb.env);
    expect(r.code).toBe(2);
    expect(auditEvents(sb.auditPath)).toEqual([]);
  });

  it("status without a broker says no lease is active", async () => {
    const r = await manager(["lease", "status"], sb.env);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("no unattended lease is active");
  });

  it("starts the broker and a denied dialog (Enter = the default Deny) activates nothing", async () => {
    const pending = manager(["lease", "activate", "--hours", "1"], sb.env);
    await answerDialog(x.display, "deny");
    const r = await pending;
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain("Denied");
    const s = await manager(["lease", "status"], sb.env);
    expect(s.stdout).toContain("No unattended lease is active.");
    const events = auditEvents(sb.auditPath).map((e) => e.event);
    expect(events).toEqual(["broker_start", "activate_denied"]);
  });

  it("clients are refused before activation (lease_revoked)", async () => {
    const c = new ClientProc(sb.env);
    clients.push(c);
    expect(await c.next()).toEqual({ ready: true });
    expect(await c.ask({ capability: "inspect", instance: targetInstance })).toEqual({
      ok: false,
      code: "lease_revoked",
    });
  });

  it("an approved dialog activates the lease; several client processes validate concurrently", async () => {
    const pending = manager(["lease", "activate", "--hours", "2"], sb.env);
    await answerDialog(x.display, "approve");
    const r = await pending;
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("Unattended lease active until");
    for (let i = clients.length; i < 4; i++) {
      const c = new ClientProc(sb.env);
      clients.push(c);
      expect(await c.next()).toEqual({ ready: true });
    }
    const answers = await Promise.all(
      clients.flatMap((c) =>
        (["inspect", "interact", "key", "observe", "click"] as const).map((capability) =>
          c.ask({ capability, instance: targetInstance }),
        ),
      ),
    );
    expect(answers).toHaveLength(20);
    for (const a of answers) expect(a).toEqual({ ok: true });
    const st = await clients[0]!.ask({ op: "status" });
    expect(st).toMatchObject({ ok: true, status: { reachable: true, active: true } });
  });

  it("a reused PID (other start time), another executable, another session or a dead process is refused", async () => {
    const c = clients[0]!;
    const laterStart = new Date(Date.parse(targetInstance.start_time) + 10).toISOString();
    expect(
      await c.ask({ capability: "inspect", instance: { ...targetInstance, start_time: laterStart } }),
    ).toEqual({
      ok: false,
      code: "target_changed",
    });
    expect(
      await c.ask({ capability: "inspect", instance: { ...targetInstance, exe_path: "/usr/bin/true" } }),
    ).toEqual({ ok: false, code: "target_changed" });
    // Another display of the same user (ours is whichever Xvfb picked).
    const otherSession = `:${Number(x.display.slice(1)) + 1}:${process.getuid!()}`;
    expect(
      await c.ask({ capability: "inspect", instance: { ...targetInstance, session: otherSession } }),
    ).toEqual({
      ok: false,
      code: "target_changed",
    });
    const gone = spawn("sleep", ["60"], { stdio: "ignore" });
    await sleep(100);
    const goneInstance = instanceOf(gone.pid!, targetInstance.session);
    expect(await c.ask({ capability: "key", instance: goneInstance })).toEqual({ ok: true });
    gone.kill("SIGKILL");
    await new Promise((r) => gone.once("exit", r));
    await sleep(100);
    expect(await c.ask({ capability: "key", instance: goneInstance })).toEqual({
      ok: false,
      code: "target_gone",
    });
    const denials = auditEvents(sb.auditPath).filter((e) => e.event === "validation_denied");
    expect(denials.map((d) => d.reason)).toEqual(
      expect.arrayContaining(["lease_revoked", "target_changed", "target_gone"]),
    );
  });

  it("a second broker for the same scope refuses to start with a clear message", async () => {
    const r = await run([join(OUT, "lease", "brokerMain.js")], sb.env, 20_000);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain("already running");
    // The first one still serves.
    expect(await clients[0]!.ask({ capability: "inspect", instance: targetInstance })).toEqual({ ok: true });
  });

  // setpriv to another uid (and keeping CAP_DAC_OVERRIDE) needs root, as in CI.
  it.skipIf(process.getuid?.() !== 0)(
    "refuses a connection from another uid (SO_PEERCRED) and the client's folder check refuses too",
    async () => {
      // With CAP_DAC_OVERRIDE the other uid gets past the 0700 folder: only the peer check stops it.
      const r = await new Promise<string>((res) => {
        const child = spawn(
          "setpriv",
          [
            `--reuid=${OTHER_UID}`,
            `--regid=${OTHER_UID}`,
            "--clear-groups",
            "--inh-caps=+dac_override",
            "--ambient-caps=+dac_override",
            process.execPath,
            join(FIXTURES, "leaseClient.mjs"),
            "raw",
            socketPath(sb),
          ],
          { env: sb.env, stdio: ["ignore", "pipe", "inherit"] },
        );
        let out = "";
        child.stdout.on("data", (d: Buffer) => {
          out += d.toString();
        });
        child.on("close", () => res(out.trim()));
      });
      expect(JSON.parse(r)).toMatchObject({ result: "closed" });
      const refused = auditEvents(sb.auditPath).filter((e) => e.event === "peer_refused");
      expect(refused.at(-1)).toMatchObject({ reason: "other_user", peer_uid: OTHER_UID });
      // The same uid through the same raw path is answered (the check is what refused above).
      const same = await run([join(FIXTURES, "leaseClient.mjs"), "raw"], sb.env);
      expect(JSON.parse(same.stdout.trim())).toMatchObject({ result: "answered" });
      // Without the capability the 0700 runtime folder already stops the other uid. What it
      // runs is a world-readable copy: without the capability it could not read the checkout
      // when that sits in an owner-only folder.
      const copy = copyForOtherUid();
      try {
        const plain = new ClientProc(
          { ...sb.env, LEASE_OUT: copy.out },
          ["setpriv", `--reuid=${OTHER_UID}`, `--regid=${OTHER_UID}`, "--clear-groups"],
          copy.fixtures,
        );
        expect(await plain.next()).toEqual({ ready: true });
        expect(await plain.ask({ capability: "inspect", instance: targetInstance })).toEqual({
          ok: false,
          code: "broker_unavailable",
        });
        plain.stop();
      } finally {
        rmSync(copy.dir, { recursive: true, force: true });
      }
    },
  );

  it("revoke: the next validation of every client fails closed", async () => {
    const r = await manager(["lease", "revoke"], sb.env);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("revoked");
    const answers = await Promise.all(
      clients.map((c) => c.ask({ capability: "inspect", instance: targetInstance })),
    );
    for (const a of answers) expect(a).toEqual({ ok: false, code: "lease_revoked" });
  });

  it("extend needs an active lease; a re-activated lease can be extended through the dialog", async () => {
    const none = await manager(["lease", "extend", "--hours", "1"], sb.env);
    expect(none.code).toBe(1);
    const act = manager(["lease", "activate", "--hours", "1"], sb.env);
    await answerDialog(x.display, "approve");
    expect((await act).code).toBe(0);
    const before = auditEvents(sb.auditPath)
      .filter((e) => e.event === "activate")
      .at(-1)!.expires_at as string;
    const ext = manager(["lease", "extend", "--hours", "5"], sb.env);
    await answerDialog(x.display, "approve");
    const e = await ext;
    expect(e.code).toBe(0);
    const after = auditEvents(sb.auditPath)
      .filter((ev) => ev.event === "extend")
      .at(-1)!.expires_at as string;
    expect(Date.parse(after) - Date.parse(before)).toBe(5 * 3_600_000);
  });

  it("a hung or killed broker: every client gets broker_unavailable and nothing survives a restart", async () => {
    const pid = brokerPid();
    // A broker that hangs: the client's deadline fails the request closed.
    process.kill(pid, "SIGSTOP");
    expect(await clients[0]!.ask({ capability: "inspect", instance: targetInstance })).toEqual({
      ok: false,
      code: "broker_unavailable",
    });
    process.kill(pid, "SIGKILL");
    await sleep(200);
    const answers = await Promise.all(
      clients.map((c) => c.ask({ capability: "inspect", instance: targetInstance })),
    );
    for (const a of answers) expect(a).toEqual({ ok: false, code: "broker_unavailable" });
    const st = await clients[0]!.ask({ op: "status" });
    expect(st).toMatchObject({ ok: true, status: { reachable: false, active: false } });
    // A new broker (started here the way the manager does) holds no lease: nothing was stored.
    const starts = auditEvents(sb.auditPath).filter((e) => e.event === "broker_start").length;
    const b = spawn(process.execPath, [join(OUT, "lease", "brokerMain.js")], {
      env: sb.env,
      stdio: "ignore",
    });
    await waitFor(
      () => auditEvents(sb.auditPath).filter((e) => e.event === "broker_start").length > starts,
      20_000,
      "the new broker",
    );
    const s = await manager(["lease", "status"], sb.env);
    expect(s.stdout).toContain("No unattended lease is active.");
    expect(await clients[1]!.ask({ capability: "inspect", instance: targetInstance })).toEqual({
      ok: false,
      code: "lease_revoked",
    });
    b.kill("SIGTERM");
    await new Promise((r) => b.once("exit", r));
    expect(auditEvents(sb.auditPath).at(-1)).toMatchObject({ event: "broker_stop" });
  });

  it("the audit file is 0600 JSONL with lifecycle events and no UI content", () => {
    expect(statSync(sb.auditPath).mode & 0o777).toBe(0o600);
    const events = auditEvents(sb.auditPath).map((e) => e.event);
    for (const name of [
      "broker_start",
      "activate_denied",
      "activate",
      "validation_denied",
      "revoke",
      "extend",
    ]) {
      expect(events).toContain(name);
    }
    const text = readFileSync(sb.auditPath, "utf8");
    expect(text).not.toContain("/usr/bin/sleep");
    expect(text).not.toContain(sb.root);
  });

  it("a broker refuses a runtime folder that is not 0700", async () => {
    const bad = sandbox(x.display);
    chmodSync(bad.env.XDG_RUNTIME_DIR!, 0o755);
    const r = await run([join(OUT, "lease", "brokerMain.js")], bad.env, 20_000);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("0700");
    const m = await manager(["lease", "status"], bad.env);
    expect(m.code).toBe(3);
    rmSync(bad.root, { recursive: true, force: true });
  });
  it("a broker refuses to run with the Node inspector open (whoever attaches would hold the lease)", async () => {
    const other = sandbox(x.display);
    const r = await run(["--inspect=127.0.0.1:0", join(OUT, "lease", "brokerMain.js")], other.env, 20_000);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("inspector");
    expect(auditEvents(other.auditPath)).toEqual([]);
    rmSync(other.root, { recursive: true, force: true });
  });
});
