import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { copyFileSync, readlinkSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { linuxInstanceResolver } from "../../src/lease/instance.js";
import { resolveInstance } from "../../src/os/linux/proc.js";
import { scratchDir } from "../support/scratch.js";

const LINUX = process.platform === "linux";
const SESSION = "scope-session";

/** Polls `probe` until it gives a value (no fixed sleep decides the outcome). */
async function waitFor<T>(what: string, probe: () => T | null, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v !== null) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

function readlinkOrNull(path: string): string | null {
  try {
    return readlinkSync(path);
  } catch {
    return null;
  }
}

describe.skipIf(!LINUX)("the lease broker's Linux resolver is the backend's (os/linux/proc.ts)", () => {
  const resolver = linuxInstanceResolver({ clockTicks: 100, session: SESSION });
  const children: ChildProcess[] = [];
  const dirs: string[] = [];

  afterEach(() => {
    for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it("resolves the same instance as the backend, in the broker's own session", async () => {
    const live = await resolver(process.pid);
    expect(live).not.toBeNull();
    expect(live).toEqual({ ...resolveInstance(process.pid, ":0"), session: SESSION });
    expect(await resolver(0)).toBeNull();
    expect(await resolver(0x3ffffff0)).toBeNull();
  });

  it("a binary bind-mounted over a path in a private mount namespace has no instance", async () => {
    if (spawnSync("unshare", ["-Urm", "true"]).status !== 0) {
      // Unprivileged user namespaces are off here: the attack itself cannot run.
      expect(process.env.CI_REQUIRE_USERNS).toBeUndefined();
      return;
    }
    const dir = scratchDir("lease-ns");
    dirs.push(dir);
    const allowed = join(dir, "allowed");
    const other = join(dir, "other");
    copyFileSync("/bin/sleep", allowed);
    copyFileSync("/bin/sleep", other);
    const child = spawn(
      "unshare",
      ["-Urm", "sh", "-c", `mount --bind '${other}' '${allowed}' && exec '${allowed}' 60`],
      { stdio: "ignore" },
    );
    children.push(child);
    const pid = child.pid!;
    // /proc/PID/exe reads as the allowed path, but the process runs another file.
    await waitFor("the exec", () => (readlinkOrNull(`/proc/${pid}/exe`) === allowed ? true : null));
    expect(await resolver(pid)).toBeNull();

    // The same program run plainly from that path does have one.
    const plain = spawn(allowed, ["60"], { stdio: "ignore" });
    children.push(plain);
    await waitFor("the plain process", () =>
      readlinkOrNull(`/proc/${plain.pid}/exe`) === allowed ? true : null,
    );
    expect((await resolver(plain.pid!))?.exe_path).toBe(allowed);
  });
});
