import { describe, expect, it } from "vitest";
import {
  DEFAULT_LIMITS,
  loadPolicy,
  type PolicyState,
  policyStatusAt,
} from "../../src/supervisor/policy/load.js";
import { basePolicy, tempFiles } from "./helpers.js";

const file = tempFiles();
const at = (iso: string) => () => new Date(iso);
const NOW = at("2026-11-30T10:00:00Z");

function ok(state: PolicyState) {
  if (state.status !== "ok") throw new Error(`expected ok, got ${JSON.stringify(state)}`);
  return state.policy;
}

function policyFile(mutate: (p: Record<string, unknown>) => void = () => {}): string {
  const p = basePolicy();
  mutate(p);
  return file(`p-${Math.random().toString(36).slice(2)}.json`, JSON.stringify(p));
}

describe("sources", () => {
  it("no source is status none, even with stray limit variables", () => {
    expect(loadPolicy({}, NOW)).toEqual({ status: "none" });
    expect(
      loadPolicy(
        { DESKTOP_AUTOMATION_ALLOWED_TITLES: "  ", DESKTOP_AUTOMATION_MAX_ACTIONS_PER_MINUTE: "x" },
        NOW,
      ),
    ).toEqual({
      status: "none",
    });
  });

  it("actions or paths without titles do not make an env policy", () => {
    expect(loadPolicy({ DESKTOP_AUTOMATION_ALLOWED_ACTIONS: "click" }, NOW)).toEqual({ status: "none" });
  });

  it("file plus env policy is policy_conflict, never merged", () => {
    const path = policyFile();
    const s = loadPolicy(
      { DESKTOP_AUTOMATION_POLICY_FILE: path, DESKTOP_AUTOMATION_ALLOWED_TITLES: "*" },
      NOW,
    );
    expect(s.status === "error" && s.code).toBe("policy_conflict");
  });

  it("file plus a stray ALLOWED_ACTIONS or PROCESS_PATHS is also policy_conflict", () => {
    const path = policyFile();
    for (const extra of ["DESKTOP_AUTOMATION_ALLOWED_ACTIONS", "DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS"]) {
      const s = loadPolicy({ DESKTOP_AUTOMATION_POLICY_FILE: path, [extra]: "click" }, NOW);
      expect(s).toEqual({
        status: "error",
        code: "policy_conflict",
        reasons: [
          `${extra} is set together with DESKTOP_AUTOMATION_POLICY_FILE; use exactly one policy source`,
        ],
        source: "file+env",
      });
    }
  });

  it("conflict is decided before the file is read", () => {
    const s = loadPolicy(
      { DESKTOP_AUTOMATION_POLICY_FILE: "/nonexistent.json", DESKTOP_AUTOMATION_ALLOWED_TITLES: "x" },
      NOW,
    );
    expect(s.status === "error" && s.code).toBe("policy_conflict");
  });
});

