// The Windows lease broker under Wine (src/lease/native/windows.ts): the built broker
// (brokerMain.js) runs as its own Windows node.exe process with its audit in a temp folder.
// Checked: the named mutex refuses a second broker for the same scope (exit 3); a LeaseClient
// over the named pipe gets status (reachable, no lease) and validate → lease_revoked for a live
// process instance; the broker's identity resolver agrees with the backend's; after the broker
// is killed the client fails closed and a new broker can take the scope again.

import { spawn } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import koffi from "koffi";
import { serveTransport } from "./e2e.mjs";

const loader = new URL("./loader.mjs", import.meta.url).href;
// Deadline of the test's LeaseClients where an answer is expected: it includes starting the
// client's link worker, which alone takes seconds under Wine on a loaded machine.
const LINK_MS = 15000;
// Waits for Wine processes to come up (a broker, its MessageBox): a loaded 2-core machine takes
// tens of seconds; they are waits, not timing assertions.
const WINE_UP_MS = 60000;
const brokerEntry = fileURLToPath(new URL("./leaseBroker.mjs", import.meta.url));

// The test's own bindings: our user SID and session, read from our token and ProcessIdToSessionId.
const k32 = koffi.load("kernel32.dll");
const adv = koffi.load("advapi32.dll");
const GetCurrentProcess = k32.func("void * __stdcall GetCurrentProcess()");
const ProcessIdToSessionId = k32.func("int __stdcall ProcessIdToSessionId(uint32_t pid, _Out_ uint32_t *s)");
const LocalFree = k32.func("void * __stdcall LocalFree(void *p)");
const OpenProcessToken = adv.func("int __stdcall OpenProcessToken(void *h, uint32_t a, _Out_ void **t)");
const GetTokenInformation = adv.func(
  "int __stdcall GetTokenInformation(void *t, int c, _Out_ uint8_t *b, uint32_t n, _Out_ uint32_t *r)",
);
const CreateNamedPipeW = k32.func(
  "void * __stdcall CreateNamedPipeW(str16 n, uint32_t om, uint32_t pm, uint32_t mi, uint32_t o, uint32_t i, uint32_t t, void *sa)",
);
const CloseHandle = k32.func("int __stdcall CloseHandle(void *h)");
const ConvertSidToStringSidW = adv.func("int __stdcall ConvertSidToStringSidW(void *sid, _Out_ void **s)");
const ConvertSddl = adv.func(
  "int __stdcall ConvertStringSecurityDescriptorToSecurityDescriptorW(str16 sddl, uint32_t rev, _Out_ void **sd, void *size)",
);
const SA = koffi.struct("lease_test_SA", { nLength: "uint32_t", sd: "void *", inherit: "int" });
const CreatePipeWithSa = k32.func(
  "void * __stdcall CreateNamedPipeW(str16 n, uint32_t om, uint32_t pm, uint32_t mi, uint32_t o, uint32_t i, uint32_t t, lease_test_SA *sa)",
);

/** A squatter's pipe instance owned by another principal (here BUILTIN\\Administrators), open to all. */
function foreignOwnedPipe(name) {
  const sd = [null];
  if (!ConvertSddl("O:BAD:(A;;GA;;;WD)", 1, sd, null)) return null;
  try {
    const h = CreatePipeWithSa(name, 0x3, 0, 1, 4096, 4096, 0, {
      nLength: koffi.sizeof(SA),
      sd: sd[0],
      inherit: 0,
    });
    return h !== null && h !== -1n && h !== 0xffffffffffffffffn ? h : null;
  } finally {
    LocalFree(sd[0]);
  }
}

function nativeIdentity() {
  const tok = [null];
  if (!OpenProcessToken(GetCurrentProcess(), 0x8, tok)) throw new Error("OpenProcessToken");
  const buf = Buffer.alloc(512);
  if (!GetTokenInformation(tok[0], 1, buf, 512, [0])) throw new Error("GetTokenInformation");
  const sidPtr = koffi.decode(buf, "void *");
  const str = [null];
  if (!ConvertSidToStringSidW(sidPtr, str)) throw new Error("ConvertSidToStringSidW");
  const sid = koffi.decode(str[0], "char16_t", -1);
  LocalFree(str[0]);
  const sess = [0];
  if (!ProcessIdToSessionId(process.pid, sess)) throw new Error("ProcessIdToSessionId");
  return { sid, session: String(sess[0]) };
}

