import { Ajv } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { listTools } from "../../src/supervisor/server.js";
import { TOOLS } from "../../src/supervisor/tools/index.js";

// Clients validate with whatever JSON Schema draft they run: the listing must mean the
// same to a draft-07 validator (ajv's default, used by many MCP clients) and to 2020-12.
const validators = { "draft-07": new Ajv({ strict: false }), "2020-12": new Ajv2020({ strict: false }) };

describe("tool listing derived from the table", () => {
  const tools = listTools();

  it("has one entry per table row with the SPEC's annotations", () => {
    expect(tools.map((t) => t.name)).toEqual(TOOLS.map((t) => t.name));
    expect(new Set(tools.map((t) => t.name)).size).toBe(tools.length);
    for (const t of tools) {
      expect(t.annotations?.openWorldHint).toBe(false);
      expect(t.inputSchema.type).toBe("object");
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
      expect(list({ windows: [{ ...window, rect: [0, 0, 10] }] })).toBe(false);
      expect(list({ error: { code: "rate_limited", message: "m", retry_after_ms: 5 } })).toBe(true);
      expect(list({ error: { code: "not_a_code", message: "m" } })).toBe(false);
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
      // States come from the vocabulary only.
      expect(
        tree({
          correlation_id: "0123456789ab",
          root: { ...node([]), states: ["pressed"] },
          popups: [],
          node_count: 1,
          truncated: false,
        }),
      ).toBe(false);
    });
  }
});
