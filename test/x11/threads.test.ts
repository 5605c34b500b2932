import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scratchDir } from "../support/scratch.js";
import { REPO, startApp, startSession, waitFor, X11_AVAILABLE, type X11Session, xdotool } from "./support.js";

/**
 * Several workers load the X11 platform in one process (thread isolation). The Xlib error
 * handler is process-global: the worker that installed it first exits, then another worker
 * provokes Xlib errors. With a JS callback bound to the first worker's isolate this would crash
 * the process; the native no-op handler keeps it alive and every worker keeps working.
 */

const WORKER_SRC = `
import { parentPort, workerData } from "node:worker_threads";
const { createX11Platform } = await import(workerData.bundle);
const p = await createX11Platform({ workerKind: workerData.kind });
const post = (m) => parentPort.postMessage(m);
parentPort.on("message", async (msg) => {
  try {
    if (msg === "list") post({ ok: true, titles: (await p.desktop.listWindows()).map((w) => w.title) });
    else if (msg === "xerrors") {
      const { XConnection } = await import(workerData.bundle);
      const x = XConnection.open();
      x.n.XTestFakeKeyEvent(x.dpy, 3, 1, 0);
      x.n.XGetImage(x.dpy, 0x1fffffff, 0, 0, 1, 1, 0xffffffffn, 2);
      x.n.XSync(x.dpy, 0);
      x.close();
      let gone = null;
      try { await p.desktop.closeWindow("536870911"); } catch (e) { gone = e.code; }
      post({ ok: true, gone });
    } else if (msg === "exit") { await p.dispose(); process.exit(0); }
  } catch (e) { post({ ok: false, code: e && e.code }); }
});
post({ ready: true });
`;

/** Whether a window titled `title` is mapped and managed (in openbox's _NET_CLIENT_LIST). */
function managed(title: string): boolean {
  let ids: string[];
  try {
    ids = xdotool("search", "--onlyvisible", "--name", `^${title}$`).split("\n").filter(Boolean);
  } catch {
    return false; // xdotool search exits 1 when nothing matches
  }
  const list = execFileSync("xprop", ["-root", "_NET_CLIENT_LIST"], { encoding: "utf8", env: process.env });
  const listed = new Set((list.match(/0x[0-9a-f]+/gi) ?? []).map((h) => Number.parseInt(h, 16)));
  return ids.some((id) => listed.has(Number(id)));
}

function ask(w: Worker, msg: string): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    w.once("message", resolve);
    w.once("error", reject);
    w.postMessage(msg);
  });
}

describe.skipIf(!X11_AVAILABLE)("x11 platform in several worker threads of one process", () => {
  let session: X11Session;
  let dir: string;

  beforeAll(async () => {
    session = startSession();
    startApp("xterm", ["-T", "uix threads"]);
    dir = scratchDir("threads");
    // One bundle (one set of koffi type names per isolate) exporting both entry points.
    const { build } = await import("esbuild");
    await build({
      stdin: {
        contents: [
          `export { createX11Platform } from ${JSON.stringify(join(REPO, "src/platforms/x11/index.ts"))};`,
          `export { XConnection } from ${JSON.stringify(join(REPO, "src/platforms/x11/xconn.ts"))};`,
        ].join("\n"),
        resolveDir: REPO,
        loader: "ts",
      },
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      outfile: join(dir, "platform.mjs"),
      logLevel: "silent",
      // koffi and dbus-next stay real packages, resolved from the repository's node_modules.
      external: ["koffi", "dbus-next"],
    });
    const text = readFileSync(join(dir, "platform.mjs"), "utf8")
      .replace(/from "koffi"/g, `from ${JSON.stringify(join(REPO, "node_modules/koffi/index.js"))}`)
      // dbus-next's bare connection module (peer-to-peer AT-SPI links) is imported by its subpath.
      .replace(
        /from "dbus-next(\/[^"]+)?"/g,
        (_m, sub: string | undefined) =>
          `from ${JSON.stringify(join(REPO, "node_modules/dbus-next", sub ?? "index.js"))}`,
      );
    writeFileSync(join(dir, "platform.mjs"), text);
    writeFileSync(join(dir, "worker.mjs"), WORKER_SRC);
    // The workers' listings are checked for it: the window must exist and be managed first.
    await waitFor("xterm window managed", async () => managed("uix threads") || null, 30_000);
  }, 120_000);

  afterAll(() => session?.stop());

  it("survives Xlib errors after the first worker (which installed the handler) exited", async () => {
    const start = (kind: string) =>
      new Worker(join(dir, "worker.mjs"), {
        workerData: { bundle: join(dir, "platform.mjs"), kind },
      });
    const first = start("capture");
    await new Promise((r) => first.once("message", r));
    const second = start("input");
    await new Promise((r) => second.once("message", r));
    const third = start("uia");
    await new Promise((r) => third.once("message", r));
    expect(((await ask(first, "list")).titles as string[]).includes("uix threads")).toBe(true);
    const exited = new Promise((r) => first.once("exit", r));
    first.postMessage("exit");
    expect(await exited).toBe(0);
    const r = await ask(second, "xerrors");
    expect(r).toEqual({ ok: true, gone: "target_gone" });
    const r3 = await ask(third, "xerrors");
    expect(r3).toEqual({ ok: true, gone: "target_gone" });
    expect(((await ask(third, "list")).titles as string[]).includes("uix threads")).toBe(true);
    await second.terminate();
    await third.terminate();
  });
});
