import { Ajv } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { A11yNodeSchema } from "../../src/shared/protocol.js";
import { fullAnnotations, listTools } from "../../src/supervisor/mcp/server.js";
import { loadPolicy, type PolicyState } from "../../src/supervisor/policy/load.js";
import { CAPABILITIES, type Capability } from "../../src/supervisor/policy/schema.js";
import { toolsForPolicy } from "../../src/supervisor/tools/availability.js";
import { TOOLS, TOOLS_BY_NAME } from "../../src/supervisor/tools/index.js";

// Clients validate with whatever JSON Schema draft they run: the listing must mean the
// same to a draft-07 validator (ajv's default, used by many MCP clients) and to 2020-12.
const validators = { "draft-07": new Ajv({ strict: false }), "2020-12": new Ajv2020({ strict: false }) };

const INPUT_CAPS = new Set<string | null>(["hover", "click", "interact", "key", "text", "close", "drag"]);
const DESTRUCTIVE_TOOLS = [
  "send_text",
  "send_key",
  "send_key_sequence",
  "drag_window",
  "close_window",
  "set_element_value",
  "invoke_element",
  "toggle_element",
  "select_element",
  "select_option",
  "click_window",
  "double_click_window",
  "right_click_window",
  "click_element",
];

function okPolicy(actions: Capability[], env: Record<string, string> = {}): PolicyState {
  const state = loadPolicy(
    { DESKTOP_AUTOMATION_ALLOWED_TITLES: "*", DESKTOP_AUTOMATION_ALLOWED_ACTIONS: actions.join(","), ...env },
    () => new Date(),
  );
  expect(state.status).toBe("ok");
  return state;
}

