import dbus from "dbus-next";
import { expect } from "vitest";
import type { A11yHandle, A11yNodeFacts, Platform, WindowInfo } from "../../src/shared/platform.js";
import { LOOSE_BUDGETS, McpHarness } from "../support/mcp.js";
import {
  approveConsentDialog,
  atspiBus,
  startApp,
  startSession,
  UNSAFE_XTEST,
  waitForExe,
  waitForWindow,
  type X11Session,
} from "./support.js";

/**
 * The GTK desk of the X11 end-to-end tests: gtk3-widget-factory and gtk3-demo on a private
 * Xvfb desktop, the built server with access granted to both (through our own consent dialog, answered with xdotool under the unsafe XTest setting),
 * and the test's own AT-SPI connection for reading effects back.
 */

export type Rect = [number, number, number, number];
export interface Element {
  ref: string;
  role: string;
  name: string | null;
  rect: Rect | null;
  states: string[];
  popup?: boolean;
  patterns: string[];
  offscreen: boolean;
  children?: Element[];
}
export interface Node {
  h: { bus: string; path: string; parent: unknown };
  f: A11yNodeFacts;
}

export interface GtkDesk {
  session: X11Session;
  p: Platform;
  h: McpHarness;
  bus: dbus.MessageBus;
  factory: WindowInfo;
  demo: WindowInfo;
}

export async function startGtkDesk(actions: string, env: Record<string, string> = {}): Promise<GtkDesk> {
  const session = startSession();
  const { createX11Platform } = await import("../../src/platforms/x11/index.js");
  const p = await createX11Platform({ workerKind: "other" });
  startApp("gtk3-widget-factory", []);
  const factory = await waitForWindow(p, "gtk3-widget-factory");
  startApp("gtk3-demo", []);
  // gtk3-demo's title follows the selected demo: find it by its executable.
  const demo = await waitForExe(p, "/gtk3-demo");
  const bus = await atspiBus();
  const h = await McpHarness.start({
    ...UNSAFE_XTEST,
    ...LOOSE_BUDGETS,
    DESKTOP_AUTOMATION_ALLOWED_TITLES: "*",
    DESKTOP_AUTOMATION_ALLOWED_PROCESS_PATHS: [factory.instance!.exe_path, demo.instance!.exe_path].join(";"),
    DESKTOP_AUTOMATION_ALLOWED_ACTIONS: actions,
    ...env,
  });
  for (const w of [factory, demo]) {
    const pending = h.call("request_access", { hwnd: w.hwnd });
    await approveConsentDialog();
    expect((await pending).structured.decision).toBe("approved");
  }
  return { session, p, h, bus, factory, demo };
}

export async function stopGtkDesk(d: Partial<GtkDesk>): Promise<void> {
  await d.h?.close();
  d.bus?.disconnect();
  await d.p?.dispose();
  d.session?.stop();
}

/** The live tree as the test's own AT-SPI walk sees it (visible nodes only, unless `all`). */
export async function walkTree(p: Platform, w: WindowInfo, all = false): Promise<Node[]> {
  const s = await p.accessibility.openSession(w);
  const out: Node[] = [];
  try {
    const queue: A11yHandle[] = [await s.root()];
    while (queue.length > 0) {
      const n = queue.shift();
      const f = await s.facts(n);
      if (!all && f.offscreen) continue;
      out.push({ h: n as Node["h"], f });
      queue.push(...(await s.children(n)));
    }
  } finally {
    await s.dispose();
  }
  return out;
}

/** One AT-SPI call on the test's own connection. */
export async function atspiCall(
  bus: dbus.MessageBus,
  node: { bus: string; path: string },
  iface: string,
  member: string,
  signature?: string,
  body?: unknown[],
): Promise<unknown[]> {
  const reply = await bus.call(
    new dbus.Message({ destination: node.bus, path: node.path, interface: iface, member, signature, body }),
  );
  return reply?.body ?? [];
}

/** AT-SPI's own state set of a node, as bit numbers. */
export async function atspiStateSet(
  bus: dbus.MessageBus,
  node: { bus: string; path: string },
): Promise<Set<number>> {
  const words = (await atspiCall(bus, node, "org.a11y.atspi.Accessible", "GetState"))[0] as number[];
  const out = new Set<number>();
  words.forEach((word, i) => {
    for (let b = 0; b < 32; b++) if ((word >>> b) & 1) out.add(i * 32 + b);
  });
  return out;
}

/** The AT-SPI node of an MCP element: same role and the same screen rect. */
export function nodeOf(nodes: Node[], w: WindowInfo, e: Element): Node {
  const r = e.rect!;
  const hit = nodes.find(
    (n) =>
      n.f.role === e.role &&
      n.f.rect !== null &&
      n.f.rect[0] === r[0] + w.rect[0] &&
      n.f.rect[1] === r[1] + w.rect[1] &&
      n.f.rect[2] === r[2] + w.rect[0] &&
      n.f.rect[3] === r[3] + w.rect[1],
  );
  if (!hit) throw new Error(`no AT-SPI node for a ${e.role}`);
  return hit;
}

/**
 * On screen now. Other notebook/stack pages report offscreen nodes; GTK tree rows scrolled out
 * of view are not flagged offscreen but have huge negative extents.
 */
export const shown = (e: Element) => !e.offscreen && e.rect !== null && e.rect[0] >= 0 && e.rect[1] >= 0;
