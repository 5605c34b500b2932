import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync, renameSync, rmSync, statSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { describe, expect, it } from "vitest";
import {
  type App,
  atspiBus,
  type GrantedTarget,
  grantedTarget,
  peerAddressOf,
  startApp,
  waitForWindow,
  x11CliSuite,
} from "./support.js";

/**
 * Another local program of the same user between the walk and the target's own AT-SPI server.
 * A walk links to the application's peer socket (the unix path it answers to
 * GetApplicationBusAddress) once the kernel confirms the application listens there. The
 * attacker moves the app's socket file away and puts its own listening socket at that path:
 * - bound at the path: the kernel's socket table (/proc/net/unix) then lists two listeners
 *   under it (it keeps the name a socket was bound by), the app's and the impostor's, while a
 *   connect reaches only the impostor. The walk must not connect to it at all;
 * - bound under another name and renamed onto the path: the table lists one listener under the
 *   path, the app's, and the look at the path passes; the connect reaches the impostor, whose
 *   peer credentials (SO_PEERCRED) are not the app's, so not one byte is written to it.
 * Either way the walk goes by the bus daemon, and the tree is the app's.
 */

const HAVE_CC = spawnSync("sh", ["-c", "command -v cc"]).status === 0;
const TITLE = "uix peer form";
const ONTO_TITLE = "uix peer onto";
const LABELS = ["Login", "Mail"];

/** The listening sockets bound under `path`, in the kernel table's order: their inodes. */
function listenersAt(path: string): string[] {
  const out: string[] = [];
  for (const line of readFileSync("/proc/net/unix", "latin1").split("\n")) {
    const f = line.trim().split(/\s+/);
    if (f[7] === path && (Number.parseInt(f[3] ?? "0", 16) & 0x10000) !== 0) out.push(f[6] ?? "");
  }
  return out;
}

function socketInodesOf(pid: number): Set<string> {
  const out = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m?.[1]) out.add(m[1]);
    } catch {
      // closed meanwhile
    }
  }
  return out;
}

/** The app's own peer socket path, asked as any program on the bus may ask it. */
async function peerPathOf(pid: number): Promise<string> {
  const bus = await atspiBus();
  try {
    const address = await peerAddressOf(bus, pid);
    const m = /^unix:path=([^,;]+)/.exec(address ?? "");
    if (!m?.[1]) throw new Error(`the app offers no unix path: ${address}`);
    return m[1];
  } finally {
    bus.disconnect();
  }
}

function listen(server: Server, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(path, () => resolve());
  });
}

const close = (server: Server) => new Promise<void>((r) => server.close(() => r()));

/** A listening socket that counts the connections it accepts and the bytes sent to it. */
function impostor(): { server: Server; connections: () => number; bytes: () => number } {
  let connections = 0;
  let bytes = 0;
  const server = createServer((sock) => {
    connections += 1;
    sock.on("data", (d: Buffer) => {
      bytes += d.length;
    });
    sock.on("error", () => undefined);
  });
  return { server, connections: () => connections, bytes: () => bytes };
}

/** zenity's form titled `title`, granted observe and inspect to a built server; `pid()` is the app's. */
function grantedForm(name: string, title: string): { f: GrantedTarget; pid: () => number } {
  let app: App | undefined;
  const f = grantedTarget({
    name,
    titlePatterns: ["uix peer *"],
    actions: ["observe", "inspect"],
    async start(f) {
      app = startApp("zenity", ["--forms", `--title=${title}`, "--add-entry=Login", "--add-entry=Mail"]);
      return waitForWindow(f.p, title);
    },
  });
  return { f, pid: () => app?.child.pid ?? 0 };
}

describe.skipIf(!x11CliSuite("peer socket", { what: "no C compiler (cc)", ok: HAVE_CC }))(
  "x11: the target's AT-SPI peer socket swapped by another local program (built CLI over stdio, zenity)",
  () => {
    describe("another socket bound at the path once the app's is moved away", () => {
      const { f, pid: appPid } = grantedForm("peer", TITLE);

      it("two listeners under the path: no connection reaches the impostor, the tree is the app's", async () => {
        const pid = appPid();
        const path = await peerPathOf(pid);
        const [own] = listenersAt(path);
        expect(own, "the app listens at its path").toBeTruthy();
        renameSync(path, `${path}.moved`);
        let tries = 0;
        let fake: ReturnType<typeof impostor> | null = null;
        try {
          // Bound until the kernel table lists the app's listener first under the path: the
          // order a check that takes the first listener of the path would be fooled by. The
          // table walks its buckets in order, a bound socket's bucket being its file's inode
          // number modulo 256, newest first within one; so a try listed first is closed (it
          // leaves the table) and its file kept under another name (its inode is not handed out
          // again), and the next try is a new inode in another bucket. In the last bucket (1 run
          // in 256) no socket is listed after the app's: a first-listener check would refuse
          // every impostor there, and the walk must still not connect to it.
          const lastBucket = statSync(`${path}.moved`).ino % 256 === 255;
          for (; tries < 1024 && fake === null; tries++) {
            const next = impostor();
            await listen(next.server, path);
            if (lastBucket || socketInodesOf(pid).has(listenersAt(path)[0] ?? "")) fake = next;
            else {
              renameSync(path, `${path}.try${tries}`);
              await close(next.server);
            }
          }
          expect(fake, "the app's listener listed first under the path").not.toBeNull();
          expect(listenersAt(path), "the app's listener and the impostor's").toHaveLength(2);
          const r = await f.h.call("inspect_tree", { hwnd: f.target.hwnd, detail: "full" });
          expect(r.code ?? "ok", JSON.stringify(r.structured)).toBe("ok");
          for (const l of LABELS) expect(r.content[0]?.text).toContain(l);
          expect(fake?.connections(), "connections the impostor accepted").toBe(0);
        } finally {
          if (fake) await close(fake.server);
          for (let i = 0; i < tries; i++) rmSync(`${path}.try${i}`, { force: true });
          renameSync(`${path}.moved`, path);
        }
      });
    });

    describe("another socket renamed onto the path", () => {
      const { f, pid: appPid } = grantedForm("peer-onto", ONTO_TITLE);

      it("one listener under the path, the app's, but the connect reaches the impostor: refused before a byte (SO_PEERCRED)", async () => {
        const pid = appPid();
        const path = await peerPathOf(pid);
        renameSync(path, `${path}.moved`);
        const fake = impostor();
        try {
          // Bound under another name and renamed onto the path: the kernel's table still names
          // it by the name it was bound to, so the table shows one listener at the path, the
          // app's (moved away), and the look at the path passes.
          await listen(fake.server, `${path}.bind`);
          renameSync(`${path}.bind`, path);
          const listed = listenersAt(path);
          expect(listed.length, "one listener named by the path").toBe(1);
          expect(socketInodesOf(pid).has(listed[0] ?? ""), "and it is the app's").toBe(true);
          const r = await f.h.call("inspect_tree", { hwnd: f.target.hwnd, detail: "full" });
          expect(r.code ?? "ok", JSON.stringify(r.structured)).toBe("ok");
          for (const l of LABELS) expect(r.content[0]?.text).toContain(l);
          await new Promise((r) => setTimeout(r, 200));
          // The link connected (the path leads to the impostor now) and went no further.
          expect(fake.connections(), "connections the impostor accepted").toBe(1);
          expect(fake.bytes(), "bytes written to the impostor").toBe(0);
        } finally {
          await close(fake.server);
          renameSync(`${path}.moved`, path);
        }
      });
    });
  },
);
