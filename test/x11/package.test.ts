import { execFile, execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { basename, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scratchDir } from "../support/scratch.js";
import { REPO, startApp, startSession, waitFor, X11_AVAILABLE, type X11Session } from "./support.js";

/**
 * The package as a user gets it: `npm pack`, installed from the tarball into an empty prefix in a
 * folder outside the checkout, then the installed bin on a private X11 session: --version,
 * doctor --json (usable; without DISPLAY; with a dead session bus), serve --bogus, `npx TARBALL`,
 * and the MCP Inspector's CLI listing tools and windows from the installed copy.
 * Needs the npm registry (or a warm npm cache) for the dependencies and the Inspector.
 */

/** The Inspector release this test was written against (its CLI flags are stable across 0.x). */
const INSPECTOR = "@modelcontextprotocol/inspector@0.15.0";
/** The README's example app: its window's title is its program's name. */
const TITLE = "gtk3-widget-factory";
const APP = "/usr/bin/gtk3-widget-factory";

/** A README code block marked `<!-- readme-test: NAME -->`, as written. */
function readmeBlock(name: string): string {
  const readme = readFileSync(join(REPO, "README.md"), "utf8");
  const fence = "`".repeat(3);
  const start = readme.indexOf(`<!-- readme-test: ${name} -->\n${fence}sh\n`);
  if (start < 0) throw new Error(`README.md has no readme-test block ${name}`);
  const body = readme.indexOf("\n", readme.indexOf(fence, start)) + 1;
  return readme.slice(body, readme.indexOf(`\n${fence}\n`, body));
}

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

interface DoctorReport {
  status: string;
  checks: { id: string; status: string; summary: string; fix?: string }[];
}

/** The environment a user's shell would give: ours, minus our settings and npm's own variables. */
function userEnv(over: Record<string, string | undefined> = {}): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || k.startsWith("UIINSPECT_") || k.startsWith("DESKTOP_AUTOMATION_")) continue;
    if (k.toLowerCase().startsWith("npm_")) continue;
    out[k] = v;
  }
  for (const [k, v] of Object.entries(over)) {
    if (v === undefined) delete out[k];
    else out[k] = v;
  }
  return out;
}

/**
 * Runs a command without blocking this worker's event loop: a long spawnSync (npm install)
 * starves vitest's own RPC and fails the run with "Timeout calling onTaskUpdate".
 */
function run(cmd: string, args: string[], cwd: string, env = userEnv(), timeout = 300_000): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      cmd,
      args,
      { cwd, env, encoding: "utf8", timeout, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error && typeof error.code === "number" ? error.code : error ? null : 0;
        resolve({ status: code, stdout: stdout ?? "", stderr: stderr ?? "" });
      },
    );
  });
}

async function doctor(
  bin: string,
  cwd: string,
  env: Record<string, string>,
): Promise<{ r: Run; report: DoctorReport }> {
  const r = await run(bin, ["doctor", "--json"], cwd, env, 120_000);
  return { r, report: JSON.parse(r.stdout) as DoctorReport };
}

const failed = (rep: DoctorReport) => rep.checks.filter((c) => c.status === "fail");

/** Stops every sandbox whose folder is in `dir` (the TMPDIR the README's trial ran with). */
function stopSandboxesIn(dir: string): void {
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) {
    const state = join(dir, name);
    if (name.startsWith("uiinspect-x11.") && existsSync(join(state, "xvfb.pid")))
      execFileSync("bash", [join(REPO, "sandbox/x11-session.sh"), "stop", state], { stdio: "inherit" });
  }
}