describe("tool listing derived from the table", () => {
  const tools = listTools();

  it("has one entry per table row with annotations that tell the truth", () => {
    expect(tools.map((t) => t.name)).toEqual(TOOLS.map((t) => t.name));
    expect(new Set(tools.map((t) => t.name)).size).toBe(tools.length);
    for (const t of tools) {
      const def = TOOLS_BY_NAME.get(t.name)!;
      // Hints equal to MCP's defaults are left out; read back with the defaults filled in.
      const a = fullAnnotations(t);
      expect(t.inputSchema.type).toBe("object");
      expect(a.openWorldHint, t.name).toBe(INPUT_CAPS.has(def.capability));
      if (a.readOnlyHint) expect(a.destructiveHint, t.name).toBe(false);
      expect(a.destructiveHint, t.name).toBe(DESTRUCTIVE_TOOLS.includes(t.name));
      expect(a).toEqual({ ...def.annotations, openWorldHint: INPUT_CAPS.has(def.capability) });
      // Every tool that drives the target's input can change state: never read-only.
      if (INPUT_CAPS.has(def.capability)) expect(a.readOnlyHint, t.name).toBe(false);
      // Read-only tools list the shape of their data; effects' receipts are in the docs.
      expect(t.outputSchema !== undefined, t.name).toBe(a.readOnlyHint);
    }
    for (const n of [
      "inspect_tree",
      "find_elements",
      "wait_for_element",
      "list_windows",
      "screenshot_window",
    ])
      expect(fullAnnotations(tools.find((t) => t.name === n)!).readOnlyHint, n).toBe(true);
  });

  it("the whole listing costs at most 9000 tokens (chars / 4) with every tool in it", () => {
    expect(tools.length).toBeGreaterThanOrEqual(40);
    expect(JSON.stringify(tools).length / 4).toBeLessThanOrEqual(9000);
  });

  it("lists only what the policy can ever authorize (health_check always)", () => {
    const names = (state: PolicyState) => listTools(toolsForPolicy(state)).map((t) => t.name);
    expect(names({ status: "none" })).toEqual(["health_check"]);
    expect(names({ status: "error", code: "policy_invalid", reasons: [], source: "file" })).toEqual([
      "health_check",
    ]);
    const observeOnly = names(okPolicy(["observe"]));
    for (const n of observeOnly) {
      const def = TOOLS_BY_NAME.get(n)!;
      expect(INPUT_CAPS.has(def.capability), n).toBe(false);
      expect(def.capability === "inspect", n).toBe(false);
    }
    expect(observeOnly).toContain("screenshot_window");
    expect(observeOnly).toContain("request_access");
    // observe is not protected: there is nothing to confirm.
    expect(observeOnly).not.toContain("request_confirmation");
    const inspect = names(okPolicy(["inspect"]));
    expect(inspect).toContain("wait_for_element");
    expect(inspect).not.toContain("invoke_element");
    expect(inspect).not.toContain("screenshot_window");
    const text = names(okPolicy(["text"]));
    expect(text).toContain("send_text");
    expect(text).toContain("request_confirmation");
    // The coordinate-profile tools need a profiles folder.
    const profileTools = [
      "resolve_coordinate_profile_point",
      "check_coordinate_profile",
      "record_coordinate_profile",
    ];
    expect(names(okPolicy([...CAPABILITIES]))).toEqual(
      TOOLS.map((t) => t.name).filter((n) => !profileTools.includes(n)),
    );
    expect(names(okPolicy([...CAPABILITIES], { DESKTOP_AUTOMATION_PROFILES_DIR: "/srv/profiles" }))).toEqual(
      TOOLS.map((t) => t.name),
    );
    // A policy that allows no action (an env policy without its action list) offers nothing else.
    expect(names(okPolicy([]))).toEqual(["health_check"]);
  });

  it("shows confirmation_token only on the tools of capabilities the policy protects", () => {
    const state = okPolicy([...CAPABILITIES]);
    if (state.status !== "ok") throw new Error("policy");
    const p = state.policy;
    const listed = listTools(toolsForPolicy(state), (c) => p.protected_actions.has(c));
    const withToken = listed
      .filter((t) => Object.keys(t.inputSchema.properties ?? {}).includes("confirmation_token"))
      .map((t) => t.name)
      .sort();
    expect(withToken).toEqual(["close_window", "drag_window", "send_text", "set_element_value"]);
  });

  it("with every action allowed (a README-style policy) the listing is at most 20,300 characters", () => {
    const state = okPolicy([...CAPABILITIES]);
    if (state.status !== "ok") throw new Error("policy");
    const p = state.policy;
    const listed = listTools(toolsForPolicy(state), (c) => p.protected_actions.has(c));
    // As tools/list sends it: {"tools": [...]}.
    expect(JSON.stringify({ tools: listed }).length).toBeLessThanOrEqual(20_300);
  });

  it("request_confirmation returns the token under the name the tools take (and the old one)", () => {
    const def = TOOLS_BY_NAME.get("request_confirmation")!;
    const shape = (def.output as unknown as { shape: Record<string, unknown> }).shape;
    expect(Object.keys(shape)).toContain("confirmation_token");
    expect(Object.keys(shape)).toContain("token_id");
    for (const t of TOOLS.filter((d) => INPUT_CAPS.has(d.capability))) {
      const props = (tools.find((x) => x.name === t.name)?.inputSchema.properties ?? {}) as Record<
        string,
        unknown
      >;
      expect(Object.keys(props), t.name).toContain("confirmation_token");
    }
  });

  for (const [draft, ajv] of Object.entries(validators)) {
    it(`schemas compile and accept real shapes under ${draft}`, () => {
      for (const t of tools) {
        expect(() => ajv.compile(t.inputSchema), `${t.name} input`).not.toThrow();
        expect(() => ajv.compile(t.outputSchema ?? {}), `${t.name} output`).not.toThrow();
      }
      const list = ajv.compile(tools.find((t) => t.name === "list_windows")?.outputSchema ?? {});
      const window = {
        title: "t",
        pid: 1,
        hwnd: "1",
        rect: [0, 0, 10, 10],
        process_path: "/x",
        window_class: "c",
        foreground: true,
      };
      expect(list({ windows: [window] })).toBe(true);
      expect(list({ windows: "none" })).toBe(false);
      // A refusal's structuredContent ({error}) is admitted too.
      expect(list({ error: { code: "rate_limited", message: "m", retry_after_ms: 5 } })).toBe(true);
      const tree = ajv.compile(tools.find((t) => t.name === "inspect_tree")?.outputSchema ?? {});
      const node = (children: unknown[]) => ({
        ref: "s1.e1",
        role: "button",
        name: null,
        is_password: true,
        automation_id: null,
        class_name: null,
        rect: [0, 0, 1, 1],
        enabled: true,
        offscreen: false,
        focused: false,
        states: ["enabled", "checked"],
        patterns: [],
        children,
      });
      expect(
        tree({
          correlation_id: "0123456789ab",
          root: node([node([])]),
          popups: [{ ...node([]), popup: true }],
          node_count: 3,
          truncated: false,
        }),
      ).toBe(true);
      expect(tree({ correlation_id: "0123456789ab", root: [], popups: {}, node_count: 1 })).toBe(false);
      const wait = ajv.compile(tools.find((t) => t.name === "wait_for_element")?.inputSchema ?? {});
      expect(wait({ hwnd: "1", name_contains: "OK", state: "checked", timeout_ms: 1000 })).toBe(true);
      expect(wait({ hwnd: "1", state: "pressed" })).toBe(false);
    });
  }

  it("node states come from the vocabulary only (the worker protocol's schema)", () => {
    const base = {
      ref: "e1",
      role: "button",
      name: null,
      automation_id: null,
      class_name: null,
      rect: null,
      enabled: true,
      offscreen: false,
      focused: false,
      patterns: [],
      children: [],
    };
    expect(A11yNodeSchema.safeParse({ ...base, states: ["enabled", "checked"] }).success).toBe(true);
    expect(A11yNodeSchema.safeParse({ ...base, states: ["pressed"] }).success).toBe(false);
  });
});
