import { afterAll, describe, expect, it } from "vitest";
import { FakeDesktop, LOOSE_BUDGETS, McpHarness } from "../support/mcp.js";

/**
 * 32 parallel inspect_tree calls on 6 windows (3 process instances, 2 windows each, distinct
 * trees) through the built CLI: every result holds only its own window's names, refs never
 * cross windows (invoking each window's button lands on that window), and the supervisor's
 * event-loop delay is recorded (no timing assertion).
 */

const EXE = "C:\\Apps\\tree\\tree.exe";
const WINDOWS = 6;
const CALLS = 32;

function tree(w: number): Record<string, unknown> {
  // 1 + 4 + 4×5 = 25 nodes, every name and automation id prefixed by the window.
  return {
    role: "window",
    name: `W${w} root`,
    automation_id: `w${w}-root`,
    children: Array.from({ length: 4 }, (_, g) => ({
      role: "group",
      name: `W${w} group ${g}`,
      automation_id: `w${w}-g${g}`,
      rect: [10, 10 + g * 60, 300, 60 + g * 60],
      children: Array.from({ length: 5 }, (_, b) => ({
        role: "button",
        name: `W${w} button ${g}.${b}`,
        automation_id: `w${w}-b${g}.${b}`,
        rect: [20 + b * 50, 20 + g * 60, 60 + b * 50, 50 + g * 60],
        patterns: ["invoke"],
      })),
    })),
  };
}

const windows = Array.from({ length: WINDOWS }, (_, i) => ({
  hwnd: 6001 + i,
  title: `Tree ${i}`,
  class: "TreeWindow",
  pid: 7001 + (i % 3),
  process_start: "2026-11-30T08:00:00Z",
  process_path: EXE,
  rect: [(i % 3) * 640, Math.floor(i / 3) * 500, (i % 3) * 640 + 600, Math.floor(i / 3) * 500 + 480],
  visible: true,
  iconic: false,
  z: i,
  fill: "#336699",
  tree: tree(i),
}));

interface Node {
  ref: string;
  name: string | null;
  automation_id: string | null;
  children: Node[];
}
const flatten = (n: Node): Node[] => [n, ...n.children.flatMap(flatten)];

let h: McpHarness | undefined;
afterAll(async () => {
  await h?.close();
});

describe("concurrent inspect_tree on several windows", () => {
  it("never mixes results between windows", async () => {
    const d = new FakeDesktop({
      session: 1,
      foreground: 6001,
      windows,
      consent: { answer: "approve", delay_ms: 0 },
    });
    h = await McpHarness.start({
      UIINSPECT_PLATFORM: "fake",
      UIINSPECT_FAKE_DESKTOP: d.path,
      DESKTOP_AUTOMATION_ALLOWED_TITLES: "Tree *",
      DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS: EXE,
      DESKTOP_AUTOMATION_ALLOWED_ACTIONS: "inspect,interact",
      ...LOOSE_BUDGETS,
    });
    const harness = h;
    for (const hwnd of [6001, 6002, 6003]) await harness.ok("request_access", { hwnd });

    const results = await Promise.all(
      Array.from({ length: CALLS }, async (_, k) => {
        const w = k % WINDOWS;
        const r = await harness.call("inspect_tree", { detail: "full", hwnd: 6001 + w });
        return { w, r };
      }),
    );
    const refsOf = new Map<number, Set<string>>();
    const tagsOf = new Map<number, Set<string>>();
    for (const { w, r } of results) {
      expect(r.isError, JSON.stringify(r.structured)).toBe(false);
      // The instance's other window (same pid: w ± 3) is part of the granted window, as a popup
      // root; no window of another instance ever is.
      const sibling = (w + 3) % WINDOWS;
      expect(r.structured).toMatchObject({ node_count: 50, truncated: false });
      const popups = r.structured.popups as Node[];
      expect(popups).toHaveLength(1);
      for (const n of flatten(popups[0]!)) expect(n.name?.startsWith(`W${sibling} `)).toBe(true);
      const nodes = flatten(r.structured.root as Node);
      expect(nodes).toHaveLength(25);
      for (const n of nodes) {
        expect(n.name?.startsWith(`W${w} `), `window ${w} got ${n.name}`).toBe(true);
        expect(n.automation_id?.startsWith(`w${w}-`)).toBe(true);
        (refsOf.get(w) ?? refsOf.set(w, new Set()).get(w))?.add(n.ref);
        (tagsOf.get(w) ?? tagsOf.set(w, new Set()).get(w))?.add(n.ref.split(".")[0]);
      }
      const text = r.content.map((c) => c.text ?? "").join("\n");
      for (let other = 0; other < WINDOWS; other++)
        if (other !== w && other !== sibling) expect(text).not.toContain(`W${other} `);
    }
    // One session tag per window, and no ref shared between windows.
    const allTags = [...tagsOf.values()].map((s) => [...s]);
    for (const t of allTags) expect(t).toHaveLength(1);
    expect(new Set(allTags.flat()).size).toBe(WINDOWS);
    const seen = new Map<string, number>();
    for (const [w, refs] of refsOf)
      for (const ref of refs) {
        expect(seen.get(ref) ?? w).toBe(w);
        seen.set(ref, w);
      }

    // Invoking one button per window, all at once, lands on that window's element.
    await Promise.all(
      results.slice(0, WINDOWS).map(async ({ w, r }) => {
        const target = flatten(r.structured.root as Node).find((n) => n.automation_id === `w${w}-b2.3`);
        const res = await harness.call("invoke_element", { ref: target?.ref });
        expect(res.isError, JSON.stringify(res.structured)).toBe(false);
      }),
    );
    const acts = d.effectsLog().filter((e) => e.type === "a11y");
    expect(acts).toHaveLength(WINDOWS);
    for (const e of acts) expect(e.automation_id).toBe(`w${Number(e.hwnd) - 6001}-b2.3`);

    const health = await harness.ok("health_check");
    const loop = health.event_loop as { p50_ms: number; p99_ms: number; max_ms: number };
    expect(Number.isFinite(loop.p99_ms)).toBe(true);
    process.stderr.write(
      `${JSON.stringify({ parallel_inspect_tree: CALLS, windows: WINDOWS, event_loop: loop })}\n`,
    );
  });
});
