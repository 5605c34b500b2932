import { writeFileSync } from "node:fs";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { FakeDesktop, filePolicy, ruffleWindow } from "../support/mcp.js";
import { closeServersAfterEach, serveFake } from "../support/servers.js";

/**
 * What an agent needs to finish a task, in process (test/support/inProcess.ts) on the simulated
 * desktop: states on every node, the instance's popups as extra roots, wait_for_element,
 * scroll_into_view, select_option, verified effects (expect / changes), and a tool listing
 * that follows the policy (tools/list_changed when the policy file changes).
 */

interface Node {
  ref: string;
  role: string;
  name: string | null;
  automation_id: string | null;
  states: string[];
  popup?: boolean;
  patterns: string[];
  children: Node[];
}

const flatten = (n: Node): Node[] => [n, ...n.children.flatMap(flatten)];

function byId(nodes: Node[], id: string): Node {
  const n = nodes.find((x) => x.automation_id === id);
  if (!n) throw new Error(`no node ${id}`);
  return n;
}

function tree(sound: string[], extra: Array<Record<string, unknown>> = []): Record<string, unknown> {
  return {
    role: "window",
    name: "Ruffle",
    children: [
      { role: "button", name: "Play", automation_id: "play", rect: [20, 60, 120, 90], patterns: ["invoke"] },
      {
        role: "check_box",
        name: "Sound",
        automation_id: "sound",
        rect: [20, 100, 120, 120],
        patterns: ["toggle"],
        states: sound,
      },
      {
        role: "combo_box",
        name: "Level",
        automation_id: "level",
        rect: [20, 130, 220, 150],
        patterns: ["selection", "expand_collapse"],
        states: ["collapsed"],
        children: [
          {
            role: "list",
            name: "Levels",
            children: [
              { role: "list_item", name: "Easy", automation_id: "easy", patterns: ["selection_item"] },
              { role: "list_item", name: "Hard", automation_id: "hard", patterns: ["selection_item"] },
            ],
          },
        ],
      },
      {
        role: "list_item",
        name: "Row 99",
        automation_id: "row99",
        patterns: ["scroll_item"],
        offscreen: true,
      },
      { role: "edit", name: "Secret", automation_id: "pw", is_password: true, patterns: ["value"] },
      ...extra,
    ],
  };
}

/** A context menu: another visible top-level window of the same process instance. */
function menu(): Record<string, unknown> {
  return ruffleWindow({
    hwnd: 1009,
    title: "",
    class: "PopupMenu",
    rect: [150, 200, 300, 260],
    z: 0,
    fill: "#eeeeee",
    tree: {
      role: "menu",
      name: "Context",
      children: [{ role: "menu_item", name: "Copy", automation_id: "copy", patterns: ["invoke"] }],
    },
  });
}

function scenario(windows: Array<Record<string, unknown>>): Record<string, unknown> {
  return { session: 1, foreground: 1001, windows, consent: { answer: "approve", delay_ms: 0 } };
}

closeServersAfterEach();
const start = (d: FakeDesktop, env: Record<string, string> = {}) => serveFake(d, { env });

