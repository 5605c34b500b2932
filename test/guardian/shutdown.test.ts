import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { afterEach, expect, it } from "vitest";
import { encodeEntry } from "../../src/guardian/entries.js";
import { ENV } from "../../src/guardian/wire.js";
import { approvingDesktop } from "../support/mcp.js";
import { scratchDir } from "../support/scratch.js";

// The built guardian as the server spawns it, its pipe closed while a worker is still connected
// (the server SIGKILLed, its process-isolated input worker not yet gone).

const GUARDIAN = resolve("dist/guardian/main.js");
const ends: Array<() => void> = [];
afterEach(() => {
  for (const end of ends.splice(0)) end();
});

function lines(stream: NodeJS.ReadableStream): () => Promise<string | null> {
  const it = createInterface({ input: stream })[Symbol.asyncIterator]();
  return async () => {
    const r = await it.next();
    return r.done ? null : String(r.value);
  };
}

async function startGuardian(): Promise<{ child: ChildProcess; socket: string; token: string }> {
  const dir = scratchDir("guardian");
  const socket = join(dir, "g.sock");
  const token = randomBytes(16).toString("hex");
  const d = approvingDesktop();
  const child = spawn(process.execPath, [GUARDIAN], {
    env: {
      ...process.env,
      [ENV.socket]: socket,
      [ENV.token]: token,
      [ENV.platform]: "fake",
      UIINSPECT_FAKE_DESKTOP: d.path,
    },
    stdio: ["pipe", "pipe", "inherit"],
  });
  ends.push(() => {
    child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });
  const out = lines(child.stdout as NodeJS.ReadableStream);
  expect(await out()).toBe("ready");
  return { child, socket, token };
}

async function worker(socket: string, token: string, source: string) {
  const sock: Socket = connect(socket);
  sock.on("error", () => undefined);
  const next = lines(sock);
  sock.write(`hello ${token} ${source}\n`);
  expect(await next()).toBe("hi");
  return {
    ask: async (line: string) => {
      sock.write(`${line}\n`);
      return next();
    },
    tell: (line: string) => sock.write(`${line}\n`),
    close: () => sock.end(),
  };
}

it("a worker still connected when the server's pipe closes is refused every hold, holding nothing then or not", async () => {
  const g = await startGuardian();
  const w = await worker(g.socket, g.token, "input-1-1");
  const remap = encodeEntry({ kind: "remap", code: 250, keysym: 0x1000141 });
  // Between two characters of a text: the last remap undone, nothing held at this moment.
  expect(await w.ask(`+ ${remap}`)).toBe("ok");
  w.tell(`- ${remap}`);
  const exited = new Promise<number | null>((r) => g.child.once("exit", (code) => r(code)));
  g.child.stdin?.end();
  // The guardian is ending; the worker's next record must be refused, not taken and left undone
  // by a guardian that already exited.
  await new Promise((r) => setTimeout(r, 200));
  expect(await w.ask(`+ ${encodeEntry({ kind: "remap", code: 251, keysym: 0x20ac })}`)).toBe("no");
  w.close();
  expect(await exited).toBe(0);
});
