import { spawn } from "node:child_process";
import { afterAll, describe, expect, it } from "vitest";
import { CLI, FakeDesktop, filePolicy, LOOSE_BUDGETS, ruffleWindow } from "../support/mcp.js";

/**
 * A burst of requests answered while the client is slow to read must not pile a
 * 'drain' listener per answer onto stdout (MaxListenersExceededWarning). The client here
 * writes 300 calls at once and reads nothing for a while, so stdout's pipe fills up.
 */

const children: Array<ReturnType<typeof spawn>> = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
});

const frame = (id: number, method: string, params: Record<string, unknown>) =>
  `${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`;

describe("bursts against a slow reader", () => {
  it("answer every call and print no listener warning", async () => {
    const d = new FakeDesktop({ session: 1, foreground: 1001, windows: [ruffleWindow()] });
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env))
      if (v !== undefined && !k.startsWith("DESKTOP_AUTOMATION_") && !k.startsWith("UIINSPECT_")) env[k] = v;
    const child = spawn(process.execPath, [CLI, "serve"], {
      env: {
        ...env,
        ...LOOSE_BUDGETS,
        UIINSPECT_PLATFORM: "fake",
        UIINSPECT_FAKE_DESKTOP: d.path,
        UIINSPECT_LOG_LEVEL: "warn",
        DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy()),
      },
      stdio: ["pipe", "pipe", "pipe"],
    });
    children.push(child);
    let stderr = "";
    child.stderr.on("data", (b: Buffer) => {
      stderr += b.toString("utf8");
    });
    const N = 300;
    let input = frame(0, "initialize", {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: "burst", version: "1" },
    });
    input += `${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`;
    for (let i = 1; i <= N; i++) input += frame(i, "tools/call", { name: "list_windows", arguments: {} });
    child.stdout.pause();
    child.stdin.write(input);
    // Read nothing until the server has had time to answer (and block on) many of them.
    await new Promise((r) => setTimeout(r, 1500));
    const answered = new Set<number>();
    await new Promise<void>((resolve, reject) => {
      let buf = "";
      const timer = setTimeout(() => reject(new Error(`only ${answered.size} answers`)), 60_000);
      child.stdout.on("data", (b: Buffer) => {
        buf += b.toString("utf8");
        for (let nl = buf.indexOf("\n"); nl !== -1; nl = buf.indexOf("\n")) {
          const msg = JSON.parse(buf.slice(0, nl)) as { id?: number };
          buf = buf.slice(nl + 1);
          if (typeof msg.id === "number" && msg.id > 0) answered.add(msg.id);
        }
        if (answered.size === N) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.stdout.resume();
    });
    child.stdin.end();
    await new Promise((r) => child.once("exit", r));
    expect(answered.size).toBe(N);
    expect(stderr).not.toMatch(/MaxListenersExceeded/);
  });
});