describe("env mode", () => {
  it("builds the policy with defaults and deny-by-default actions", () => {
    const p = ok(loadPolicy({ DESKTOP_AUTOMATION_ALLOWED_TITLES: "Ruffle - *, Notepad" }, NOW));
    expect(p.source).toBe("env");
    expect(p.policy_id).toBeNull();
    expect(p.expires_at).toBeNull();
    expect(p.title_patterns).toEqual(["Ruffle - *", "Notepad"]);
    expect(p.process_paths).toEqual([]);
    expect([...p.allowed_actions]).toEqual([]);
    expect([...p.protected_actions].sort()).toEqual(["close", "drag", "text"]);
    expect(p.limits).toEqual(DEFAULT_LIMITS);
    expect(DEFAULT_LIMITS).toEqual({
      max_png_bytes: 8 * 1024 * 1024,
      max_actions_per_minute: 120,
      max_text_chars_per_minute: 20000,
      max_screenshot_pixels_per_minute: 67108864,
    });
    expect(p.allow_unrestricted_screenshots).toBe(false);
  });

  it("parses actions, normalized process paths, limits and the screenshot flag", () => {
    const p = ok(
      loadPolicy(
        {
          DESKTOP_AUTOMATION_ALLOWED_TITLES: "Ruffle - *",
          DESKTOP_AUTOMATION_ALLOWED_ACTIONS: " observe,click ,, key",
          DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS:
            "C:/Program Files/Ruffle/bin/../bin/ruffle.exe; /usr/bin/ruffle",
          DESKTOP_AUTOMATION_MAX_ACTIONS_PER_MINUTE: "30",
          DESKTOP_AUTOMATION_MAX_TEXT_CHARS_PER_MINUTE: "100",
          DESKTOP_AUTOMATION_MAX_SCREENSHOT_PIXELS_PER_MINUTE: "1000000",
          DESKTOP_AUTOMATION_ALLOW_UNRESTRICTED_SCREENSHOTS: "TRUE",
        },
        NOW,
      ),
    );
    expect([...p.allowed_actions]).toEqual(["observe", "click", "key"]);
    expect(p.process_paths).toEqual(["c:\\program files\\ruffle\\bin\\ruffle.exe", "/usr/bin/ruffle"]);
    expect(p.limits).toEqual({
      max_png_bytes: DEFAULT_LIMITS.max_png_bytes,
      max_actions_per_minute: 30,
      max_text_chars_per_minute: 100,
      max_screenshot_pixels_per_minute: 1000000,
    });
    expect(p.allow_unrestricted_screenshots).toBe(true);
  });

  it("an unknown action name is policy_invalid naming it", () => {
    const s = loadPolicy(
      {
        DESKTOP_AUTOMATION_ALLOWED_TITLES: "*",
        DESKTOP_AUTOMATION_ALLOWED_ACTIONS: "click,Click,screenshot",
      },
      NOW,
    );
    expect(s.status === "error" && s.code).toBe("policy_invalid");
    expect(s.status === "error" && s.reasons).toEqual([
      'DESKTOP_AUTOMATION_ALLOWED_ACTIONS: unknown action "Click" (known: observe, inspect, hover, click, interact, key, text, close, drag)',
      'DESKTOP_AUTOMATION_ALLOWED_ACTIONS: unknown action "screenshot" (known: observe, inspect, hover, click, interact, key, text, close, drag)',
    ]);
  });

  it.each(["0", "-1", "1.5", "1e3", "abc", "12abc", "99999999999999999999"])(
    "bad number %j is policy_invalid",
    (v) => {
      const s = loadPolicy(
        { DESKTOP_AUTOMATION_ALLOWED_TITLES: "*", DESKTOP_AUTOMATION_MAX_ACTIONS_PER_MINUTE: v },
        NOW,
      );
      expect(s).toEqual({
        status: "error",
        code: "policy_invalid",
        reasons: ["DESKTOP_AUTOMATION_MAX_ACTIONS_PER_MINUTE: must be a positive whole number"],
        source: "env",
      });
    },
  );

  it("collects every problem at once", () => {
    const s = loadPolicy(
      {
        DESKTOP_AUTOMATION_ALLOWED_TITLES: ",",
        DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS: "ruffle.exe",
        DESKTOP_AUTOMATION_ALLOW_UNRESTRICTED_SCREENSHOTS: "yes",
        DESKTOP_AUTOMATION_MAX_TEXT_CHARS_PER_MINUTE: "lots",
      },
      NOW,
    );
    expect(s.status === "error" && s.reasons).toEqual([
      "DESKTOP_AUTOMATION_MAX_TEXT_CHARS_PER_MINUTE: must be a positive whole number",
      "DESKTOP_AUTOMATION_ALLOWED_TITLES: contains no title pattern",
      'DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS: "ruffle.exe" is not a full (absolute) path',
      "DESKTOP_AUTOMATION_ALLOW_UNRESTRICTED_SCREENSHOTS: must be true or false",
    ]);
  });
});

