import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildDialogContent } from "../../src/supervisor/consent/content.js";
import { interpreterOf } from "../../src/supervisor/policy/interpreters.js";
import { validatePolicyFile } from "../../src/supervisor/policy/validateCli.js";
import { basePolicy } from "../policy/helpers.js";
import { scratchDir } from "../support/scratch.js";

/** An interpreter as the allowed executable is said plainly, in the dialog and by validate-policy. */

const dir = scratchDir("interp");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const dialog = (exe_path: string) =>
  buildDialogContent({
    instance: { pid: 4242, start_time: "2026-12-01T08:00:00.000Z", exe_path, session: "1" },
    capabilities: ["observe", "click"],
    clientLabel: "test client",
    expiresAt: Date.parse("2026-12-01T09:00:00Z"),
  });

describe("known interpreters and runtimes", () => {
  it.each([
    ["/usr/bin/python3", "Python"],
    ["/usr/bin/python3.11", "Python"],
    ["C:\\Python312\\pythonw.exe", "Python"],
    ["/usr/local/bin/node", "Node.js"],
    ["C:\\Program Files\\nodejs\\NODE.EXE", "Node.js"],
    ["/usr/lib/jvm/java-17/bin/java", "Java"],
    ["C:\\Program Files\\Java\\bin\\javaw.exe", "Java"],
    ["/usr/bin/perl", "Perl"],
    ["/usr/bin/ruby3.1", "Ruby"],
    ["/usr/lib/wine/wine64-preloader", "Wine (Windows programs)"],
    ["/opt/app/electron", "Electron"],
    ["/bin/bash", "a command shell"],
  ])("%s is %s", (path, runtime) => {
    expect(interpreterOf(path)).toBe(runtime);
    const d = dialog(path);
    const warning = `This program is an interpreter (${runtime}): the approval covers every program it runs, not one application.`;
    expect(d.interpreter_warning).toBe(warning);
    expect(d.text).toContain(`WARNING: ${warning}`);
  });

  it.each([
    "/usr/bin/gtk3-widget-factory",
    "C:\\Program Files\\ruffle\\bin\\ruffle.exe",
    "/usr/bin/xterm",
    "/usr/bin/nodepad",
    "/usr/bin/pythonic-app",
  ])("%s is no interpreter: no warning", (path) => {
    expect(interpreterOf(path)).toBeNull();
    expect(dialog(path).interpreter_warning).toBeUndefined();
    expect(dialog(path).text).not.toContain("WARNING");
  });

  it("validate-policy warns for an interpreter and not otherwise", () => {
    const write = (exe: string) => {
      const p = join(dir, `${Math.random().toString(36).slice(2)}.json`);
      const base = basePolicy() as { application: Record<string, unknown> };
      writeFileSync(
        p,
        JSON.stringify({ ...base, application: { ...base.application, executable_path: exe } }),
      );
      return p;
    };
    const py = validatePolicyFile(write("/usr/bin/python3"));
    expect(py.ok).toBe(true);
    expect(py.lines).toContain(
      "  warning: This program is an interpreter (Python): the approval covers every program it runs, not one application.",
    );
    const app = validatePolicyFile(write("/usr/bin/ruffle"));
    expect(app.lines.join("\n")).not.toContain("warning");
  });
});