async function until<T>(what: string, fn: () => T | null | undefined, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v !== null && v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe("agent tasks on the simulated desktop", () => {
  it("states in tree, search and text form; find by state; password redaction kept", async () => {
    const d = new FakeDesktop(scenario([ruffleWindow({ tree: tree(["checked", "focusable"]) })]));
    const h = await start(d, { DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy()) });
    await h.ok("request_access", { hwnd: 1001 });
    const r = await h.call("inspect_tree", { detail: "full", fields: ["patterns"], hwnd: 1001 });
    const nodes = flatten(r.structured.root as Node);
    expect(byId(nodes, "sound").states).toEqual(["enabled", "focusable", "checked"]);
    expect(byId(nodes, "level").states).toEqual(["enabled", "collapsed"]);
    expect(byId(nodes, "row99").states).toEqual(["enabled", "offscreen"]);
    expect(byId(nodes, "pw")).toMatchObject({ name: null, is_password: true });
    const text = r.content.map((c) => c.text ?? "").join("\n");
    expect(text).toMatch(/check_box "Sound" \[checked\] \[ref=s\d+\.e\d+\] \(toggle\)/);
    expect(text).toMatch(/list_item "Row 99" \[offscreen\]/);
    const checked = (await h.ok("find_elements", { detail: "full", hwnd: 1001, state: "checked" }))
      .elements as Node[];
    expect(checked.map((e) => e.automation_id)).toEqual(["sound"]);
    expect((await h.call("find_elements", { detail: "full", hwnd: 1001, state: "pressed" })).code).toBe(
      "invalid_argument",
    );
  });

  it("the instance's popup is an extra marked root; its items get refs and semantic actions", async () => {
    const d = new FakeDesktop(scenario([ruffleWindow({ tree: tree([]) }), menu()]));
    const h = await start(d, { DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy()) });
    await h.ok("request_access", { hwnd: 1001 });
    const r = await h.call("inspect_tree", { detail: "full", hwnd: 1001 });
    const popups = r.structured.popups as Node[];
    expect(popups.map((p) => [p.role, p.name, p.popup])).toEqual([["menu", "Context", true]]);
    expect(r.content.map((c) => c.text ?? "").join("\n")).toMatch(/- menu "Context" \[popup\]/);
    const found = (await h.ok("find_elements", { detail: "full", hwnd: 1001, name_contains: "copy" }))
      .elements as Node[];
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ role: "menu_item", popup: true });
    writeFileSync(d.effects, "");
    expect((await h.call("invoke_element", { ref: found[0]!.ref })).isError).toBe(false);
    expect(d.effectsLog().filter((e) => e.type === "a11y")).toEqual([
      expect.objectContaining({ hwnd: "1009", action: "invoke", automation_id: "copy" }),
    ]);
    // The menu closes: its refs are stale, the window's own tree has no popups any more.
    d.write(scenario([ruffleWindow({ tree: tree([]) }), { ...menu(), visible: false }]));
    expect((await h.call("invoke_element", { ref: found[0]!.ref })).code).toBe("element_stale");
    expect((await h.ok("inspect_tree", { detail: "full", hwnd: 1001 })).popups).toEqual([]);
    // Another process's window is never a popup of this one.
    d.write(scenario([ruffleWindow({ tree: tree([]) }), { ...menu(), pid: 777 }]));
    expect((await h.ok("inspect_tree", { detail: "full", hwnd: 1001 })).popups).toEqual([]);
  });

  it("wait_for_element sees an element that appears after 1 s, times out on one that never does, and waits for gone", async () => {
    const d = new FakeDesktop(scenario([ruffleWindow({ tree: tree([]) })]));
    const h = await start(d, { DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy()) });
    await h.ok("request_access", { hwnd: 1001 });
    const late = { role: "button", name: "Continue", automation_id: "cont", patterns: ["invoke"] };
    const timer = setTimeout(() => d.write(scenario([ruffleWindow({ tree: tree([], [late]) })])), 1000);
    const progress: unknown[] = [];
    try {
      const r = await h.call(
        "wait_for_element",
        { hwnd: 1001, name_contains: "continue", role: "button", timeout_ms: 20_000 },
        { onprogress: (p) => progress.push(p) },
      );
      expect(r.isError).toBe(false);
      expect(r.structured.element).toMatchObject({ automation_id: "cont", role: "button" });
      expect((r.structured.elapsed_ms as number) >= 900).toBe(true);
      expect(progress.length).toBeGreaterThan(0);
      // Its ref works for an action.
      const ref = (r.structured.element as Node).ref;
      expect((await h.call("invoke_element", { ref })).isError).toBe(false);
    } finally {
      clearTimeout(timer);
    }
    const never = await h.call("wait_for_element", {
      hwnd: 1001,
      name_contains: "never there",
      timeout_ms: 500,
    });
    expect(never.code).toBe("timeout");
    const gone = await h.call("wait_for_element", { hwnd: 1001, name_contains: "never there", gone: true });
    expect(gone.isError).toBe(false);
    expect(gone.structured.element).toBeUndefined();
    expect((await h.call("wait_for_element", { hwnd: 1001, timeout_ms: 10 })).code).toBe("invalid_argument");
    // Cancellation ends the wait with the request.
    const ac = new AbortController();
    const pending = h.call(
      "wait_for_element",
      { hwnd: 1001, name_contains: "never", timeout_ms: 30_000 },
      { signal: ac.signal },
    );
    setTimeout(() => ac.abort(), 300);
    await expect(pending).rejects.toThrow();
  });

  it("scroll_into_view and select_option go through their patterns; a missing option is target_not_found", async () => {
    const d = new FakeDesktop(scenario([ruffleWindow({ tree: tree([]) })]));
    const h = await start(d, { DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy()) });
    await h.ok("request_access", { hwnd: 1001 });
    const nodes = flatten((await h.ok("inspect_tree", { detail: "full", hwnd: 1001 })).root as Node);
    writeFileSync(d.effects, "");
    expect((await h.call("scroll_into_view", { ref: byId(nodes, "row99").ref })).isError).toBe(false);
    expect((await h.call("scroll_into_view", { ref: byId(nodes, "play").ref })).code).toBe(
      "pattern_not_supported",
    );
    expect((await h.call("select_option", { ref: byId(nodes, "level").ref, name: " hard " })).isError).toBe(
      false,
    );
    expect((await h.call("select_option", { ref: byId(nodes, "level").ref, name: "Insane" })).code).toBe(
      "target_not_found",
    );
    expect((await h.call("select_option", { ref: byId(nodes, "play").ref, name: "Hard" })).code).toBe(
      "pattern_not_supported",
    );
    const effects = d.effectsLog().filter((e) => e.type === "a11y");
    expect(effects).toEqual([
      expect.objectContaining({ action: "scroll_into_view", automation_id: "row99" }),
      expect.objectContaining({
        action: "select_option",
        automation_id: "level",
        option_automation_id: "hard",
      }),
    ]);
  });

  it("expect reports verified true for a real change and false for a no-op; changes lists the diff by ref", async () => {
    const d = new FakeDesktop(scenario([ruffleWindow({ tree: tree([]) })]));
    const h = await start(d, { DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy()) });
    await h.ok("request_access", { hwnd: 1001 });
    const nodes = flatten((await h.ok("inspect_tree", { detail: "full", hwnd: 1001 })).root as Node);
    const sound = byId(nodes, "sound");
    writeFileSync(d.effects, "");
    // The simulated app reacts to the toggle: the test plays the app, once the effect is logged.
    const pending = h.call("toggle_element", {
      ref: sound.ref,
      expect: { state: "checked", timeout_ms: 5000 },
      changes: true,
    });
    await until("toggle effect", () => d.effectsLog().find((e) => e.type === "a11y") ?? null);
    d.write(scenario([ruffleWindow({ tree: tree(["checked"]) })]));
    const r = await pending;
    expect(r.isError).toBe(false);
    expect(r.structured.verified).toBe(true);
    expect(typeof r.structured.elapsed_ms).toBe("number");
    const changes = r.structured.changes as { changed: Array<{ ref: string; states: string[] }> };
    expect(changes.changed).toContainEqual({ ref: sound.ref, states: ["enabled", "checked"] });
    expect(JSON.stringify(changes)).not.toContain("Secret");
    // A no-op: the app does not react, the action happened, verified is false.
    const play = byId(nodes, "play");
    const noop = await h.call("invoke_element", {
      ref: play.ref,
      expect: { name_contains: "Game over", timeout_ms: 300 },
    });
    expect(noop.isError).toBe(false);
    expect(noop.structured.verified).toBe(false);
    expect(d.effectsLog().filter((e) => e.type === "a11y" && e.action === "invoke")).toHaveLength(1);
    // gone: the acted element disappears.
    const goneCall = h.call("invoke_element", { ref: play.ref, expect: { gone: true, timeout_ms: 5000 } });
    await until("second invoke", () =>
      d.effectsLog().filter((e) => e.type === "a11y" && e.action === "invoke").length === 2 ? true : null,
    );
    const withoutPlay = tree(["checked"]) as { children: unknown[] };
    d.write(scenario([ruffleWindow({ tree: { ...withoutPlay, children: withoutPlay.children.slice(1) } })]));
    expect((await goneCall).structured.verified).toBe(true);
    expect((await h.call("invoke_element", { ref: sound.ref, expect: { ref: "s999.e1" } })).code).toBe(
      "element_stale",
    );
  });

  it("tools/list follows the policy: observe-only lists no input tool; editing the file sends tools/list_changed", async () => {
    const d = new FakeDesktop(scenario([ruffleWindow({ tree: tree([]) })]));
    const policyPath = d.writePolicy(filePolicy({ allowed_actions: ["observe"] }));
    const h = await start(d, {
      DESKTOP_AUTOMATION_POLICY_FILE: policyPath,
      UIINSPECT_POLICY_WATCH_MS: "100",
    });
    let changed = 0;
    h.client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
      changed += 1;
    });
    const names = async () => (await h.client.listTools()).tools.map((t) => t.name);
    const observe = await names();
    for (const n of [
      "click_window",
      "send_text",
      "send_key",
      "invoke_element",
      "click_element",
      "drag_window",
      "inspect_tree",
    ])
      expect(observe).not.toContain(n);
    expect(observe).toContain("screenshot_window");
    expect(observe).toContain("health_check");
    // Widened by the operator while the server runs.
    writeFileSync(
      policyPath,
      JSON.stringify(filePolicy({ allowed_actions: ["observe", "inspect", "interact"] })),
    );
    await until("tools/list_changed", () => (changed > 0 ? true : null));
    const widened = await names();
    expect(widened).toContain("invoke_element");
    expect(widened).toContain("wait_for_element");
    expect(widened).not.toContain("send_text");
    const args = async (name: string) =>
      Object.keys(
        (await h.client.listTools()).tools.find((t) => t.name === name)?.inputSchema.properties ?? {},
      );
    expect(await args("invoke_element")).not.toContain("confirmation_token");
    // Protecting a capability changes its tools' arguments: the list changes too.
    writeFileSync(
      policyPath,
      JSON.stringify(
        filePolicy({ allowed_actions: ["observe", "inspect", "interact"], protected_actions: ["interact"] }),
      ),
    );
    await until("tools/list_changed for protection", () => (changed > 1 ? true : null));
    expect(await args("invoke_element")).toContain("confirmation_token");
    expect(await args("inspect_tree")).not.toContain("confirmation_token");
    // A broken file fails closed: only health_check, and calls refuse.
    writeFileSync(policyPath, "{ not json");
    await until("third tools/list_changed", () => (changed > 2 ? true : null));
    expect(await names()).toEqual(["health_check"]);
    expect((await h.call("list_windows")).isError).toBe(true);
  });
});
