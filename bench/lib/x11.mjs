// Shared by the X11 benchmarks: a private Xvfb + openbox desktop (.ci/x11-session.sh) that this
// process is pointed at, and a poll helper.
import { execFileSync } from "node:child_process";
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
