import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { InProcessHarness } from "../support/inProcess.js";
import { FakeDesktop, filePolicy, LOOSE_BUDGETS, ruffleWindow } from "../support/mcp.js";
import { ManualTime } from "../support/time.js";

/**
 * inspect_tree, find_elements and the semantic actions in process (test/support/inProcess.ts) on the
 * simulated desktop: redaction, truncation (depth, nodes, deadline), stale refs after every kind
 * of session end, pattern_not_supported, values never logged, tokens for a protected interact,
 * click_element at the live element's centre, and separate inspection/action budgets.
 */

const NAME_CANARY = "PWD-CANARY-4e1b7d";
const VALUE_CANARY = "VAL-CANARY-93c0aa";

interface Node {
  ref: string;
  role: string;
  name: string | null;
  is_password?: boolean;
  automation_id: string | null;
  rect: number[] | null;
  patterns: string[];
  children: Node[];
}

function flatten(n: Node): Node[] {
  return [n, ...n.children.flatMap(flatten)];
}

function byId(root: unknown, id: string): Node {
  const n = flatten(root as Node).find((x) => x.automation_id === id);
  if (!n) throw new Error(`no node ${id}`);
  return n;
}

function chain(depth: number, prefix: string): Record<string, unknown> {
  let node: Record<string, unknown> = {
    role: "button",
    name: `${prefix} leaf`,
    automation_id: `${prefix}-leaf`,
  };
  for (let i = depth - 1; i >= 0; i--)
    node = { role: "group", name: `${prefix} ${i}`, automation_id: `${prefix}-${i}`, children: [node] };
  return node;
}

const TREE = {
  role: "window",
  name: "Ruffle",
  children: [
    { role: "button", name: "Play", automation_id: "play", rect: [20, 60, 120, 90], patterns: ["invoke"] },
    {
      role: "edit",
      name: `Password ${NAME_CANARY}`,
      automation_id: "password",
      is_password: true,
      rect: [20, 100, 220, 130],
      patterns: ["value"],
    },
    { role: "edit", name: "Nickname", automation_id: "nick", rect: [20, 140, 220, 170], patterns: ["value"] },
    {
      role: "check_box",
      name: "Sound",
      automation_id: "sound",
      rect: [20, 180, 120, 200],
      patterns: ["toggle"],
    },
    {
      role: "button",
      name: "Far away",
      automation_id: "far",
      rect: [900, 10, 950, 30],
      patterns: ["invoke"],
    },
    chain(4, "deep"),
  ],
};

function main(over: Record<string, unknown> = {}): Record<string, unknown> {
  return ruffleWindow({ tree: TREE, ...over });
}

/** A second window of the same process instance, with its own tree. */
function second(over: Record<string, unknown> = {}): Record<string, unknown> {
  return ruffleWindow({
    hwnd: 1005,
    title: "Ruffle - second.swf",
    rect: [1000, 100, 1400, 500],
    z: 1,
    fill: "#884400",
    tree: {
      role: "window",
      name: "Second",
      children: [
        {
          role: "button",
          name: "Second go",
          automation_id: "second",
          rect: [10, 10, 60, 40],
          patterns: ["invoke"],
        },
      ],
    },
    ...over,
  });
}

function scenario(windows: Array<Record<string, unknown>>): Record<string, unknown> {
  return { session: 1, foreground: 1001, windows, consent: { answer: "approve", delay_ms: 0 } };
}

const harnesses: InProcessHarness[] = [];
async function start(env: Record<string, string>, clock?: () => number): Promise<InProcessHarness> {
  const h = await InProcessHarness.start(
    { UIINSPECT_PLATFORM: "fake", ...LOOSE_BUDGETS, ...env },
    undefined,
    {
      clock,
    },
  );
  harnesses.push(h);
  return h;
}
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((h) => h.close()));
});

/**
 * One server for the tests that need nothing but the plain file policy (a server start costs
 * seconds on a loaded machine): each call puts the given windows on the desktop and empties the
 * effects log, so every test still sees only its own effects.
 */
