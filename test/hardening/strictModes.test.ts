import { execFileSync } from "node:child_process";
import { chmodSync, chownSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadPolicy } from "../../src/supervisor/policy/load.js";
import { readPolicyFile } from "../../src/supervisor/policy/parse.js";
import { checkPolicyPath } from "../../src/supervisor/policy/strictModes.js";
import { validatePolicyFile } from "../../src/supervisor/policy/validateCli.js";
import { basePolicy } from "../policy/helpers.js";
import { scratchDir } from "../support/scratch.js";

/**
 * A policy file another account can rewrite is not obeyed (sshd's StrictModes).
 * The other account is real: `nobody`, through setpriv, rewriting a mode-0666 policy.
 */

const NOBODY = 65534;
const asRoot = process.geteuid?.() === 0;
const hasSetpriv = (() => {
  try {
    execFileSync("setpriv", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

const root = scratchDir("strict");
chmodSync(root, 0o755); // the other uid must reach the file to rewrite it
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
function folder(mode = 0o755): string {
  const d = join(root, `d${n++}`);
  mkdirSync(d);
  chmodSync(d, mode);
  return d;
}
function policyFile(dir: string, mode = 0o644, body: Record<string, unknown> = basePolicy()): string {
  const p = join(dir, "policy.json");
  writeFileSync(p, JSON.stringify(body));
  chmodSync(p, mode);
  return p;
}
const NOW = () => new Date("2026-12-01T00:00:00Z");

describe("StrictModes for the policy file", () => {
  it("a 0644 file in 0755 folders (and under the sticky /tmp) is obeyed", () => {
    const p = policyFile(folder());
    expect(checkPolicyPath(p).ok).toBe(true);
    expect(readPolicyFile(p).ok).toBe(true);
  });

  it.runIf(asRoot && hasSetpriv)(
    "a 0666 policy rewritten by another uid (nobody) is refused with policy_insecure, naming the file and the bit",
    () => {
      const p = policyFile(folder(), 0o666, { ...basePolicy(), allowed_actions: ["observe"] });
      // nobody rewrites it to grant text, close and drag.
      const granted = JSON.stringify({
        ...basePolicy(),
        allowed_actions: ["observe", "text", "close", "drag"],
      });
      execFileSync(
        "setpriv",
        [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", "sh", "-c", `cat > '${p}'`],
        {
          input: granted,
        },
      );
      const state = loadPolicy({ DESKTOP_AUTOMATION_POLICY_FILE: p }, NOW);
      expect(state).toEqual({
        status: "error",
        code: "policy_insecure",
        source: "file",
        reasons: [`${p}: writable by group and others (mode 0666); fix: chmod go-w ${p}`],
      });
      const v = validatePolicyFile(p, NOW);
      expect(v.ok).toBe(false);
      expect(v.lines).toEqual([
        "insecure policy file (policy_insecure):",
        `  ${p}: writable by group and others (mode 0666); fix: chmod go-w ${p}`,
      ]);
    },
  );

  it.runIf(asRoot)("a file or folder owned by another uid is refused", () => {
    const d = folder();
    const p = policyFile(d);
    chownSync(p, NOBODY, NOBODY);
    expect(checkPolicyPath(p)).toEqual({
      ok: false,
      insecure: true,
      reasons: [`${p}: owned by uid ${NOBODY}, not by this user (uid 0) or root`],
    });
    const d2 = folder();
    const p2 = policyFile(d2);
    chownSync(d2, NOBODY, NOBODY);
    expect(checkPolicyPath(p2)).toMatchObject({
      insecure: true,
      reasons: [`${d2}: folder owned by uid ${NOBODY}, not by this user (uid 0) or root`],
    });
  });

  it("group-writable file, world-writable folder without the sticky bit, and a symlink through one", () => {
    const p = policyFile(folder(), 0o664);
    expect(checkPolicyPath(p)).toMatchObject({
      reasons: [`${p}: writable by group (mode 0664); fix: chmod go-w ${p}`],
    });
    const open = folder(0o777);
    const p2 = policyFile(open);
    expect(readPolicyFile(p2)).toEqual({
      ok: false,
      code: "policy_insecure",
      reasons: [`${open}: folder writable by group and others (mode 0777); fix: chmod go-w ${open}`],
    });
    // A safe-looking path whose symlink leads into the writable folder is refused too.
    const safe = folder();
    symlinkSync(p2, join(safe, "link.json"));
    expect(checkPolicyPath(join(safe, "link.json"))).toMatchObject({
      reasons: [`${open}: folder writable by group and others (mode 0777); fix: chmod go-w ${open}`],
    });
    // And a symlink that itself lives in a writable folder (anyone could retarget it).
    const good = policyFile(folder());
    symlinkSync(good, join(open, "link.json"));
    expect(checkPolicyPath(join(open, "link.json"))).toMatchObject({
      reasons: [`${open}: folder writable by group and others (mode 0777); fix: chmod go-w ${open}`],
    });
  });

  it.runIf(asRoot)("in a sticky shared folder, an entry owned by another uid is refused", () => {
    const shared = folder(0o1777);
    const p = policyFile(shared);
    expect(checkPolicyPath(p).ok).toBe(true);
    chownSync(p, NOBODY, NOBODY);
    expect(checkPolicyPath(p)).toMatchObject({ insecure: true });
  });

  it("missing files and folders are still policy_unreadable", () => {
    expect(readPolicyFile(join(root, "missing", "policy.json"))).toMatchObject({ code: "policy_unreadable" });
  });
});
