import { execFileSync } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { PNG } from "pngjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, McpHarness } from "../support/mcp.js";
import { scratchDir } from "../support/scratch.js";
import { approveConsentDialog, MISSING_TOOLS, REPO, UNSAFE_XTEST, x11CliSuite } from "./support.js";

/**
 * The README's "A typical session", as written, on the desktop `uiinspect-mcp sandbox start
 * --app gtk3-widget-factory` gives, with the README's Linux policy (schema/examples): the app has
 * an accessibility tree, both safe regions lie inside its client area and on screen, the mask
 * covers the entry the session types into, and every step's action is allowed.
 */

const POLICY = join(REPO, "schema/examples/policy.linux.example.yaml");
const run = x11CliSuite("readme session", {
  what: "gtk3-widget-factory is missing",
  ok: MISSING_TOOLS.length === 0 && existsSync("/usr/bin/gtk3-widget-factory"),
});

interface Element {
  ref: string;
  role: string;
  name: string | null;
  rect: [number, number, number, number] | null;
  states: string[];
}

const centre = (r: [number, number, number, number]) => ({
  x: Math.round((r[0] + r[2]) / 2),
  y: Math.round((r[1] + r[3]) / 2),
});

describe.skipIf(!run)("the README's typical session on the sandbox", () => {
  let work: string;
  let state: string;
  let exports: Record<string, string>;
  let h: McpHarness;
  let hwnd: string;

  beforeAll(async () => {
    work = scratchDir("readme");
    // The sandbox's folder is chosen here, before it starts: afterAll stops whatever is in it,
    // also after a start that failed, timed out or printed less than it should.
    state = join(work, "sandbox");
    // As the README says: eval "$(uiinspect-mcp sandbox start --app gtk3-widget-factory)".
    const out = execFileSync(
      process.execPath,
      [CLI, "sandbox", "start", "--app", "gtk3-widget-factory", "--dir", state],
      { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"], timeout: 120_000 },
    );
    exports = {};
    for (const m of out.matchAll(/^export ([A-Z][A-Z0-9_]*)=(.*)$/gm))
      exports[m[1]] = m[2].replace(/^'(.*)'$/, "$1");
    expect(exports.DISPLAY).toMatch(/^:\d+$/);
    // What `sandbox stop` in that shell reads.
    expect(exports.UIINSPECT_X11_STATE).toBe(state);
    Object.assign(process.env, exports);
    // A user's own copy of the example policy.
    const policy = join(work, "policy.yaml");
    copyFileSync(POLICY, policy);
    chmodSync(policy, 0o600);
    h = await McpHarness.start({ ...UNSAFE_XTEST, ...exports, DESKTOP_AUTOMATION_POLICY_FILE: policy });
  }, 180_000);

  afterAll(async () => {
    try {
      await h?.close();
    } finally {
      if (state && existsSync(join(state, "xvfb.pid")))
        execFileSync(process.execPath, [CLI, "sandbox", "stop", state], { stdio: "inherit" });
      if (work) rmSync(work, { recursive: true, force: true });
    }
  });

  it("1-2. list_windows shows the app; request_access is approved at the dialog", async () => {
    const windows = (await h.ok("list_windows", {})).windows as Array<{ hwnd: string; title: string }>;
    expect(windows.map((w) => w.title)).toEqual(["gtk3-widget-factory"]);
    hwnd = windows[0]!.hwnd;
    const pending = h.call("request_access", { hwnd });
    await approveConsentDialog();
    expect((await pending).structured).toMatchObject({ decision: "approved", source: "dialog" });
  }, 60_000);

  it("3. inspect_tree and find_elements give refs; screenshot_window shows each region, the mask black", async () => {
    const tree = await h.ok("inspect_tree", { detail: "full", hwnd });
    expect(tree.node_count as number).toBeGreaterThan(50);
    const checks = (
      await h.ok("find_elements", { detail: "full", hwnd, role: "check_box", name_contains: "checkbutton" })
    ).elements as Element[];
    expect(checks.length).toBeGreaterThan(0);
    expect(checks[0]!.ref).toMatch(/^s\d+\.e\d+$/);
    for (const region_name of ["controls", "header"]) {
      const shot = await h.call("screenshot_window", { hwnd, region_name });
      expect(shot.isError, JSON.stringify(shot.structured)).toBe(false);
      const img = shot.content.find((c) => c.type === "image");
      expect(img?.data).toBeDefined();
      if (region_name !== "controls") continue;
      const png = PNG.sync.read(Buffer.from(img!.data!, "base64"));
      expect([png.width, png.height]).toEqual([546 - 5, 573 - 51]);
      // The mask [15,237,371,271] is painted black; the entry's own background is light.
      const at = (x: number, y: number) => {
        const i = (y * png.width + x) * 4;
        return [png.data[i], png.data[i + 1], png.data[i + 2]];
      };
      expect(at(15 - 5 + 100, 237 - 51 + 17)).toEqual([0, 0, 0]);
      const [r, g, b] = at(200, 10);
      expect(r! + g! + b!).toBeGreaterThan(300);
    }
  }, 60_000);

  it("4. invoke_element, click_window and send_key act, each seen in the tree afterwards", async () => {
    const find = async (args: Record<string, unknown>) =>
      (await h.ok("find_elements", { detail: "full", hwnd, ...args })).elements as Element[];
    const box = (await find({ role: "check_box", name_contains: "checkbutton" })).find(
      (e) => e.states.includes("enabled") && !e.states.includes("checked") && !e.states.includes("mixed"),
    )!;
    expect(box).toBeDefined();
    const inv = await h.call("invoke_element", { ref: box.ref });
    expect(inv.isError, JSON.stringify(inv.structured)).toBe(false);
    const after = (await find({ role: "check_box", name_contains: "checkbutton" })).find(
      (e) => e.rect?.join() === box.rect?.join(),
    );
    expect(after?.states).toContain("checked");

    const toggle = (await find({ name_contains: "togglebutton" })).find(
      (e) => e.states.includes("enabled") && !e.states.includes("checked"),
    )!;
    const click = await h.call("click_window", { hwnd, ...centre(toggle.rect!) });
    expect(click.isError, JSON.stringify(click.structured)).toBe(false);
    const pressed = (await find({ name_contains: "togglebutton" })).find(
      (e) => e.rect?.join() === toggle.rect?.join(),
    );
    expect(pressed?.states).toContain("checked");

    const key = await h.call("send_key", { hwnd, key: "Tab" });
    expect(key.isError, JSON.stringify(key.structured)).toBe(false);
  }, 60_000);

  it("5. send_text needs request_confirmation's token; with it the text is typed", async () => {
    // The entry under the mask: clicked to give it the focus.
    expect((await h.call("click_window", { hwnd, x: 170, y: 254 })).isError).toBe(false);
    const without = await h.call("send_text", { hwnd, text: "hello" });
    expect(without.code).toBe("confirmation_required");
    const tok = await h.ok("request_confirmation", { hwnd, action_class: "text" });
    const typed = await h.call("send_text", {
      hwnd,
      text: "hello",
      confirmation_token: tok.confirmation_token,
    });
    expect(typed.isError, JSON.stringify(typed.structured)).toBe(false);
    expect(typed.structured.chars).toBe(5);
  }, 60_000);
});
