import { spawnSync } from "node:child_process";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import type { DoctorReport } from "../../src/cli/doctor.js";
import { CLI, McpHarness } from "../support/mcp.js";
import { scratchDir } from "../support/scratch.js";

const examples = resolve(import.meta.dirname, "../../schema/examples");

function run(args: string[], env: Record<string, string> = {}) {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k, v]) => v !== undefined && !k.startsWith("UIINSPECT_") && !k.startsWith("DESKTOP_AUTOMATION_"),
    ),
  ) as Record<string, string>;
  return spawnSync(process.execPath, [CLI, ...args], {
    encoding: "utf8",
    env: { ...base, ...env },
    timeout: 120_000,
  });
}

/** doctor --json's report; the DoctorReport type comes from the code it tests. */
function doctorJson(stdout: string): DoctorReport {
  return JSON.parse(stdout) as DoctorReport;
}

describe("the CLI verbs", () => {
  it("validate-policy: 0 for the examples, 1 with each reason at its field", () => {
    expect(run(["validate-policy", join(examples, "policy.example.json")]).status).toBe(0);
    expect(run(["validate-policy", join(examples, "policy.example.yaml")]).status).toBe(0);
    const dir = scratchDir("cli");
    const bad = join(dir, "bad.json");
    writeFileSync(
      bad,
      JSON.stringify({
        schema_version: 1,
        policy_id: "x",
        application: { executable_path: "/usr/bin/x", title_patterns: ["x"] },
        allowed_actions: ["teleport"],
        safe_regions: [{ name: "a", rect: [10, 0, 5, 5] }],
      }),
    );
    const r = run(["validate-policy", bad]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("allowed_actions[0]");
    expect(r.stderr).toContain("safe_regions[0].rect");
    expect(run(["validate-policy"]).status).toBe(2);
  });

  it("validate-profile: 0 for the example, 1 for a broken one", () => {
    expect(run(["validate-profile", join(examples, "profile.example.json")]).status).toBe(0);
    const dir = scratchDir("cli");
    const bad = join(dir, "p.json");
    writeFileSync(bad, JSON.stringify({ schema_version: 1, profile_id: "x" }));
    expect(run(["validate-profile", bad]).status).toBe(1);
  });

  it("doctor: usable on the simulated desktop, unusable with a broken setting, never screen content", () => {
    const ok = run(["doctor"], {
      UIINSPECT_PLATFORM: "fake",
      UIINSPECT_FAKE_DESKTOP: join(examples, "desktop.example.json"),
      DESKTOP_AUTOMATION_POLICY_FILE: join(examples, "policy.example.json"),
    });
    expect(ok.status, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/doctor: USABLE/);
    expect(ok.stdout).toMatch(/ok +platform +fake/);
    expect(ok.stdout).toMatch(/ok +policy_matches +matches 1 of the 3 windows now/);
    expect(ok.stdout).not.toContain("Ruffle - game.swf");
    const broken = run(["doctor"], {
      UIINSPECT_PLATFORM: "fake",
      UIINSPECT_MAX_DISCOVERY_PER_MINUTE: "lots",
    });
    expect(broken.status).toBe(1);
    expect(broken.stdout).toContain("UNUSABLE");
    expect(broken.stdout).toMatch(/fail +settings +UIINSPECT_MAX_DISCOVERY_PER_MINUTE/);
  });

  it("doctor --json: a broken policy, a missing policy file and no policy are each unusable, naming the path", () => {
    const dir = scratchDir("cli");
    const fake = {
      UIINSPECT_PLATFORM: "fake",
      UIINSPECT_FAKE_DESKTOP: join(examples, "desktop.example.json"),
    };
    const broken = join(dir, "broken.json");
    writeFileSync(broken, "{ not json");
    const missing = join(dir, "absent.yaml");
    for (const [args, expected] of [
      [["--policy", broken], `file ${broken}: policy_invalid`],
      [["--policy", missing], `file ${missing}: policy_unreadable`],
      [[], "no policy"],
    ] as const) {
      const r = run(["doctor", "--json", ...args], fake);
      expect(r.status, r.stderr).toBe(1);
      const report = doctorJson(r.stdout);
      expect(report.status).toBe("unusable");
      const policy = report.checks.find((c) => c.id === "policy");
      expect(policy?.status).toBe("fail");
      expect(policy?.summary).toContain(expected);
      expect(policy?.fix).toContain("--policy FILE");
    }
  });

  it("doctor warns when the policy matches no window, and fails a policy file writable by others", () => {
    const dir = scratchDir("cli");
    const policy = join(dir, "p.json");
    writeFileSync(
      policy,
      JSON.stringify({
        schema_version: 1,
        policy_id: "nothing",
        application: { executable_path: "/usr/bin/none", title_patterns: ["never *"] },
        allowed_actions: ["observe"],
      }),
      { mode: 0o600 },
    );
    chmodSync(policy, 0o600);
    const env = { UIINSPECT_FAKE_DESKTOP: join(examples, "desktop.example.json") };
    const r = run(["doctor", "--json", "--platform", "fake", "--policy", policy], env);
    expect(r.status, r.stdout).toBe(0);
    const checks = doctorJson(r.stdout).checks;
    const byId = (id: string) => checks.find((c) => c.id === id);
    expect(byId("policy_matches")).toMatchObject({
      status: "warn",
      summary: "matches none of the 3 windows now",
    });
    expect(byId("policy_permissions")?.status).toBe("ok");
    expect(byId("policy_regions")?.status).toBe("warn");
    // StrictModes: a policy others can write is refused, and doctor names the file and the bits.
    chmodSync(policy, 0o666);
    const insecure = run(["doctor", "--json", "--platform", "fake", "--policy", policy], env);
    expect(insecure.status, insecure.stdout).toBe(1);
    const p = doctorJson(insecure.stdout).checks.find((c) => c.id === "policy");
    expect(p?.status).toBe("fail");
    expect(p?.summary).toContain("policy_insecure");
    expect(p?.summary).toContain("writable by group and others");
  });

  it("doctor fails the lease check when the lease is on but no broker answers", () => {
    const r = run(["doctor", "--json"], {
      UIINSPECT_PLATFORM: "fake",
      UIINSPECT_FAKE_DESKTOP: join(examples, "desktop.example.json"),
      DESKTOP_AUTOMATION_POLICY_FILE: join(examples, "policy.example.json"),
      UIINSPECT_LEASE: "broker",
      XDG_RUNTIME_DIR: scratchDir("nobroker"),
    });
    expect(r.status, r.stdout).toBe(1);
    const checks = doctorJson(r.stdout).checks;
    const lease = checks.find((c) => c.id === "lease_broker");
    expect(lease?.status).toBe("fail");
    expect(lease?.fix).toContain("manager lease activate");
  });

  it("doctor checks the audit file's folder", () => {
    const r = run(["doctor", "--json", "--audit-file", "/nonexistent-dir/audit.jsonl"], {
      UIINSPECT_PLATFORM: "fake",
      UIINSPECT_FAKE_DESKTOP: join(examples, "desktop.example.json"),
      DESKTOP_AUTOMATION_POLICY_FILE: join(examples, "policy.example.json"),
    });
    expect(r.status).toBe(1);
    const checks = doctorJson(r.stdout).checks;
    expect(checks.find((c) => c.id === "audit_file")).toMatchObject({ status: "fail" });
  });

  it("--version, --help and per-verb help; unknown flags and bad values exit 2 naming the flag", () => {
    const pkg = JSON.parse(readFileSync(resolve(import.meta.dirname, "../../package.json"), "utf8")) as {
      version: string;
    };
    const v = run(["--version"]);
    expect(v.status).toBe(0);
    expect(v.stdout.trim()).toBe(pkg.version);
    const help = run(["--help"]);
    expect(help.status).toBe(0);
    for (const verb of ["serve", "doctor", "validate-policy", "manager"]) expect(help.stdout).toContain(verb);
    for (const args of [
      ["serve", "--help"],
      ["help", "serve"],
    ]) {
      const r = run(args);
      expect(r.status).toBe(0);
      expect(r.stdout).toContain("usage: uiinspect-mcp serve");
      expect(r.stdout).toContain("--policy FILE");
      expect(r.stdout).toContain("DESKTOP_AUTOMATION_POLICY_FILE");
    }
    for (const [args, named] of [
      [["serve", "--port", "8931", "--bogus"], "--port"],
      [["serve", "--bogus"], "--bogus"],
      [["doctor", "--isolation", "fork"], "--isolation must be one of thread, process"],
      [["doctor", "--log-level", "loud"], "--log-level"],
      [["validate-policy", "a", "b"], 'unexpected argument "b"'],
      [["manager", "lease", "status", "--force"], "--force"],
    ] as const) {
      const r = run([...args]);
      expect(r.status, args.join(" ")).toBe(2);
      expect(r.stderr).toContain(named);
      expect(r.stdout).toBe("");
    }
  });

  it("a flag wins over its environment variable", () => {
    const r = run(["doctor", "--json", "--platform", "fake", "--isolation", "process"], {
      UIINSPECT_WORKER_ISOLATION: "thread",
      UIINSPECT_FAKE_DESKTOP: join(examples, "desktop.example.json"),
      DESKTOP_AUTOMATION_POLICY_FILE: join(examples, "policy.example.json"),
    });
    expect(r.status, r.stdout).toBe(0);
    expect(r.stdout).toContain("isolation process");
  });

  it("a closed stdout (doctor | head -1) ends the verb quietly", () => {
    const r = spawnSync(
      "sh",
      ["-c", `"${process.execPath}" "${CLI}" doctor --platform fake | true; exit 0`],
      {
        encoding: "utf8",
        env: { ...process.env, UIINSPECT_FAKE_DESKTOP: join(examples, "desktop.example.json") },
        timeout: 120_000,
      },
    );
    expect(r.status).toBe(0);
    expect(r.stderr).not.toContain("EPIPE");
    expect(r.stderr).not.toContain("Error");
  });

  it("demo walks list → consent (simulated) → inspect → screenshot → invoke → click → key", () => {
    // Its scenario folder (kept on purpose: the demo prints the effects file's path) goes into
    // this file's scratch folder, removed with it.
    const r = run(["demo"], { TMPDIR: scratchDir("demo") });
    expect(r.status, r.stderr).toBe(0);
    for (const step of [
      "list_windows",
      "SIMULATED",
      "inspect_tree",
      "screenshot_window",
      "invoked",
      "clicked",
      "pressed enter",
    ])
      expect(r.stdout).toContain(step);
    expect(r.stdout).toContain("[password]");
  });

  it("an unknown verb prints the usage and exits 2", () => {
    const r = run(["frobnicate"]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('unknown verb "frobnicate"');
    expect(r.stderr).toContain("usage: uiinspect-mcp");
  });

  it("serve at the default log level writes nothing to stderr on a normal start and call", async () => {
    const h = await McpHarness.start({
      UIINSPECT_LOG_LEVEL: "info",
      UIINSPECT_PLATFORM: "fake",
      UIINSPECT_FAKE_DESKTOP: join(examples, "desktop.example.json"),
      DESKTOP_AUTOMATION_POLICY_FILE: join(examples, "policy.example.json"),
    });
    try {
      expect((await h.ok("health_check")).status).toBe("ok");
      expect((await h.ok("list_windows")).windows).toHaveLength(1);
    } finally {
      await h.close();
    }
    // Clients show a server's stderr lines as errors: the start-up line is debug-level.
    expect(h.stderr.join("")).toBe("");
  });

  it.skipIf(process.platform !== "linux")(
    "without DISPLAY: calls and health_check name the variable; doctor prints no log line, and its Codex hint passes XAUTHORITY",
    async () => {
      const env = {
        UIINSPECT_PLATFORM: "x11",
        DESKTOP_AUTOMATION_ALLOWED_TITLES: "*",
        DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS: "/usr/bin/xterm",
        DESKTOP_AUTOMATION_ALLOWED_ACTIONS: "observe",
      };
      const saved = process.env.DISPLAY;
      delete process.env.DISPLAY;
      let h: McpHarness;
      try {
        h = await McpHarness.start(env);
      } finally {
        if (saved !== undefined) process.env.DISPLAY = saved;
      }
      try {
        const r = await h.call("list_windows");
        expect(r.code).toBe("platform_unavailable");
        expect(JSON.stringify(r.structured)).toContain("DISPLAY is not set");
        const hc = await h.ok("health_check");
        expect(hc.status).toBe("unusable");
        expect(JSON.stringify(hc.platform_facts)).toContain("DISPLAY is not set");
      } finally {
        await h.close();
      }
      const base = Object.fromEntries(
        Object.entries(process.env).filter(([k]) => k !== "DISPLAY" && !k.startsWith("UIINSPECT_")),
      ) as Record<string, string>;
      const doc = spawnSync(process.execPath, [CLI, "doctor"], {
        encoding: "utf8",
        env: { ...base, ...env },
        timeout: 120_000,
      });
      expect(doc.status).toBe(1);
      // Its report only: no raw JSON log line before or after it.
      for (const line of `${doc.stdout}${doc.stderr}`.split("\n")) expect(line).not.toMatch(/^\{"level"/);
      expect(doc.stdout).toMatch(/^uiinspect-mcp \S+ doctor: UNUSABLE/);
      expect(doc.stdout).toContain('env_vars = ["DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "XAUTHORITY"]');
    },
  );

  it("the example policies for Linux and Windows validate", () => {
    for (const f of ["policy.linux.example.yaml", "policy.windows.example.json"]) {
      const r = run(["validate-policy", join(examples, f)]);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/safe regions: [1-9], screenshot masks: [1-9]/);
    }
  });
});
