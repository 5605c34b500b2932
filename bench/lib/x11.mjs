// Shared by the X11 benchmarks: a private Xvfb + openbox desktop (.ci/x11-session.sh) that this
// process is pointed at, a poll helper, and the benchmarks' apps.
import { execFileSync, spawn } from "node:child_process";
import { join, resolve } from "node:path";

const REPO = resolve(import.meta.dirname, "../..");

/** Starts the session and exports its DISPLAY, session bus etc. into process.env. */
export function startX11Session() {
  const out = execFileSync("bash", [join(REPO, ".ci/x11-session.sh"), "start"], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
    timeout: 60_000,
  });
  const env = Object.fromEntries(
    out
      .split("\n")
      .filter((l) => l.includes("="))
      .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
  );
  Object.assign(process.env, env, { GDK_BACKEND: "x11" });
  return env;
}

export function stopX11Session(env) {
  execFileSync("bash", [join(REPO, ".ci/x11-session.sh"), "stop", env.UIINSPECT_X11_STATE], {
    stdio: "inherit",
  });
}

export async function waitFor(what, fn, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * The benchmarks' desktop: three small xterms titled `<label> xterm N` and gtk3-widget-factory,
 * focused. Returns the processes (the caller kills them) and the factory's window.
 */
export async function startBenchApps(desktop, label) {
  const apps = [];
  for (let i = 0; i < 3; i++) {
    apps.push(
      spawn("xterm", ["-T", `${label} xterm ${i}`, "-geometry", `30x5+${900 + i * 20}+${500 + i * 60}`], {
        stdio: "ignore",
      }),
    );
  }
  apps.push(spawn("gtk3-widget-factory", [], { env: process.env, stdio: "ignore" }));
  const win = await waitFor("gtk3-widget-factory", async () =>
    (await desktop.listWindows()).find((w) => w.title === "gtk3-widget-factory" && w.visible && w.instance),
  );
  await waitFor("three xterms", async () =>
    (await desktop.listWindows()).filter((w) => w.title.startsWith(`${label} xterm`)).length === 3
      ? true
      : null,
  );
  await desktop.activateWindow(win.hwnd);
  await waitFor("factory focused", async () => (await desktop.getWindow(win.hwnd))?.foreground);
  return { apps, win };
}
