// Builds the MCP Bundle (uiinspect-mcp.mcpb) from what npm would publish: `npm pack`, the tarball
// unpacked with its production dependencies only, then the official packer (@anthropic-ai/mcpb)
// with manifest.json. Usage: node scripts/bundle.mjs [OUT.mcpb] [--no-build]
// (--no-build packs the dist/ already built, for tests that run beside other builds).
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("..", import.meta.url));
const args = process.argv.slice(2);
const noBuild = args.includes("--no-build");
const out = resolve(args.find((a) => !a.startsWith("--")) ?? join(repo, "uiinspect-mcp.mcpb"));
const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const run = (cmd, argv, cwd) =>
  execFileSync(cmd, argv, {
    cwd,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
    shell: process.platform === "win32",
  });

const work = mkdtempSync(join(tmpdir(), "uiinspect-bundle-"));
try {
  const packed = JSON.parse(
    run(npm, ["pack", "--json", "--pack-destination", work, ...(noBuild ? ["--ignore-scripts"] : [])], repo),
  );
  run("tar", ["-xzf", join(work, packed[0].filename), "-C", work], work);
  const pkg = join(work, "package");
  // koffi ships its native builds prebuilt: no install script is needed.
  run(npm, ["install", "--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund", "--prefer-offline"], pkg);
  run(
    process.execPath,
    [join(repo, "node_modules/@anthropic-ai/mcpb/dist/cli/cli.js"), "pack", pkg, out],
    repo,
  );
  process.stdout.write(`${out}\n`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
