import { describe, expect, it } from "vitest";
import { parseCommandLine } from "../../src/cli/args.js";

describe("the command-line table", () => {
  it("no verb, or flags first, is serve; settings flags become their variables, paths absolute", () => {
    expect(parseCommandLine([])).toMatchObject({ kind: "run", verb: "serve", env: {} });
    const r = parseCommandLine(["--policy", "rel/p.yaml", "--isolation", "Process"]);
    expect(r).toMatchObject({ kind: "run", verb: "serve" });
    if (r.kind !== "run") throw new Error("not run");
    expect(r.env.DESKTOP_AUTOMATION_POLICY_FILE).toMatch(/^\/.*\/rel\/p\.yaml$/);
    expect(r.env.UIINSPECT_WORKER_ISOLATION).toBe("process");
  });

  it("a forward verb gets its own flags back as argv; others get none", () => {
    const m = parseCommandLine(["manager", "lease", "activate", "--hours=5"]);
    expect(m).toMatchObject({ kind: "run", positionals: ["lease", "activate"], forwarded: ["--hours", "5"] });
    const d = parseCommandLine(["doctor", "--json"]);
    expect(d).toMatchObject({ kind: "run", verb: "doctor", forwarded: [] });
  });

  it("usage errors name the flag or argument; help and version are their own kinds", () => {
    expect(parseCommandLine(["serve", "--bogus"])).toMatchObject({
      kind: "usage_error",
      message: "Unknown option '--bogus'",
      verb: "serve",
    });
    expect(parseCommandLine(["doctor", "--policy"])).toMatchObject({ kind: "usage_error", verb: "doctor" });
    expect(parseCommandLine(["validate-policy"])).toMatchObject({
      kind: "usage_error",
      message: "missing argument",
    });
    expect(parseCommandLine(["demo", "--policy", "x"])).toMatchObject({ kind: "usage_error" });
    expect(parseCommandLine(["--version"])).toEqual({ kind: "version" });
    expect(parseCommandLine(["help", "doctor"])).toMatchObject({ kind: "help" });
    expect(parseCommandLine(["help", "nope"])).toMatchObject({ kind: "usage_error", verb: null });
  });
});
