import { execFile, spawnSync } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { scratchDir } from "../support/scratch.js";

/**
 * The package's descriptions for installers: manifest.json (the MCP Bundle, checked and packed by
 * its official tool, @anthropic-ai/mcpb) and server.json (the MCP registry's entry, checked
 * against the schema its $schema names). Both say what package.json says.
 */

const REPO = resolve(import.meta.dirname, "../..");
const MCPB = join(REPO, "node_modules/@anthropic-ai/mcpb/dist/cli/cli.js");
const json = (p: string) => JSON.parse(readFileSync(join(REPO, p), "utf8")) as Record<string, unknown>;
const pkg = json("package.json") as { name: string; version: string; mcpName: string; description: string };
const built = existsSync(join(REPO, "dist/cli.js"));

function run(cmd: string, args: string[], cwd = REPO): Promise<{ status: number | null; out: string }> {
  return new Promise((r) =>
    execFile(cmd, args, { cwd, encoding: "utf8", timeout: 300_000 }, (e, stdout, stderr) =>
      r({ status: e ? (typeof e.code === "number" ? e.code : 1) : 0, out: `${stdout}${stderr}` }),
    ),
  );
}

describe("manifest.json (MCP Bundle)", () => {
  const work = scratchDir("mcpb");
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it("passes the official validator and matches package.json", async () => {
    const r = await run(process.execPath, [MCPB, "validate", "manifest.json"]);
    expect(r.status, r.out).toBe(0);
    expect(r.out).toContain("validation passes");
    const m = json("manifest.json") as {
      name: string;
      version: string;
      description: string;
      server: { entry_point: string; mcp_config: { args: string[] } };
    };
    expect([m.name, m.version, m.description]).toEqual([pkg.name, pkg.version, pkg.description]);
    // The bundle's own placeholders (mcpb substitutes them), not template strings.
    const placeholder = (name: string) => `\${${name}}`;
    expect(m.server.mcp_config.args).toEqual([
      `${placeholder("__dirname")}/dist/cli.js`,
      "serve",
      "--policy",
      placeholder("user_config.policy_file"),
    ]);
    expect((pkg as unknown as { files: string[] }).files).toContain("manifest.json");
  });

  it.skipIf(!built)(
    "npm run bundle packs the published files with their production dependencies; the unpacked bundle runs",
    async () => {
      const out = join(work, "uiinspect-mcp.mcpb");
      const packed = await run(process.execPath, [join(REPO, "scripts/bundle.mjs"), out, "--no-build"]);
      expect(packed.status, packed.out).toBe(0);
      const info = await run(process.execPath, [MCPB, "info", out]);
      expect(info.status, info.out).toBe(0);
      const dir = join(work, "unpacked");
      const un = await run(process.execPath, [MCPB, "unpack", out, dir]);
      expect(un.status, un.out).toBe(0);
      for (const p of [
        "manifest.json",
        "dist/cli.js",
        "sandbox/x11-session.sh",
        "node_modules/zod/package.json",
      ])
        expect(existsSync(join(dir, p)), p).toBe(true);
      // No development dependency rides along.
      expect(existsSync(join(dir, "node_modules/vitest"))).toBe(false);
      const v = spawnSync(process.execPath, [join(dir, "dist/cli.js"), "--version"], { encoding: "utf8" });
      expect(v.stdout.trim()).toBe(pkg.version);
      const p = spawnSync(
        process.execPath,
        [join(dir, "dist/cli.js"), "validate-policy", join(dir, "schema/examples/policy.example.json")],
        { encoding: "utf8" },
      );
      expect(p.status, p.stderr).toBe(0);
    },
    600_000,
  );
});

describe("server.json (MCP registry)", () => {
  const server = json("server.json") as {
    $schema: string;
    name: string;
    description: string;
    version: string;
    packages: Array<{
      registryType: string;
      identifier: string;
      version: string;
      transport: { type: string };
    }>;
  };

  it("names the npm package and version package.json has, under the package's mcpName", () => {
    expect(server.name).toBe(pkg.mcpName);
    expect(server.name).toMatch(/^[a-zA-Z0-9.-]+\/[a-zA-Z0-9._-]+$/);
    expect(server.description.length).toBeLessThanOrEqual(100);
    expect(server.version).toBe(pkg.version);
    expect(server.packages).toEqual([
      expect.objectContaining({
        registryType: "npm",
        identifier: pkg.name,
        version: pkg.version,
        transport: { type: "stdio" },
      }),
    ]);
  });

  // This machine and CI have no network, so the published schema cannot be fetched here; the
  // checks below hold the file to the fields and forms that schema documents.
  it("uses only the registry schema's top-level fields, with its dated $schema address", () => {
    expect(server.$schema).toMatch(
      /^https:\/\/static\.modelcontextprotocol\.io\/schemas\/\d{4}-\d{2}-\d{2}\/server\.schema\.json$/,
    );
    const known = [
      "$schema",
      "name",
      "description",
      "title",
      "version",
      "websiteUrl",
      "repository",
      "icons",
      "packages",
      "remotes",
      "_meta",
    ];
    expect(Object.keys(server).filter((k) => !known.includes(k))).toEqual([]);
    expect(server.version).toMatch(/^\d+\.\d+\.\d+/);
  });
});