let sharedDesktop: FakeDesktop | undefined;
let sharedServer: InProcessHarness | undefined;
async function shared(
  windows: Array<Record<string, unknown>>,
): Promise<{ d: FakeDesktop; h: InProcessHarness }> {
  if (!sharedDesktop || !sharedServer) {
    sharedDesktop = new FakeDesktop(scenario(windows));
    sharedServer = await InProcessHarness.start({
      UIINSPECT_PLATFORM: "fake",
      ...LOOSE_BUDGETS,
      UIINSPECT_FAKE_DESKTOP: sharedDesktop.path,
      DESKTOP_AUTOMATION_POLICY_FILE: sharedDesktop.writePolicy(filePolicy()),
    });
  } else {
    sharedDesktop.write(scenario(windows));
  }
  writeFileSync(sharedDesktop.effects, "");
  return { d: sharedDesktop, h: sharedServer };
}
afterAll(async () => {
  await sharedServer?.close();
});

describe("accessibility in process", () => {
  it("redacts a password field's name everywhere and never logs a set value", async () => {
    const d = new FakeDesktop(scenario([main()]));
    const auditFile = join(d.dir, "audit.jsonl");
    const h = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy()),
      UIINSPECT_AUDIT_FILE: auditFile,
      UIINSPECT_LOG_LEVEL: "debug",
    });
    await h.ok("request_access", { hwnd: 1001 });
    const tree = await h.call("inspect_tree", { detail: "full", hwnd: 1001 });
    expect(tree.isError).toBe(false);
    const pwd = byId(tree.structured.root, "password");
    expect(pwd).toMatchObject({ name: null, is_password: true, role: "edit" });
    expect(byId(tree.structured.root, "play").name).toBe("Play"); // names do come through otherwise
    const text = tree.content.map((c) => c.text ?? "").join("\n");
    expect(text).toContain("Play");
    // Searching by the secret finds nothing (a password field never matches by name).
    const found = await h.call("find_elements", {
      detail: "full",
      hwnd: 1001,
      name_contains: NAME_CANARY.slice(0, 10),
    });
    expect(found.structured.elements).toEqual([]);
    const byPwdId = await h.call("find_elements", { detail: "full", hwnd: 1001, automation_id: "password" });
    expect((byPwdId.structured.elements as Node[])[0]).toMatchObject({ name: null, is_password: true });

    // A value set into the password field reaches the (simulated) screen and nothing else.
    const textToken = async () =>
      String((await h.ok("request_confirmation", { hwnd: 1001, action_class: "text" })).confirmation_token);
    const set = await h.call("set_element_value", {
      ref: pwd.ref,
      value: `x ${VALUE_CANARY}`,
      confirmation_token: await textToken(),
    });
    expect(set.isError).toBe(false);
    expect(set.structured.chars).toBe(`x ${VALUE_CANARY}`.length);
    // On an element without ValuePattern: refused, and the error does not echo the value.
    const play = byId(tree.structured.root, "play");
    const refused = await h.call("set_element_value", {
      ref: play.ref,
      value: `y ${VALUE_CANARY}`,
      confirmation_token: await textToken(),
    });
    expect(refused.code).toBe("pattern_not_supported");

    const audit = JSON.stringify((await h.ok("get_audit_events", { limit: 100 })).events);
    await h.close();
    const file = readFileSync(auditFile, "utf8");
    const effects = JSON.stringify(d.effectsLog());
    expect(effects).toContain(VALUE_CANARY);
    const setEffect = d.effectsLog().find((e) => e.type === "a11y" && e.action === "set_value");
    expect(setEffect).toMatchObject({ hwnd: "1001", automation_id: "password", value: `x ${VALUE_CANARY}` });
    const outputs = [
      JSON.stringify(tree.structured),
      text,
      JSON.stringify(found),
      JSON.stringify(byPwdId),
      JSON.stringify(set),
      JSON.stringify(refused),
      audit,
      file,
      h.stderr.join(""),
    ];
    for (const o of outputs) {
      expect(o).not.toContain(NAME_CANARY);
      expect(o).not.toContain(VALUE_CANARY);
    }
    expect(file).toContain("set_element_value"); // the audit did record the call
  });

  it("answers with the text outline and counts by default, the nodes only with detail full", async () => {
    const { h } = await shared([main()]);
    await h.ok("request_access", { hwnd: 1001 });
    const r = await h.call("inspect_tree", { hwnd: 1001 });
    expect(Object.keys(r.structured).sort()).toEqual(["correlation_id", "node_count", "truncated"]);
    const text = r.content.map((c) => c.text ?? "").join("\n");
    expect(text.split("\n")[0]).toMatch(/^- window .*\[ref=s\d+\.e1\]$/);
    expect(text).not.toContain("{");
    // The outline without the patterns field walks without them (no action names read); asked
    // for, they are read and shown.
    expect(text).not.toMatch(/\(invoke\)/);
    const withPatterns = await h.call("inspect_tree", { hwnd: 1001, fields: ["patterns"] });
    expect(withPatterns.content.map((c) => c.text ?? "").join("\n")).toMatch(
      /- button "Play" \[ref=s\d+\.e\d+\] \(invoke\)/,
    );
    const found = await h.call("find_elements", { hwnd: 1001, automation_id: "play", fields: ["bounds"] });
    expect(found.structured).toMatchObject({ count: 1, truncated: false });
    expect(found.structured.elements).toBeUndefined();
    // Window-relative x, y, width, height.
    expect(found.content.map((c) => c.text ?? "").join("\n")).toMatch(
      /^- button "Play" \[ref=s\d+\.e\d+\] @20,60,100,30$/,
    );
  });

  it("truncates by depth and by node count, and reports a whole tree as not truncated", async () => {
    const { h } = await shared([main()]);
    await h.ok("request_access", { hwnd: 1001 });
    const all = await h.ok("inspect_tree", { detail: "full", hwnd: 1001 });
    // root + 6 children + 4 groups below "deep 0" (deep 1..3 and the leaf)
    expect(all).toMatchObject({ node_count: 11, truncated: false });
    expect(flatten(all.root as Node)).toHaveLength(11);
    const shallow = await h.ok("inspect_tree", { detail: "full", hwnd: 1001, max_depth: 1 });
    expect(shallow).toMatchObject({ node_count: 7, truncated: true });
    expect(flatten(shallow.root as Node).every((n) => n.automation_id !== "deep-1")).toBe(true);
    const rootOnly = await h.ok("inspect_tree", { detail: "full", hwnd: 1001, max_depth: 0 });
    expect(rootOnly).toMatchObject({ node_count: 1, truncated: true });
    const few = await h.ok("inspect_tree", { detail: "full", hwnd: 1001, max_nodes: 3 });
    expect(few).toMatchObject({ node_count: 3, truncated: true });
    expect(flatten(few.root as Node)).toHaveLength(3);
    // Exactly enough nodes is not truncation.
    expect(await h.ok("inspect_tree", { detail: "full", hwnd: 1001, max_nodes: 11 })).toMatchObject({
      node_count: 11,
      truncated: false,
    });
    // A subtree from a ref.
    const deep0 = byId(all.root, "deep-0");
    const sub = await h.ok("inspect_tree", { detail: "full", hwnd: 1001, root_ref: deep0.ref });
    expect((sub.root as Node).automation_id).toBe("deep-0");
    expect(sub).toMatchObject({ node_count: 5, truncated: false });
    for (const bad of [{ max_depth: 33 }, { max_nodes: 5001 }, { max_nodes: 0 }])
      expect((await h.call("inspect_tree", { detail: "full", hwnd: 1001, ...bad })).code).toBe(
        "invalid_argument",
      );
  });

  it("a slow provider is cut at UIINSPECT_TREE_DEADLINE_MS: truncated, never a hang", async () => {
    // A chain: each level waits for the one above, so no parallelism in the walk can beat
    // 31 × 100 ms against a 1500 ms deadline, however slow or fast the machine is.
    const chain = (depth: number): Record<string, unknown> => ({
      role: depth === 0 ? "button" : "group",
      name: `n${depth}`,
      automation_id: `n${depth}`,
      children: depth === 0 ? [] : [chain(depth - 1)],
    });
    const d = new FakeDesktop(scenario([main({ tree: chain(30), a11y_delay_ms: 100 })]));
    const h = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy()),
      UIINSPECT_TREE_DEADLINE_MS: "1500",
    });
    await h.ok("request_access", { hwnd: 1001 });
    const r = await h.ok("inspect_tree", { detail: "full", hwnd: 1001, max_depth: 32, max_nodes: 500 });
    expect(r.truncated).toBe(true);
    expect(r.node_count).toBeGreaterThanOrEqual(1);
    expect(r.node_count).toBeLessThan(31);
    expect(flatten(r.root as Node)).toHaveLength(r.node_count as number);
    const f = await h.ok("find_elements", { detail: "full", hwnd: 1001, role: "button" });
    expect(f.truncated).toBe(true);
    // The server keeps serving.
    expect((await h.ok("list_windows")).windows).toHaveLength(1);
  });

  it("refs go stale after release_access, an instance change and a removed node", async () => {
    const { d, h } = await shared([main()]);
    await h.ok("request_access", { hwnd: 1001 });
    let tree = await h.ok("inspect_tree", { detail: "full", hwnd: 1001 });
    let play = byId(tree.root, "play");
    expect(play.ref).toMatch(/^s\d+\.e\d+$/);
    expect((await h.call("invoke_element", { ref: play.ref })).isError).toBe(false);

    // 1. release_access ends the session: the old ref is stale even after access is back.
    expect((await h.ok("release_access", { hwnd: 1001 })).released).toBe(true);
    expect((await h.call("invoke_element", { ref: play.ref })).code).toBe("element_stale");
    // A released grant's approval is not reused: the person is asked again.
    const again = await h.ok("request_access", { hwnd: 1001 });
    expect(again.source).toBe("dialog");
    expect((await h.call("invoke_element", { ref: play.ref })).code).toBe("element_stale");
    tree = await h.ok("inspect_tree", { detail: "full", hwnd: 1001 });
    const fresh = byId(tree.root, "play");
    expect(fresh.ref).not.toBe(play.ref);
    expect((await h.call("invoke_element", { ref: fresh.ref })).isError).toBe(false);

    // 2. A node removed from the tree: its ref is stale, the others still work.
    const sound = byId(tree.root, "sound");
    d.write(
      scenario([
        main({ tree: { ...TREE, children: TREE.children.filter((c) => c.automation_id !== "play") } }),
      ]),
    );
    expect((await h.call("invoke_element", { ref: fresh.ref })).code).toBe("element_stale");
    tree = await h.ok("inspect_tree", { detail: "full", hwnd: 1001 });
    const sound2 = byId(tree.root, "sound");
    expect((await h.call("toggle_element", { ref: sound2.ref })).isError).toBe(false);
    expect(sound.ref).toBeDefined();

    // 3. PID reuse: same handle and pid, another process start → another instance.
    play = byId((await h.ok("inspect_tree", { detail: "full", hwnd: 1001 })).root, "nick");
    d.write(scenario([main({ process_start: "2026-11-30T10:00:00Z" })]));
    const changed = await h.call("set_element_value", { ref: play.ref, value: "abc" });
    expect(changed.code).toBe("target_changed");
    expect((await h.call("set_element_value", { ref: play.ref, value: "abc" })).code).toBe("element_stale");
    // The new instance has no grant of its own.
    expect((await h.call("inspect_tree", { detail: "full", hwnd: 1001 })).code).toBe("consent_required");
    expect(d.effectsLog().filter((e) => e.action === "set_value")).toHaveLength(0);

    // 4. The window closes: target_gone, and its refs stay stale when a window comes back.
    d.write(scenario([main()]));
    const back = byId((await h.ok("inspect_tree", { detail: "full", hwnd: 1001 })).root, "play");
    d.write(scenario([]));
    expect((await h.call("invoke_element", { ref: back.ref })).code).toBe("target_gone");
    d.write(scenario([main()]));
    expect((await h.call("invoke_element", { ref: back.ref })).code).toBe("element_stale");
    expect(d.effectsLog().filter((e) => e.type === "a11y")).toHaveLength(3);
  });

  it("refs go stale when the grant expires (then access renews silently)", async () => {
    const d = new FakeDesktop(scenario([main()]));
    const time = new ManualTime();
    const h = await start(
      {
        UIINSPECT_FAKE_DESKTOP: d.path,
        DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy()),
        UIINSPECT_GRANT_TTL_MS: "4000",
      },
      time.clock,
    );
    await h.ok("request_access", { hwnd: 1001 });
    const play = byId((await h.ok("inspect_tree", { detail: "full", hwnd: 1001 })).root, "play");
    // The live grant's expiry (inspect_tree may have renewed it).
    const held = (await h.ok("get_access_state")).grants as Array<{ expires_at: string }>;
    expect(held).toHaveLength(1);
    await time.advance(Date.parse(held[0].expires_at) - time.now + 300);
    expect((await h.call("invoke_element", { ref: play.ref })).code).toBe("element_stale");
    const next = byId((await h.ok("inspect_tree", { detail: "full", hwnd: 1001 })).root, "play");
    expect(next.ref).not.toBe(play.ref);
    expect((await h.call("invoke_element", { ref: next.ref })).isError).toBe(false);
    expect(d.promptLog()).toHaveLength(1);
  });

  it("refs of a second window of the same process act on that window", async () => {
    const { d, h } = await shared([main(), second()]);
    await h.ok("request_access", { hwnd: 1001 });
    const a = await h.ok("inspect_tree", { detail: "full", hwnd: 1001 });
    const b = await h.ok("inspect_tree", { detail: "full", hwnd: 1005 });
    expect(flatten(b.root as Node).map((n) => n.name)).toEqual(["Second", "Second go"]);
    const go = byId(b.root, "second");
    const r = await h.call("invoke_element", { ref: go.ref });
    expect(r.isError, JSON.stringify(r.structured)).toBe(false);
    expect(d.effectsLog().filter((e) => e.type === "a11y")).toEqual([
      expect.objectContaining({ hwnd: "1005", action: "invoke", automation_id: "second" }),
    ]);
    // A ref of one window is not a root for the other.
    expect((await h.call("inspect_tree", { detail: "full", hwnd: 1001, root_ref: go.ref })).code).toBe(
      "element_stale",
    );
    expect((await h.call("invoke_element", { ref: byId(a.root, "play").ref })).isError).toBe(false);
    // The first window closing leaves the second one's refs working.
    d.write(scenario([second()]));
    expect((await h.call("invoke_element", { ref: go.ref })).isError).toBe(false);
  });

  it("pattern_not_supported never falls back to a click", async () => {
    const { d, h } = await shared([main()]);
    await h.ok("request_access", { hwnd: 1001 });
    const tree = await h.ok("inspect_tree", { detail: "full", hwnd: 1001 });
    const nick = byId(tree.root, "nick");
    const play = byId(tree.root, "play");
    for (const [tool, ref] of [
      ["invoke_element", nick.ref],
      ["toggle_element", play.ref],
      ["select_element", play.ref],
      ["expand_element", nick.ref],
      ["collapse_element", nick.ref],
    ] as const)
      expect((await h.call(tool, { ref })).code, tool).toBe("pattern_not_supported");
    const effects = d.effectsLog();
    expect(
      effects.filter((e) => e.type === "move" || e.type === "button_down" || e.type === "button_up"),
    ).toEqual([]);
    expect(effects.filter((e) => e.type === "a11y")).toEqual([]);
    expect((await h.call("invoke_element", { ref: play.ref })).isError).toBe(false);
    expect(d.effectsLog().filter((e) => e.type === "a11y")).toEqual([
      expect.objectContaining({ action: "invoke", automation_id: "play" }),
    ]);
  });

  it("set_element_value enters text: the text action, a text grant and a text token, as send_text", async () => {
    const d = new FakeDesktop(scenario([main()]));
    // The text action outside the policy: refused as the action it is, naming it.
    const noText = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(
        filePolicy({ allowed_actions: ["observe", "inspect", "interact"] }),
      ),
    });
    await noText.ok("request_access", { hwnd: 1001 });
    let nick = byId((await noText.ok("inspect_tree", { detail: "full", hwnd: 1001 })).root, "nick");
    const outside = await noText.call("set_element_value", { ref: nick.ref, value: "bob" });
    expect(outside.code).toBe("action_not_allowed");
    expect((outside.structured.error as { message: string }).message).toContain("action text");
    await noText.close();

    const h = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy()),
    });
    // A grant of interact without text does not cover it.
    await h.ok("request_access", { hwnd: 1001, capabilities: ["observe", "inspect", "interact"] });
    nick = byId((await h.ok("inspect_tree", { detail: "full", hwnd: 1001 })).root, "nick");
    expect((await h.call("set_element_value", { ref: nick.ref, value: "bob" })).code).toBe(
      "consent_required",
    );
    await h.ok("release_access", { hwnd: 1001 });
    await h.ok("request_access", { hwnd: 1001 });
    nick = byId((await h.ok("inspect_tree", { detail: "full", hwnd: 1001 })).root, "nick");
    const required = await h.call("set_element_value", { ref: nick.ref, value: "bob" });
    expect(required.code).toBe("confirmation_required");
    expect((required.structured.error as { message: string }).message).toContain("request_confirmation");
    expect(
      (await h.call("set_element_value", { ref: nick.ref, value: "bob", confirmation_token: "bogus" })).code,
    ).toBe("confirmation_invalid");
    const preview = await h.ok("preview_action", { hwnd: 1001, action_class: "text" });
    expect(preview).toMatchObject({ requires_confirmation: true, has_valid_token: false });
    const tok = await h.ok("request_confirmation", { hwnd: 1001, action_class: "text" });
    const ok = await h.call("set_element_value", {
      ref: nick.ref,
      value: "bob",
      confirmation_token: tok.confirmation_token,
    });
    expect(ok.isError).toBe(false);
    // Single use.
    expect(
      (
        await h.call("set_element_value", {
          ref: nick.ref,
          value: "eve",
          confirmation_token: tok.confirmation_token,
        })
      ).code,
    ).toBe("confirmation_invalid");
    const sets = d.effectsLog().filter((e) => e.action === "set_value");
    expect(sets).toEqual([expect.objectContaining({ automation_id: "nick", value: "bob" })]);
  });

  it("click_element clicks the live element's centre and refuses one outside the window", async () => {
    const { d, h } = await shared([main()]);
    await h.ok("request_access", { hwnd: 1001 });
    const tree = await h.ok("inspect_tree", { detail: "full", hwnd: 1001 });
    const play = byId(tree.root, "play");
    expect(play.rect).toEqual([20, 60, 120, 90]);
    const r = await h.ok("click_element", { ref: play.ref });
    // Window origin (100, 100) + centre of [20,60,120,90] = (70, 75).
    expect(r).toMatchObject({ screen_x: 170, screen_y: 175 });
    const moves = () => d.effectsLog().filter((e) => e.type === "move");
    expect(moves().at(-1)).toMatchObject({ x: 170, y: 175 });
    expect(d.effectsLog().filter((e) => e.type === "button_down")).toHaveLength(1);
    // The window moved since the tree was read: the live element is clicked.
    d.write(scenario([main({ rect: [300, 200, 1124, 840] })]));
    await h.ok("click_element", { ref: play.ref, button: "right" });
    expect(moves().at(-1)).toMatchObject({ x: 370, y: 275 });
    expect(
      d
        .effectsLog()
        .filter((e) => e.type === "button_down")
        .at(-1),
    ).toMatchObject({ button: "right" });
    // An element outside the window is refused before any input.
    const before = d.effectsLog().length;
    const far = byId(tree.root, "far");
    expect((await h.call("click_element", { ref: far.ref })).code).toBe("out_of_bounds");
    expect(d.effectsLog().length).toBe(before);
  });

  it("find_elements filters by name, role and automation id", async () => {
    const { h } = await shared([main()]);
    await h.ok("request_access", { hwnd: 1001 });
    const names = async (args: Record<string, unknown>) =>
      ((await h.ok("find_elements", { detail: "full", hwnd: 1001, ...args })).elements as Node[]).map(
        (e) => e.automation_id,
      );
    expect(await names({ name_contains: "PLAY" })).toEqual(["play"]);
    expect(await names({ role: "button" })).toEqual(["play", "far", "deep-leaf"]);
    expect(await names({ role: "edit" })).toEqual(["password", "nick"]);
    expect(await names({ automation_id: "deep-2" })).toEqual(["deep-2"]);
    expect(await names({ role: "group", name_contains: "deep 3" })).toEqual(["deep-3"]);
    expect(await names({ role: "button", name_contains: "nick" })).toEqual([]);
    const capped = await h.ok("find_elements", { detail: "full", hwnd: 1001, role: "group", max_results: 2 });
    expect((capped.elements as Node[]).length).toBe(2);
    expect(capped.truncated).toBe(true);
    expect((await h.call("find_elements", { detail: "full", hwnd: 1001, role: "spaceship" })).code).toBe(
      "invalid_argument",
    );
    // Refs from find_elements act like those of inspect_tree.
    const [sound] = (await h.ok("find_elements", { detail: "full", hwnd: 1001, automation_id: "sound" }))
      .elements as Node[];
    expect((await h.call("toggle_element", { ref: sound.ref })).isError).toBe(false);
  });

  it("inspections and actions use separate budgets", async () => {
    const d = new FakeDesktop(scenario([main()]));
    const h = await start({
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_POLICY_FILE: d.writePolicy(filePolicy()),
      UIINSPECT_MAX_INSPECTIONS_PER_MINUTE: "3",
      UIINSPECT_MAX_CLIENT_ACTIONS_PER_MINUTE: "2",
    });
    await h.ok("request_access", { hwnd: 1001 });
    const tree = await h.ok("inspect_tree", { detail: "full", hwnd: 1001 });
    await h.ok("find_elements", { detail: "full", hwnd: 1001, role: "button" });
    await h.ok("inspect_tree", { detail: "full", hwnd: 1001, max_depth: 1 });
    const limited = await h.call("inspect_tree", { detail: "full", hwnd: 1001 });
    expect(limited.code).toBe("rate_limited");
    expect((limited.structured.error as { retry_after_ms: number }).retry_after_ms).toBeGreaterThan(0);
    expect((await h.call("find_elements", { detail: "full", hwnd: 1001 })).code).toBe("rate_limited");
    // Actions still have their own budget…
    const play = byId(tree.root, "play");
    expect((await h.call("invoke_element", { ref: play.ref })).isError).toBe(false);
    expect((await h.call("click_element", { ref: play.ref })).isError).toBe(false);
    // …until it is used up too.
    expect((await h.call("invoke_element", { ref: play.ref })).code).toBe("rate_limited");
    const state = await h.ok("get_rate_limit_state");
    expect(state.client).toMatchObject({ inspection: { used: 3, limit: 3 }, action: { used: 2, limit: 2 } });
    expect(d.effectsLog().filter((e) => e.type === "a11y")).toHaveLength(1);
    expect(d.effectsLog().filter((e) => e.type === "button_down")).toHaveLength(1);
    const events = (await h.ok("get_audit_events", { limit: 20 })).events as Array<Record<string, unknown>>;
    expect(events.filter((e) => e.reason === "rate_limited").length).toBeGreaterThanOrEqual(3);
  });
});
