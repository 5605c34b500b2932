import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { join } from "node:path";
import { REPO, waitFor } from "./support.js";

/**
 * Another local X client for the attack tests (test/x11/fixtures/attacker.c): override-redirect
 * popups, grabs, forged root properties, windows that take the focus. It prints one line per
 * event the X server sends it ("key", "button", "focus"), so a test can count what reached it.
 */
export interface Attacker {
  child: ChildProcess;
  /** The attacker's window, when the mode makes one (0 otherwise). */
  xid: number;
  /** Further windows the mode made ("family": the other top-level, then the popup). */
  more: number[];
  /** Lines the attacker printed. */
  count(what: string): number;
  stop(): Promise<void>;
}

/** Compiles the attacker into `dir`; returns its path. */
export function buildAttacker(dir: string): string {
  const bin = join(dir, "attacker");
  // libXi and libXtst by their sonames: their -dev packages (the unversioned links) need not be installed.
  execFileSync("cc", [
    "-o",
    bin,
    join(REPO, "test/x11/fixtures/attacker.c"),
    "-lX11",
    "-l:libXi.so.6",
    "-l:libXtst.so.6",
  ]);
  return bin;
}

/** Starts the attacker with `args`, adds it to `started`, resolves once it is ready. */
export function startAttacker(bin: string, args: string[], started: Attacker[]): Promise<Attacker> {
  const child = spawn(bin, args, { env: process.env, stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout?.setEncoding("utf8");
  child.stdout?.on("data", (d: string) => {
    out += d;
  });
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  const a: Attacker = {
    child,
    xid: 0,
    more: [],
    count: (what) => out.split("\n").filter((l) => l === what).length,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
  };
  started.push(a);
  return waitFor("attacker ready", async () => {
    const m = /^ready(?: (\d+))?((?: \d+)*)$/m.exec(out);
    if (!m) return null;
    a.xid = Number(m[1] ?? 0);
    a.more = (m[2] ?? "").trim().split(" ").filter(Boolean).map(Number);
    return a;
  });
}

/** Waits until the attacker has counted every event the X server sent it so far. */
export async function settled(a: Attacker): Promise<void> {
  const before = a.count("sync");
  a.child.kill("SIGUSR2");
  await waitFor("attacker synced", async () => (a.count("sync") > before ? true : null));
}