describe.skipIf(!X11_AVAILABLE)("the npm package, installed from its tarball", () => {
  let session: X11Session;
  let work: string;
  let tarball: string;
  let bin: string;
  let policy: string;
  const version = (JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { version: string })
    .version;

  beforeAll(async () => {
    session = startSession();
    work = scratchDir("pkg");
    // dist/ was built by `npm test`; --ignore-scripts keeps prepack from rebuilding it under
    // the other test files that are running the CLI right now.
    const packed = await run("npm", ["pack", "--ignore-scripts", "--pack-destination", work, "--json"], REPO);
    expect(packed.status, packed.stderr).toBe(0);
    const name = (JSON.parse(packed.stdout) as { filename: string }[])[0].filename;
    tarball = join(work, name);
    const prefix = join(work, "prefix");
    const inst = await run(
      "npm",
      ["install", "--prefix", prefix, "--no-audit", "--no-fund", "--prefer-offline", tarball],
      work,
    );
    expect(inst.status, inst.stderr).toBe(0);
    bin = join(prefix, "node_modules", ".bin", "uiinspect-mcp");
    // The example policy as shipped, with the permissions a user's own copy would have.
    policy = join(work, "policy.yaml");
    copyFileSync(
      join(prefix, "node_modules/uiinspect-mcp/schema/examples/policy.linux.example.yaml"),
      policy,
    );
  }, 600_000);

  afterAll(() => {
    try {
      if (work) stopSandboxesIn(join(work, "tmp"));
    } finally {
      session?.stop();
      if (work) rmSync(work, { recursive: true, force: true });
    }
  });

  it("ships the bin executable, docs and LICENSE, and no source maps", () => {
    const list = execFileSync("tar", ["-tvzf", tarball], { encoding: "utf8" }).split("\n");
    const entry = (p: string) => list.find((l) => l.endsWith(` package/${p}`));
    expect(entry("dist/cli.js")).toMatch(/^-rwxr-xr-x/);
    for (const p of ["LICENSE", "README.md", "docs/reference.md", "docs/x11.md", "schema/policy.schema.json"])
      expect(entry(p), p).toBeDefined();
    expect(list.filter((l) => l.endsWith(".map"))).toEqual([]);
    expect(list.filter((l) => l.includes("package/docs/team/"))).toEqual([]);
    expect(readFileSync(join(work, "prefix/node_modules/uiinspect-mcp/LICENSE"), "utf8")).toMatch(
      /^MIT License/,
    );
  });

  it("npm publish --dry-run is clean", async () => {
    const r = await run("npm", ["publish", "--dry-run", "--ignore-scripts"], REPO, userEnv(), 120_000);
    expect(r.status, r.stderr).toBe(0);
    // Only the login notice of a dry run may warn; nothing about the package itself.
    const warnings = r.stderr.split("\n").filter((l) => /npm warn/i.test(l) && !/logged in/.test(l));
    expect(warnings).toEqual([]);
  }, 600_000);

  it("--version from the installed bin and from `npx TARBALL`, outside the checkout", async () => {
    const v = await run(bin, ["--version"], work);
    expect(v.status, v.stderr).toBe(0);
    expect(v.stdout.trim()).toBe(version);
    // Relative, as a user types it: npx runs an absolute path that exists as a command itself.
    const npx = await run("npx", ["--yes", `./${basename(tarball)}`, "--version"], work);
    expect(npx.status, npx.stderr).toBe(0);
    expect(npx.stdout.trim()).toBe(version);
  }, 600_000);

  it("doctor --json: usable on the X11 session with the shipped Linux policy and its app running", async () => {
    startApp("gtk3-widget-factory", []);
    await waitFor("the xterm window", async () => {
      const r = await run(
        "xdotool",
        ["search", "--onlyvisible", "--name", `^${TITLE}$`],
        work,
        userEnv(),
        10_000,
      );
      return r.status === 0 && r.stdout.trim() !== "";
    });
    const env = userEnv({ DESKTOP_AUTOMATION_POLICY_FILE: policy });
    const { r, report } = await doctor(bin, work, env);
    expect(r.status, r.stdout).toBe(0);
    expect(report.status).toBe("usable");
    expect(failed(report)).toEqual([]);
    const byId = (id: string) => report.checks.find((c) => c.id === id);
    for (const id of [
      "display",
      "window_manager",
      "xtest",
      "dbus_session",
      "atspi_bus",
      "consent_dialog",
      "policy",
    ])
      expect(byId(id)?.status, id).toBe("ok");
    expect(byId("policy_matches")?.summary).toMatch(/^matches 1 of the \d+ windows now$/);
    // Never a window title in doctor's output (this title is also the program's name, which is
    // the policy's executable and may be shown).
    expect(r.stdout.replaceAll(APP, "")).not.toContain(TITLE);
  });

  it("doctor --json: exit 1 naming DISPLAY without one (a client that clears the environment)", async () => {
    const { r, report } = await doctor(
      bin,
      work,
      userEnv({ DISPLAY: undefined, DESKTOP_AUTOMATION_POLICY_FILE: policy }),
    );
    expect(r.status).toBe(1);
    expect(report.status).toBe("unusable");
    const display = report.checks.find((c) => c.id === "display");
    expect(display).toMatchObject({ status: "fail", summary: "DISPLAY is not set" });
    expect(display?.fix).toContain("env_vars");
  });

  it("doctor --json: exit 1 naming D-Bus with a dead session bus address", async () => {
    const dead = `unix:path=${join(work, "no-bus-here")}`;
    const { r, report } = await doctor(
      bin,
      work,
      userEnv({ DBUS_SESSION_BUS_ADDRESS: dead, DESKTOP_AUTOMATION_POLICY_FILE: policy }),
    );
    expect(r.status).toBe(1);
    expect(failed(report).map((c) => c.id)).toEqual(["dbus_session"]);
    expect(failed(report)[0].summary).toMatch(/^D-Bus session bus unreachable/);
  });

  it("the README's commands as written: the tarball installed with npm install -g, the trial on the sandbox, the Inspector", async () => {
    // A user's machine: their own HOME, npm's global prefix, and that prefix's bin on PATH.
    const home = join(work, "home");
    const globalPrefix = join(work, "global");
    mkdirSync(home, { recursive: true });
    const env = userEnv({
      HOME: home,
      npm_config_prefix: globalPrefix,
      PATH: `${join(globalPrefix, "bin")}:${process.env.PATH}`,
    });
    const bash = (script: string, over: Record<string, string> = {}) =>
      run("bash", ["-euo", "pipefail", "-c", script], work, { ...env, ...over }, 600_000);
    // `npm pack` ran above (beforeAll) in the checkout; the rest of the block runs as written here.
    const install = readmeBlock("tarball")
      .split("\n")
      .filter((l) => !l.startsWith("npm pack"))
      .join("\n");
    expect(install).toContain(`./${basename(tarball)}`);
    const inst = await bash(install);
    expect(inst.status, inst.stderr).toBe(0);
    // The trial's sandbox makes its folder in TMPDIR: a step that fails ends the block (set -e)
    // before its `sandbox stop`, and afterAll stops what is left there.
    const sandboxes = join(work, "tmp");
    mkdirSync(sandboxes, { recursive: true });
    const trial = await bash(readmeBlock("trial"), { TMPDIR: sandboxes });
    expect(trial.status, `${trial.stdout}\n${trial.stderr}`).toBe(0);
    expect(trial.stdout).toContain("valid policy");
    expect(trial.stdout).toMatch(/doctor: USABLE/);
    expect(trial.stderr).toContain("sandbox: stopped");
    const inspector = await bash(readmeBlock("inspector"));
    expect(inspector.status, inspector.stderr).toBe(0);
    expect(inspector.stdout).toContain('"name": "health_check"');
    expect(inspector.stdout).toContain('"decision": "approved"');
  }, 900_000);

  it("serve --bogus exits 2 naming the flag", async () => {
    const r = await run(bin, ["serve", "--bogus"], work, userEnv(), 60_000);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("--bogus");
  });

  it("the MCP Inspector's CLI lists the tools and the allowed window from the installed copy", async () => {
    const inspector = (method: string, ...rest: string[]) =>
      run(
        "npx",
        [
          "--yes",
          "--prefer-offline",
          INSPECTOR,
          "--cli",
          bin,
          "serve",
          "--policy",
          policy,
          "--method",
          method,
          ...rest,
        ],
        work,
      );
    const tools = await inspector("tools/list");
    expect(tools.status, tools.stderr).toBe(0);
    const names = (JSON.parse(tools.stdout) as { tools: { name: string }[] }).tools.map((t) => t.name);
    for (const t of ["health_check", "list_windows", "request_access", "screenshot_window", "click_window"])
      expect(names).toContain(t);
    const windows = await inspector("tools/call", "--tool-name", "list_windows");
    expect(windows.status, windows.stderr).toBe(0);
    const listed = JSON.parse(windows.stdout) as { structuredContent: { windows: { title: string }[] } };
    expect(listed.structuredContent.windows.map((w) => w.title)).toEqual([TITLE]);
  }, 600_000);
});