describe("file mode", () => {
  it("builds the effective policy: protected set only grows, masks resolved, limits overridden per field", () => {
    const path = policyFile((p) => {
      p.protected_actions = ["click"];
      p.safe_regions = [{ name: "chat", rect: [600, 40, 800, 600], description: "chat" }];
      p.screenshot_masks = [{ region_name: "chat" }, { rect: [0, 0, 10, 10] }];
      p.limits = { max_png_bytes: 1000, max_actions_per_minute: 10 };
      p.expires_at = "2026-12-01T00:00:00+01:00";
    });
    const p = ok(
      loadPolicy(
        {
          DESKTOP_AUTOMATION_POLICY_FILE: path,
          DESKTOP_AUTOMATION_MAX_TEXT_CHARS_PER_MINUTE: "50",
          DESKTOP_AUTOMATION_ALLOW_UNRESTRICTED_SCREENSHOTS: "true",
        },
        NOW,
      ),
    );
    expect(p.source).toBe("file");
    expect(p.policy_id).toBe("test-1");
    expect(p.expires_at?.toISOString()).toBe("2026-11-30T23:00:00.000Z");
    expect(p.process_paths).toEqual(["c:\\program files\\ruffle\\bin\\ruffle.exe"]);
    expect([...p.allowed_actions]).toEqual(["observe", "click"]);
    expect([...p.protected_actions].sort()).toEqual(["click", "close", "drag", "text"]);
    expect(p.safe_regions).toEqual([{ name: "chat", rect: [600, 40, 800, 600], description: "chat" }]);
    expect(p.screenshot_masks).toEqual([
      [600, 40, 800, 600],
      [0, 0, 10, 10],
    ]);
    expect(p.limits).toEqual({
      max_png_bytes: 1000,
      max_actions_per_minute: 10,
      max_text_chars_per_minute: 50,
      max_screenshot_pixels_per_minute: DEFAULT_LIMITS.max_screenshot_pixels_per_minute,
    });
    expect(p.allow_unrestricted_screenshots).toBe(false);
  });

  it("an invalid file is policy_invalid with reasons", () => {
    const path = policyFile((p) => {
      p.allowed_actions = ["teleport"];
    });
    const s = loadPolicy({ DESKTOP_AUTOMATION_POLICY_FILE: path }, NOW);
    expect(s.status === "error" && s.code).toBe("policy_invalid");
    expect(s.status === "error" && s.reasons[0]).toMatch(/^allowed_actions\[0\]: unknown action "teleport"/);
  });

  it("a missing file is policy_unreadable", () => {
    const s = loadPolicy({ DESKTOP_AUTOMATION_POLICY_FILE: "/nonexistent/policy.yaml" }, NOW);
    expect(s.status === "error" && s.code).toBe("policy_unreadable");
  });

  it("bad env limits still count in file mode", () => {
    const s = loadPolicy(
      {
        DESKTOP_AUTOMATION_POLICY_FILE: policyFile(),
        DESKTOP_AUTOMATION_MAX_SCREENSHOT_PIXELS_PER_MINUTE: "0",
      },
      NOW,
    );
    expect(s.status === "error" && s.code).toBe("policy_invalid");
  });
});

describe("expiry", () => {
  const path = policyFile((p) => {
    p.expires_at = "2026-11-30T12:00:00Z";
  });

  it("a policy already expired at load is policy_expired", () => {
    const s = loadPolicy({ DESKTOP_AUTOMATION_POLICY_FILE: path }, at("2026-11-30T12:00:01Z"));
    expect(s).toEqual({
      status: "error",
      code: "policy_expired",
      reasons: ["expires_at: the policy expired at 2026-11-30T12:00:00.000Z"],
      source: "file",
    });
  });

  it("is re-checked on every call as the injected clock moves, the expiry instant included", () => {
    let now = new Date("2026-11-30T11:59:59.999Z");
    const clock = () => now;
    const state = loadPolicy({ DESKTOP_AUTOMATION_POLICY_FILE: path }, clock);
    expect(policyStatusAt(state, clock).status).toBe("ok");
    now = new Date("2026-11-30T12:00:00.000Z");
    const later = policyStatusAt(state, clock);
    expect(later.status === "error" && later.code).toBe("policy_expired");
    // The loaded state itself is untouched: going back in time (a test clock) sees it ok again.
    now = new Date("2026-11-30T11:00:00Z");
    expect(policyStatusAt(state, clock).status).toBe("ok");
  });

  it("an invalid clock reading fails closed", () => {
    const state = loadPolicy({ DESKTOP_AUTOMATION_POLICY_FILE: path }, NOW);
    const s = policyStatusAt(state, () => new Date(Number.NaN));
    expect(s.status === "error" && s.code).toBe("policy_expired");
  });

  it("passes none, errors and policies without expiry through", () => {
    const env = ok(loadPolicy({ DESKTOP_AUTOMATION_ALLOWED_TITLES: "*" }, NOW));
    const far = at("2999-01-01T00:00:00Z");
    expect(policyStatusAt({ status: "ok", policy: env }, far).status).toBe("ok");
    expect(policyStatusAt({ status: "none" }, far)).toEqual({ status: "none" });
    const err: PolicyState = { status: "error", code: "policy_invalid", reasons: ["x"], source: "file" };
    expect(policyStatusAt(err, far)).toBe(err);
  });
});
