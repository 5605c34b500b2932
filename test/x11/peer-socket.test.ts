import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync, renameSync } from "node:fs";
import { createServer, type Server } from "node:net";
import dbus from "dbus-next";
import { describe, expect, it } from "vitest";
import { type App, atspiBus, grantedTarget, startApp, waitForWindow, x11CliSuite } from "./support.js";

/**
 * Another local program of the same user between the walk and the target's own AT-SPI server.
 * A walk links to the application's peer socket (the unix path it answers to
 * GetApplicationBusAddress) once the kernel confirms the application listens there. The attacker
 * renames the app's socket file away and binds its own listening socket at that path: the
 * kernel's socket table (/proc/net/unix) then lists two listeners under the one path, the app's
 * (the name it was bound by) and the impostor's, while a connect to the path reaches only the
 * impostor. The walk must not connect to it: it goes by the bus daemon, and the tree is the app's.
 */

const HAVE_CC = spawnSync("sh", ["-c", "command -v cc"]).status === 0;
const TITLE = "uix peer form";
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
    const ask = async (
      destination: string,
      path: string,
      iface: string,
      member: string,
      body: unknown[] = [],
    ) =>
      (
        await bus.call(
          new dbus.Message({
            destination,
            path,
            interface: iface,
            member,
            ...(body.length ? { signature: "s", body } : {}),
          }),
        )
      )?.body[0];
    const names = (await ask(
      "org.freedesktop.DBus",
      "/org/freedesktop/DBus",
      "org.freedesktop.DBus",
      "ListNames",
    )) as string[];
    for (const name of names.filter((n) => n.startsWith(":"))) {
      const owner = await ask(
        "org.freedesktop.DBus",
        "/org/freedesktop/DBus",
        "org.freedesktop.DBus",
        "GetConnectionUnixProcessID",
        [name],
      ).catch(() => null);
      if (owner !== pid) continue;
      const address = String(
        await ask(
          name,
          "/org/a11y/atspi/accessible/root",
          "org.a11y.atspi.Application",
          "GetApplicationBusAddress",
        ),
      );
      const m = /^unix:path=([^,;]+)/.exec(address);
      if (m?.[1]) return m[1];
      throw new Error(`the app offers no unix path: ${address}`);
    }
    throw new Error(`no bus name of pid ${pid}`);
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

describe.skipIf(!x11CliSuite("peer socket", { what: "no C compiler (cc)", ok: HAVE_CC }))(
  "x11: the target's AT-SPI peer socket swapped by another local program (built CLI over stdio, zenity)",
  () => {
    let app: App;
    const f = grantedTarget({
      name: "peer",
      titlePatterns: ["uix peer *"],
      actions: ["observe", "inspect"],
      async start(f) {
        app = startApp("zenity", ["--forms", `--title=${TITLE}`, "--add-entry=Login", "--add-entry=Mail"]);
        return waitForWindow(f.p, TITLE);
      },
    });

    it("its socket renamed away and an impostor bound at the path: no connection reaches the impostor, the tree is the app's", async () => {
      const pid = app.child.pid ?? 0;
      const path = await peerPathOf(pid);
      const [own] = listenersAt(path);
      expect(own, "the app listens at its path").toBeTruthy();
      renameSync(path, `${path}.moved`);
      let connections = 0;
      let impostor: Server | null = null;
      try {
        // Bound until the kernel table lists the app's listener first under the path: the order
        // a check that takes the first listener of the path would be fooled by.
        for (let i = 0; i < 64; i++) {
          const s = createServer((sock) => {
            connections += 1;
            sock.destroy();
          });
          await listen(s, path);
          const listed = listenersAt(path);
          if (listed.length === 2 && socketInodesOf(pid).has(listed[0] ?? "")) {
            impostor = s;
            break;
          }
          await new Promise<void>((r) => s.close(() => r()));
        }
        expect(impostor, "the app's listener listed first under the path").not.toBeNull();
        const r = await f.h.call("inspect_tree", { hwnd: f.target.hwnd, detail: "full" });
        expect(r.code ?? "ok", JSON.stringify(r.structured)).toBe("ok");
        for (const l of LABELS) expect(r.content[0]?.text).toContain(l);
        expect(connections, "connections the impostor accepted").toBe(0);
      } finally {
        await new Promise<void>((r) => (impostor ? impostor.close(() => r()) : r()));
        renameSync(`${path}.moved`, path);
      }
    });
  },
);