export function registerLease({ dist, test, assert, eq, waitFor, sleep, h }) {
  const imp = (p) => import(new URL(p, dist).href);

  /** scope null: the broker derives its scope itself (runBroker's default, as on real Windows). */
  function startBrokerProcess(dir, name, scope) {
    const errPath = join(dir, `${name}.stderr`);
    const fd = openSync(errPath, "w");
    // windowsHide: false — a console-less node.exe aborts in libuv under Wine 8 (see e2e.mjs).
    const child = spawn(process.execPath, ["--import", loader, brokerEntry, dist.href], {
      env: {
        ...process.env,
        LOCALAPPDATA: dir,
        UIINSPECT_LEASE_DIALOG: "messagebox",
        UIINSPECT_TEST_LEASE_SCOPE: scope ? JSON.stringify(scope) : "",
      },
      stdio: ["ignore", "ignore", fd],
      windowsHide: false,
    });
    closeSync(fd);
    const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
    return { child, exited, stderr: () => readFileSync(errPath, "utf8") };
  }

  // As resolveWindowsScope builds it, from the natively read SID and session (`tag` varies the hash).
  async function windowsScope(dir, tag) {
    const { scopeHash, windowsAuditPath } = await imp("lease/endpoint.js");
    const { sid, session } = nativeIdentity();
    const hash = scopeHash("win32", sid, `ts:${session}${tag}`);
    return {
      platform: "win32",
      user: sid,
      session_id: `ts:${session}`,
      instance_session: session,
      hash,
      endpoint: `\\\\.\\pipe\\uiinspect-lease-${hash}`,
      marker: `Local\\uiinspect-lease-${hash}`,
      runtime_dir: null,
      audit_path: windowsAuditPath({ LOCALAPPDATA: dir }),
    };
  }

  function auditEvents(dir) {
    try {
      return readFileSync(join(dir, "UIInspect.MCP", "audit", "unattended-approval.jsonl"), "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l));
    } catch {
      return [];
    }
  }

  /** `dist/cli.js …` in its own Windows node.exe; its exit code and what it printed. */
  function runCli(args, env) {
    return new Promise((resolve) => {
      const child = spawn(
        process.execPath,
        ["--import", loader, fileURLToPath(new URL("cli.js", dist)), ...args],
        {
          env,
          stdio: ["ignore", "pipe", "pipe"],
          // A console-less node.exe aborts in libuv under Wine 8 (see e2e.mjs).
          windowsHide: false,
        },
      );
      let out = "";
      child.stdout.on("data", (d) => {
        out += d.toString();
      });
      child.stderr.on("data", (d) => {
        out += d.toString();
      });
      const timer = setTimeout(() => child.kill(), 30000);
      child.on("close", (code) => {
        clearTimeout(timer);
        resolve({ code, out });
      });
    });
  }

  /** The broker's visible lease MessageBox, or null after 15 s. */
  const findBox = (brokerPid) =>
    waitFor(
      async () => (await h.listWindows()).find((w) => w.pid === brokerPid && w.visible) ?? null,
      WINE_UP_MS,
    );

  /**
   * Answers the broker's MessageBox for `pending` with act(box). Under Wine an input event sent
   * right as the box appears is sometimes lost: the same answer is repeated (at most 4 times)
   * until the request settles.
   */
  async function answerBox(brokerPid, pending, act, detail = () => "") {
    const box = await findBox(brokerPid);
    assert(box, `lease MessageBox shown by the broker ${detail()}`);
    const settled = pending.then(
      (v) => ({ v }),
      (e) => ({ e }),
    );
    for (let i = 0; i < 4; i++) {
      await sleep(300);
      try {
        await act(box);
      } catch (e) {
        // A repeat may find the box already gone (answered, the reply still on its way).
        if (i === 0) throw e;
      }
      const r = await Promise.race([settled, sleep(2500).then(() => null)]);
      if (r) {
        if ("e" in r) throw r.e;
        return r.v;
      }
    }
    const r = await settled;
    if ("e" in r) throw r.e;
    return r.v;
  }

  test("lease broker (named mutex + named pipe): one per scope, status, validate without a lease", async () => {
    const { LeaseClient } = await imp("lease/client.js");
    const { resolveInstance } = await imp("os/win32/identity.js");
    const dir = mkdtempSync(join(tmpdir(), "uiinspect-lease-"));
    const scope = await windowsScope(dir, "");
    assert(/^S-1-[0-9-]+$/.test(scope.user), "scope user is a SID");
    assert(/^\d+$/.test(scope.instance_session), "scope session is a number");
    const a = startBrokerProcess(dir, "a", scope);
    let client = null;
    try {
      const up = await waitFor(
        () => auditEvents(dir).some((e) => e.event === "broker_start" && e.broker_pid === a.child.pid),
        WINE_UP_MS,
      );
      assert(up, `broker A did not start: ${a.stderr().slice(-400)}`);

      const b = startBrokerProcess(dir, "b", scope);
      const codeB = await Promise.race([b.exited, sleep(WINE_UP_MS).then(() => "still running")]);
      if (codeB === "still running") b.child.kill();
      eq(codeB, 3, `second broker for the same scope exits 3 (${b.stderr().slice(-300)})`);

      client = new LeaseClient({ scope, timeoutMs: LINK_MS });
      const st = await client.status();
      eq(st, { reachable: true, active: false, expires_at: null, capabilities: [] }, "status over the pipe");
      const detail = await client.statusDetail();
      eq(detail.broker_pid, a.child.pid, "the broker that answers is broker A");

      const me = resolveInstance(process.pid);
      assert(me, "own instance resolves");
      eq(me.session, scope.instance_session, "backend and lease scope agree on the session");
      let code = null;
      try {
        await client.validate("inspect", me);
      } catch (e) {
        code = e?.code ?? String(e);
      }
      eq(code, "lease_revoked", "validate without a lease");
      const denied = await waitFor(
        () => auditEvents(dir).find((e) => e.event === "validation_denied" && e.pid === process.pid),
        5000,
      );
      assert(denied, "validation_denied audited");
      eq(denied.reason, "lease_revoked", "audited reason");

      // The broker's own resolver (GetProcessTimes / QueryFullProcessImageNameW /
      // ProcessIdToSessionId) must describe a live process exactly as the backend does.
      const { windowsInstanceResolver } = await imp("lease/native/windows.js");
      const live = await windowsInstanceResolver(scope.instance_session)(process.pid);
      eq(live, me, "broker resolver equals the backend's instance");
      eq(await windowsInstanceResolver(scope.instance_session)(0x7ffffff0), null, "a missing pid is null");

      // Activation: the broker's own MessageBox (Yes/No, No the default).
      const codeOf = (p) =>
        p.then(
          () => "resolved",
          (e) => e?.code ?? String(e),
        );
      const caps = ["inspect", "interact"];
      const denied1 = await answerBox(
        a.child.pid,
        codeOf(client.request({ op: "activate", hours: 1, capabilities: caps }, 30000)),
        (box) => {
          h.facts.lease_dialog_buttons = h.buttons(box).map((b) => b.text);
          return h.pressEnter(box);
        },
        () => `(broker stderr: ${a.stderr().slice(-400)})`,
      );
      eq(denied1, "consent_denied", "Enter picks the default (No)");
      const act = await answerBox(
        a.child.pid,
        client.request({ op: "activate", hours: 1, capabilities: caps }, 30000),
        (box) => h.clickButton(box, /yes/i),
      );
      eq([act.active, act.capabilities], [true, caps], "activated by a click on Yes");
      eq((await client.status()).active, true, "status: active");
      eq(await client.validate("inspect", me), "ok", "validate with the lease");
      code = null;
      try {
        await client.validate("click", me);
      } catch (e) {
        code = e?.code ?? String(e);
      }
      eq(code, "action_not_allowed", "a capability outside the lease");
      eq(await client.revoke(), true, "revoke");
      code = null;
      try {
        await client.validate("inspect", me);
      } catch (e) {
        code = e?.code ?? String(e);
      }
      eq(code, "lease_revoked", "validate after revoke");

      // The request's deadline closes the MessageBox (PostMessageW IDNO) and fails closed. The
      // deadline leaves a loaded machine time to show the box before it is closed again.
      const pending = codeOf(client.request({ op: "activate", hours: 1, capabilities: caps }, 8000));
      assert(await findBox(a.child.pid), "lease MessageBox shown for the short request");
      eq(await pending, "consent_timeout", "deadline: consent_timeout");
      const closed = await waitFor(
        async () => !(await h.listWindows()).some((w) => w.pid === a.child.pid && w.visible),
        5000,
      );
      assert(closed, "the MessageBox was closed at the deadline");
      eq((await client.status()).active, false, "still no lease");
      h.facts.lease_audit_events = auditEvents(dir).map((e) => e.event);

      a.child.kill();
      await a.exited;
      client.close();
      client = new LeaseClient({ scope, timeoutMs: 3000 });
      eq((await client.status()).reachable, false, "no broker: unreachable");
      code = null;
      try {
        await client.validate("inspect", me);
      } catch (e) {
        code = e?.code ?? String(e);
      }
      eq(code, "broker_unavailable", "no broker: validate fails closed");
      client.close();
      client = null;

      // The killed broker's mutex is abandoned: a new broker takes the scope.
      const c = startBrokerProcess(dir, "c", scope);
      try {
        const upC = await waitFor(
          () => auditEvents(dir).some((e) => e.event === "broker_start" && e.broker_pid === c.child.pid),
          WINE_UP_MS,
        );
        assert(upC, `broker C did not start after A died: ${c.stderr().slice(-400)}`);
        client = new LeaseClient({ scope, timeoutMs: LINK_MS });
        eq((await client.statusDetail()).broker_pid, c.child.pid, "broker C answers");
        // Fill every connection slot (62), let them all go, and the broker must listen again.
        // close() resolves once the link worker has closed its pipe handle.
        await client.close();
        const socks = [];
        for (let i = 0; i < 62; i++) {
          const sock = createConnection(scope.endpoint);
          sock.on("error", () => {});
          await new Promise((resolve) => {
            sock.once("connect", resolve);
            sock.once("error", resolve);
          });
          socks.push(sock);
        }
        eq(socks.filter((x) => !x.destroyed).length, 62, "62 connections accepted at once");
        for (const sock of socks) sock.destroy();
        await sleep(500);
        client = new LeaseClient({ scope, timeoutMs: LINK_MS });
        eq((await client.status()).reachable, true, "the broker listens again after a full house");
      } finally {
        c.child.kill();
        await c.exited;
      }
    } finally {
      client?.close();
      if (a.child.exitCode === null) a.child.kill();
      await Promise.race([a.exited, sleep(5000)]);
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300000);

  test("lease broker: a squatted pipe name refuses to start; stop() in process releases mutex and pipe", async () => {
    const { LeaseClient } = await imp("lease/client.js");
    const { startBroker } = await imp("lease/broker.js");
    const dir = mkdtempSync(join(tmpdir(), "uiinspect-lease-"));
    try {
      const squatted = await windowsScope(dir, ":squat");
      // PIPE_ACCESS_DUPLEX, byte mode, ONE instance: the broker's CreateNamedPipeW fails and it
      // must refuse to start. (Measured: Wine 8 ignores FILE_FLAG_FIRST_PIPE_INSTANCE; with an
      // unlimited-instance squatter the broker became its second instance. Windows refuses.)
      const pipe = CreateNamedPipeW(squatted.endpoint, 0x3, 0, 1, 4096, 4096, 0, null);
      assert(pipe !== null && pipe !== -1n && pipe !== 0xffffffffffffffffn, "squatter pipe created");
      try {
        const s = startBrokerProcess(dir, "squat", squatted);
        const code = await Promise.race([s.exited, sleep(WINE_UP_MS).then(() => "still running")]);
        if (code === "still running") s.child.kill();
        eq(code, 2, `a broker whose pipe name is taken exits 2 (${s.stderr().slice(-300)})`);
        assert(/pipe exists already/.test(s.stderr()), "and says why");
      } finally {
        CloseHandle(pipe);
      }

      // A squatter can also try to pass for the broker. Its pipe is owned by someone else (only
      // the user's own processes can make the user its owner): the client refuses it before
      // writing a byte, whatever process id the pipe reports.
      const foreign = await windowsScope(dir, ":foreign");
      const fake = foreignOwnedPipe(foreign.endpoint);
      assert(fake, "a pipe owned by Administrators could be created");
      try {
        const c = new LeaseClient({ scope: foreign, timeoutMs: LINK_MS });
        let err = null;
        try {
          await c.statusDetail();
        } catch (e) {
          err = e;
        }
        await c.close();
        eq(err?.code, "broker_unavailable", "a pipe owned by another principal is refused");
        assert(
          /not served by this user's broker/.test(err?.message ?? ""),
          `refused by the check: ${err?.message}`,
        );
      } finally {
        CloseHandle(fake);
      }

      const scope = await windowsScope(dir, ":inproc");
      for (let round = 0; round < 2; round++) {
        const broker = await startBroker({
          scope,
          env: { ...process.env, UIINSPECT_LEASE_DIALOG: "messagebox" },
        });
        const client = new LeaseClient({ scope, timeoutMs: LINK_MS });
        try {
          eq(
            (await client.statusDetail()).broker_pid,
            process.pid,
            `round ${round}: in-process broker answers`,
          );
        } finally {
          client.close();
        }
        const stopped = await Promise.race([
          broker.stop().then(() => "stopped"),
          sleep(10000).then(() => "hung"),
        ]);
        eq(stopped, "stopped", `round ${round}: stop() returns`);
        const after = new LeaseClient({ scope, timeoutMs: 2000 });
        eq((await after.status()).reachable, false, `round ${round}: nothing listens after stop()`);
        after.close();
      }
      const events = auditEvents(dir).map((e) => e.event);
      eq(events, ["broker_start", "broker_stop", "broker_start", "broker_stop"], "audited start/stop twice");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 240000);

  test("lease scope from the token: broker, manager-side resolveScope and the pipe link agree; a wrong server is refused; a client that never reads is dropped; the manager CLI sees the lease, activates it through the broker's MessageBox and revokes it; an MCP server with UIINSPECT_LEASE=broker fails closed on revoke and on broker loss", async () => {
    const { LeaseClient } = await imp("lease/client.js");
    const { windowsScope } = await imp("lease/endpoint.js");
    const { resolveScope } = await imp("lease/scope.js");
    const { encodeFrame } = await imp("lease/protocol.js");
    const dir = mkdtempSync(join(tmpdir(), "uiinspect-lease-"));
    const env = { ...process.env, LOCALAPPDATA: dir };
    const me = nativeIdentity();
    const scope = await resolveScope(env);
    eq(scope, windowsScope(me, env), "resolveScope reads the token's SID and ProcessIdToSessionId");
    const broker = startBrokerProcess(dir, "default", null);
    let client = null;
    let transport = null;
    let n = null;
    try {
      const up = await waitFor(
        () => auditEvents(dir).some((e) => e.event === "broker_start" && e.broker_pid === broker.child.pid),
        WINE_UP_MS,
      );
      assert(up, `the broker did not start with its own scope: ${broker.stderr().slice(-400)}`);
      eq(auditEvents(dir)[0].scope, scope.hash.slice(0, 12), "the broker derived the same scope");

      // No scope given: the link worker derives it from its own token, as an MCP server does.
      client = new LeaseClient({ env, timeoutMs: LINK_MS });
      eq((await client.statusDetail()).broker_pid, broker.child.pid, "default-scope client reaches it");

      // The client checks who serves the pipe: another user's or another session's is refused.
      for (const [what, wrong] of [
        ["user", { ...scope, user: "S-1-5-21-1111111111-2222222222-3333333333-1001" }],
        ["session", { ...scope, instance_session: String(Number(scope.instance_session) + 7) }],
      ]) {
        const c = new LeaseClient({ env, scope: wrong, timeoutMs: LINK_MS });
        let code = null;
        try {
          await c.statusDetail();
        } catch (e) {
          code = e?.code ?? String(e);
        }
        c.close();
        eq(code, "broker_unavailable", `a pipe served by another ${what} is refused`);
      }

      // A client that writes thousands of requests and never reads its answers is dropped,
      // and the broker keeps answering everyone else meanwhile.
      const hog = createConnection(scope.endpoint);
      hog.on("error", () => {});
      const hogClosed = new Promise((resolve) => hog.on("close", () => resolve(true)));
      await new Promise((resolve) => {
        hog.once("connect", resolve);
        hog.once("error", resolve);
      });
      hog.pause();
      const frames = [];
      for (let i = 0; i < 5000; i++)
        frames.push(encodeFrame({ v: 1, id: `h${i}`, timeout_ms: 5000, op: "status" }));
      hog.write(Buffer.concat(frames));
      const during = await Promise.race([client.statusDetail(), sleep(8000).then(() => null)]);
      assert(during && during.broker_pid === broker.child.pid, "answered while a client does not read");
      const dropped = await Promise.race([hogClosed, sleep(15000).then(() => false)]);
      hog.destroy();
      assert(dropped, "the non-reading client was dropped");

      // Activate through the broker's MessageBox, then an MCP server in lease mode.
      const caps = ["inspect", "observe", "click"];
      const act = await answerBox(
        broker.child.pid,
        client.request({ op: "activate", hours: 1, capabilities: caps }, 30000),
        (box) => h.clickButton(box, /yes/i),
      );
      eq(act.active, true, "lease active");
      // The manager CLI (its own node.exe) finds the same broker from its own token.
      const st = await runCli(["manager", "lease", "status"], env);
      eq(st.code, 0, `manager lease status exits 0 (${st.out.slice(-300)})`);
      assert(
        /Unattended lease active until \S+ for: inspect, observe, click\./.test(st.out),
        `manager lease status: ${st.out.slice(-300)}`,
      );

      // Figures (no assertion on time): validation round trips through the link worker and the
      // broker, which re-resolves our process instance natively on every call.
      const { resolveInstance } = await imp("os/win32/identity.js");
      const self = resolveInstance(process.pid);
      const pct = (xs, q) => xs.sort((x, y) => x - y)[Math.min(xs.length - 1, Math.floor(q * xs.length))];
      const one = [];
      for (let i = 0; i < 300; i++) {
        const t0 = performance.now();
        await client.validate("inspect", self);
        one.push(performance.now() - t0);
      }
      // 8 requests in flight at once over the one connection (a LeaseClient multiplexes by id);
      // 8 separate clients would each start a link worker, about 1.5 s apiece under Wine.
      const all = [];
      const t8 = performance.now();
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          for (let i = 0; i < 100; i++) {
            const t0 = performance.now();
            await client.validate("inspect", self);
            all.push(performance.now() - t0);
          }
        }),
      );
      const secs8 = (performance.now() - t8) / 1000;
      h.bench.lease_validate_1_client = {
        n: one.length,
        p50_ms: +pct(one, 0.5).toFixed(2),
        p99_ms: +pct(one, 0.99).toFixed(2),
      };
      h.bench.lease_validate_8_in_flight = {
        n: all.length,
        p50_ms: +pct(all, 0.5).toFixed(2),
        p99_ms: +pct(all, 0.99).toFixed(2),
        per_s: Math.round(all.length / secs8),
      };

      n = await h.startNotepad();
      const policyPath = join(dir, "policy.json");
      writeFileSync(
        policyPath,
        JSON.stringify({
          schema_version: 1,
          policy_id: "wine-lease",
          expires_at: "2099-01-01T00:00:00Z",
          application: {
            executable_path: "C:\\windows\\system32\\notepad.exe",
            title_patterns: ["*Notepad*"],
          },
          allowed_actions: ["observe", "click"],
          safe_regions: [{ name: "top_left", rect: [0, 0, 200, 120] }],
        }),
      );
      transport = serveTransport(dist, {
        ...env,
        UIINSPECT_PLATFORM: "",
        UIINSPECT_LEASE: "broker",
        DESKTOP_AUTOMATION_POLICY_FILE: policyPath,
        UIINSPECT_CONSENT_TIMEOUT_MS: "5000",
        UIINSPECT_LOG_LEVEL: "warn",
      });
      const mcp = new Client({ name: "wine-lease", version: "1.0.0" });
      try {
        await mcp.connect(transport);
      } catch (e) {
        throw new Error(`connect failed: ${e?.message}\nserver stderr: ${transport.stderrText}`);
      }
      const call = async (name, args = {}) => {
        const r = await mcp.callTool({ name, arguments: args });
        return r.isError ? { error: r.structuredContent?.error?.code ?? "unknown" } : r.structuredContent;
      };
      // The server starts its link worker at start-up; until it runs, the lease fails closed.
      const health =
        (await waitFor(async () => {
          const hc = await call("health_check");
          return hc.lease?.reachable ? hc : null;
        }, 20000)) ?? (await call("health_check"));
      eq(
        [health.lease?.mode, health.lease?.reachable, health.lease?.active],
        ["broker", true, true],
        "health_check: lease reachable and active",
      );
      const hwnd = String(n.hwnd);
      const acc = await call("request_access", { hwnd });
      eq(
        [acc.decision, acc.source],
        ["approved", "lease"],
        `the lease replaces the dialog (${JSON.stringify(acc)})`,
      );
      const shotArgs = { hwnd, region_name: "top_left" };
      const shot = await mcp.callTool({ name: "screenshot_window", arguments: shotArgs });
      assert(!shot.isError, `screenshot under the lease: ${JSON.stringify(shot.structuredContent)}`);

      const rv = await runCli(["manager", "lease", "revoke"], env);
      eq([rv.code, /was revoked/.test(rv.out)], [0, true], `manager lease revoke (${rv.out.slice(-300)})`);
      eq((await call("screenshot_window", shotArgs)).error, "lease_revoked", "next operation after revoke");

      // Activation again, this time through `manager lease activate` in its own node.exe: it
      // finds the running broker (one probe client, its link worker started once) and waits for
      // the answer in the broker's MessageBox.
      const activating = runCli(["manager", "lease", "activate", "--hours", "1"], env);
      const again = await answerBox(
        broker.child.pid,
        activating,
        (box) => h.clickButton(box, /yes/i),
        () =>
          `(the manager CLI: ${JSON.stringify(
            auditEvents(dir)
              .slice(-2)
              .map((e) => e.event),
          )})`,
      );
      eq(again.code, 0, `manager lease activate exits 0 (${again.out.slice(-300)})`);
      assert(/Unattended lease active until \S+ for: /.test(again.out), `activate: ${again.out.slice(-300)}`);
      eq((await client.statusDetail()).active, true, "lease active again");
      eq((await call("request_access", { hwnd })).source, "lease", "access again under the new lease");
      broker.child.kill();
      await broker.exited;
      eq(
        (await call("screenshot_window", shotArgs)).error,
        "broker_unavailable",
        "next operation after broker loss",
      );
      eq((await call("health_check")).lease?.reachable, false, "health_check: broker unreachable");
      h.facts.lease_e2e_audit_events = auditEvents(dir).map((e) => e.event);
    } finally {
      client?.close();
      await transport?.close().catch(() => {});
      if (n) await h.closeNotepad(n).catch(() => {});
      if (broker.child.exitCode === null) broker.child.kill();
      await Promise.race([broker.exited, sleep(5000)]);
      rmSync(dir, { recursive: true, force: true });
    }
  }, 400000);

  test("manager lease activate with no broker running starts one (detached, its own node.exe), activates through its MessageBox; the broker outlives the manager", async () => {
    const dir = mkdtempSync(join(tmpdir(), "uiinspect-lease-"));
    const env = { ...process.env, LOCALAPPDATA: dir };
    let brokerPid = null;
    try {
      const activating = runCli(["manager", "lease", "activate", "--hours", "1"], env);
      const up = await waitFor(
        () => auditEvents(dir).find((e) => e.event === "broker_start") ?? null,
        WINE_UP_MS,
      );
      assert(up, "the manager started a broker");
      brokerPid = up.broker_pid;
      const r = await answerBox(brokerPid, activating, (box) => h.clickButton(box, /yes/i));
      eq(r.code, 0, `manager lease activate exits 0 (${r.out.slice(-300)})`);
      assert(/Unattended lease active until \S+ for: /.test(r.out), `activate: ${r.out.slice(-300)}`);
      // The manager has exited; the broker it started still holds the lease.
      const st = await runCli(["manager", "lease", "status"], env);
      assert(
        /Unattended lease active until/.test(st.out),
        `status after the manager exited: ${st.out.slice(-300)}`,
      );
      const rv = await runCli(["manager", "lease", "revoke"], env);
      assert(/was revoked/.test(rv.out), `revoke: ${rv.out.slice(-300)}`);
      eq(
        auditEvents(dir).map((e) => e.event),
        ["broker_start", "activate", "revoke"],
        "the broker's audit",
      );
    } finally {
      if (brokerPid !== null) {
        try {
          process.kill(brokerPid);
        } catch {
          // already gone
        }
      }
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300000);
}
