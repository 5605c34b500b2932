import { afterAll, describe, expect, it } from "vitest";
import { InProcessHarness } from "../support/inProcess.js";
import { FakeDesktop, filePolicy, LOOSE_BUDGETS, ruffleWindow } from "../support/mcp.js";

/**
 * Every message that echoes a client value cuts it (64 code points, escaped). A 1 MB
 * value anywhere in the arguments must come back as a short answer, not a 2 MB one.
 */

const MB = "x".repeat(1024 * 1024);
/** A value with control characters and an astral character past the cut. */
const NASTY = `a\nb\u0000c\u2028${"é".repeat(100)}😀`;

let h: InProcessHarness | null = null;
afterAll(async () => {
  await h?.close();
});

describe("1 MB client values", () => {
  it("never make an answer grow past a few KB, and nothing is echoed raw", async () => {
    const d = new FakeDesktop({
      session: 1,
      foreground: 1001,
      windows: [ruffleWindow()],
      consent: { answer: "approve" },
    });
    h = await InProcessHarness.start({
      UIINSPECT_PLATFORM: "fake",
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy({ profiles_dir: d.dir })),
      ...LOOSE_BUDGETS,
    });
    await h.ok("request_access", { hwnd: 1001 });
    const calls: Array<[string, Record<string, unknown>]> = [
      ["list_windows", { [MB]: 1 }],
      ["list_windows", { [`${MB}a`]: 1, [`${MB}b`]: 2, [`${MB}c`]: 3, [`${MB}d`]: 4 }],
      ["request_confirmation", { hwnd: 1001, action_class: MB }],
      ["preview_action", { hwnd: 1001, action_class: MB }],
      ["screenshot_window", { hwnd: 1001, region_name: MB }],
      ["screenshot_window", { title_contains: MB }],
      ["get_window_state", { hwnd: MB }],
      ["send_key", { hwnd: 1001, key: MB }],
      ["send_text", { hwnd: 1001, text: MB }],
      ["invoke_element", { ref: MB }],
      ["set_element_value", { ref: MB, value: MB }],
      ["resolve_coordinate_profile_point", { profile_path: MB, region_name: "a" }],
      ["resolve_coordinate_profile_point", { profile_path: "p.json", region_name: MB }],
      [
        "record_coordinate_profile",
        {
          hwnd: 1001,
          profile_id: MB,
          reference_region_name: "stage",
          safe_regions: [],
          verification_points: [],
        },
      ],
      ["get_audit_events", { limit: MB }],
      [MB, {}],
      ["list_windows", { [NASTY]: 1 }],
    ];
    for (const [name, args] of calls) {
      const r = await h.call(name, args);
      const size = JSON.stringify(r.structured).length + JSON.stringify(r.content).length;
      expect(r.isError, name).toBe(true);
      expect(size, `${name.slice(0, 40)} answered ${size} chars`).toBeLessThan(4096);
      expect(JSON.stringify(r)).not.toContain("x".repeat(65));
    }
    const nasty = await h.call("list_windows", { [NASTY]: 1 });
    const message = (nasty.structured.error as { message: string }).message;
    // Escaped (no raw control or separator characters) and cut after 64 code points.
    expect([...message].some((c) => c.charCodeAt(0) < 0x20 || c === "\u2028")).toBe(false);
    expect(message).toContain("\\n");
    expect(message).toContain("…");
    expect(message).not.toContain("😀");
    expect(nasty.code).toBe("invalid_argument");
    // The server is unharmed.
    expect((await h.ok("list_windows")).windows).toHaveLength(1);
  });
});
