// Shared setup of the X11 benchmarks: a private Xvfb desktop (.ci/x11-session.sh), the X11
// platform of dist/ in this process (to find windows and the consent dialog's button), apps
// started inside it, and a built server granted access to a window by clicking Allow in the
// real consent dialog.
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import dbus from "dbus-next";
import sharp from "sharp";
import { call, startServer } from "./mcp.mjs";
import { startX11Session, stopX11Session, waitFor } from "./x11.mjs";

export { waitFor };

export const REPO = resolve(import.meta.dirname, "../..");

/** The desktop; `stop()` ends every app, server and the session it started. */
export async function startDesk() {
  const env = startX11Session();
  const apps = [];
  const servers = [];
  const dir = mkdtempSync(join(tmpdir(), "uix-bench-x11-"));
  const { createX11Platform } = await import(join(REPO, "dist/platforms/x11/index.js"));
  const platform = await createX11Platform({ workerKind: "other" });

  const desk = {
    env,
    dir,
    platform,
    /** Starts an app; resolves with its visible window (`match(w)` picks it). */
    async app(cmd, args, match) {
      const child = spawn(cmd, args, { env: process.env, stdio: "ignore" });
      apps.push(child);
      const win = await waitFor(cmd, async () =>
        (await platform.desktop.listWindows()).find((w) => w.visible && !w.iconic && match(w)),
      );
      return { child, win };
    },
    /**
     * A built server with `policy` (merged over an observe+inspect policy for `win`'s
     * executable), granted access to `win` through the real consent dialog.
     */
    async grantedServer(win, policy = {}, env = {}, cli = undefined) {
      const policyPath = join(dir, `policy-${servers.length}.json`);
      writeFileSync(policyPath, JSON.stringify(policyFor(win, policy)));
      const server = await startServer(
        {
          DESKTOP_AUTOMATION_POLICY_FILE: policyPath,
          UIINSPECT_TREE_DEADLINE_MS: "60000",
          UIINSPECT_WORKER_DEADLINE_MS: "120000",
          UIINSPECT_UNSAFE_ALLOW_XTEST_CONSENT: "1",
          ...env,
        },
        cli,
      );
      servers.push(server);
      const grant = await approvedAtDialog(call(server.client, "request_access", { hwnd: win.hwnd }));
      if (grant.decision !== "approved") throw new Error("not approved");
      return server;
    },
    async stop() {
      for (const s of servers) {
        try {
          await s.client.close();
        } catch {
          // already closed
        }
      }
      for (const a of apps) if (a.exitCode === null && a.signalCode === null) a.kill("SIGKILL");
      try {
        await platform.desktop.dispose();
      } catch {
        // gone
      }
      stopX11Session(env);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return desk;
}

/** An observe+inspect policy for `win`'s executable and title, `over` merged over it. */
export function policyFor(win, over = {}) {
  return {
    schema_version: 1,
    policy_id: "bench-x11",
    application: { executable_path: win.instance.exe_path, title_patterns: [win.title] },
    allowed_actions: ["observe", "inspect"],
    limits: { max_screenshot_pixels_per_minute: 1e12, max_png_bytes: 64 * 1024 * 1024 },
    ...over,
  };
}

/**
 * Answers our own consent dialog for `pending` (a request_access call): the dialog has no
 * accessibility tree and is concealed from window listings, so it is found by title with
 * xdotool and clicked on Allow (bottom right) until the call is answered. Needs the unsafe
 * XTest setting on the server (Xvfb has only XTEST devices). Resolves with the call's answer.
 */
export async function approvedAtDialog(pending) {
  let answered = false;
  const settled = () => {
    answered = true;
  };
  pending.then(settled, settled);
  // Polled, not `xdotool search --sync`: a request answered without a dialog (refused) ends it.
  let wid = "";
  while (!answered && wid === "") {
    try {
      wid =
        execFileSync("xdotool", ["search", "--onlyvisible", "--name", "uiinspect-mcp: access request"], {
          encoding: "utf8",
        })
          .trim()
          .split("\n")
          .at(-1) ?? "";
    } catch {
      // none yet (xdotool exits 1)
    }
    if (wid === "") await new Promise((r) => setTimeout(r, 200));
  }
  for (let i = 0; i < 30 && !answered; i++) {
    await new Promise((r) => setTimeout(r, i === 0 ? 1300 : 1000));
    try {
      const geo = execFileSync("xdotool", ["getwindowgeometry", "--shell", wid], { encoding: "utf8" });
      const v = (k) => Number(new RegExp(`^${k}=(-?\\d+)$`, "m").exec(geo)?.[1]);
      execFileSync("xdotool", [
        "mousemove",
        "--window",
        wid,
        String(v("WIDTH") - 55),
        String(v("HEIGHT") - 24),
        "click",
        "1",
      ]);
    } catch {
      // gone meanwhile: the answer decides
    }
  }
  return pending;
}

/**
 * Memory of a server in MiB: `rss` of its own process, and `tree_rss` / `tree_pss` over it and
 * all its descendants (process isolation's workers). RSS counts pages shared between processes
 * (the node binary, libraries) once per process; PSS splits them, so a tree's PSS is what it
 * costs the machine. `processes`: each process of the tree by role (server, a worker kind,
 * guardian) with its RSS and PSS.
 */
export function memoryMiB(pid) {
  const kids = new Map();
  for (const line of execFileSync("ps", ["-eo", "pid=,ppid="], { encoding: "utf8" }).split("\n")) {
    const [p, pp] = line.trim().split(/\s+/).map(Number);
    if (!p) continue;
    if (!kids.has(pp)) kids.set(pp, []);
    kids.get(pp).push(p);
  }
  const rollup = (p) => {
    try {
      return readFileSync(`/proc/${p}/smaps_rollup`, "utf8");
    } catch {
      return "";
    }
  };
  const field = (text, name) => Number(new RegExp(`\\n?${name}:\\s+(\\d+)`).exec(text)?.[1] ?? 0);
  const role = (p) => {
    try {
      const cmd = readFileSync(`/proc/${p}/cmdline`, "utf8");
      return /workers\/(\w+)\/main/.exec(cmd)?.[1] ?? (/guardian/.test(cmd) ? "guardian" : "server");
    } catch {
      return "gone";
    }
  };
  const mib = (kb) => Math.round((kb / 1024) * 10) / 10;
  let rss = 0;
  let pss = 0;
  const processes = [];
  const stack = [pid];
  while (stack.length > 0) {
    const p = stack.pop();
    const text = rollup(p);
    rss += field(text, "Rss");
    pss += field(text, "Pss");
    processes.push({
      role: p === pid ? "server" : role(p),
      rss: mib(field(text, "Rss")),
      pss: mib(field(text, "Pss")),
    });
    for (const k of kids.get(p) ?? []) stack.push(k);
  }
  return { rss: processes[0].rss, tree_rss: mib(rss), tree_pss: mib(pss), processes };
}

/** sharp's PNG of a raw frame at zlib `level` (no adaptive filter, no palette): its byte length. */
export async function sharpPngBytes(raw, level) {
  let img = sharp(Buffer.from(raw.data.buffer, raw.data.byteOffset, raw.data.byteLength), {
    raw: { width: raw.width, height: raw.height, channels: raw.channels },
  });
  if (raw.channels === 4) img = img.removeAlpha();
  return (await img.png({ compressionLevel: level, adaptiveFiltering: false, palette: false }).toBuffer())
    .length;
}

/**
 * The screenshot floor: XShmGetImage + BGRX→RGB (the capture port of dist/) and
 * sharp PNG level 1, in this process. Resolves with the PNG's byte length.
 */
export async function floorShot(capture, rect) {
  return sharpPngBytes(await capture.captureScreen(rect), 1);
}

/**
 * The tree's floor for `win`: its own peer link to the app (found through the registry by the
 * PID the a11y bus daemon knows), then `walk()` = Cache.GetItems plus GetExtents of every cached
 * Component node, all in flight; resolves with the number of cached items.
 */
export async function openFloorWalk(win) {
  const { PeerLink, verifiedPeerPath } = await import(join(REPO, "dist/platforms/x11/atspiPeer.js"));
  const s = dbus.sessionBus();
  const r = await s.call(
    new dbus.Message({
      destination: "org.a11y.Bus",
      path: "/org/a11y/bus",
      interface: "org.a11y.Bus",
      member: "GetAddress",
    }),
  );
  s.disconnect();
  const a11y = dbus.sessionBus({ busAddress: r.body[0] });
  const busCall = async (destination, path, iface, member, signature, body) =>
    (await a11y.call(new dbus.Message({ destination, path, interface: iface, member, signature, body })))
      .body[0];
  const ROOT = "/org/a11y/atspi/accessible/root";
  let appBus = null;
  for (const [name] of await busCall(
    "org.a11y.atspi.Registry",
    ROOT,
    "org.a11y.atspi.Accessible",
    "GetChildren",
  )) {
    const pid = await busCall(
      "org.freedesktop.DBus",
      "/org/freedesktop/DBus",
      "org.freedesktop.DBus",
      "GetConnectionUnixProcessID",
      "s",
      [name],
    );
    if (pid === win.instance.pid) appBus = name;
  }
  const address = await busCall(appBus, ROOT, "org.a11y.atspi.Application", "GetApplicationBusAddress");
  a11y.disconnect();
  const link = await PeerLink.open(
    verifiedPeerPath(address, win.instance.pid),
    win.instance.pid,
    3000,
    () => {},
  );
  return {
    async walk() {
      const items = (
        await link.call("/org/a11y/atspi/cache", "org.a11y.atspi.Cache", "GetItems", undefined, [], 3000)
      ).body[0];
      await Promise.all(
        items
          .filter((it) => it[5].includes("org.a11y.atspi.Component"))
          .map((it) => link.call(it[0][1], "org.a11y.atspi.Component", "GetExtents", "u", [0], 3000)),
      );
      return items.length;
    },
    close: () => link.close(),
  };
}
