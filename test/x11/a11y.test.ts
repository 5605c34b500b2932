import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { COMMON_ROLES } from "../../src/platforms/x11/roles.js";
import { isUiError } from "../../src/shared/errors.js";
import type { A11yHandle, A11yNodeFacts, A11ySession, Platform } from "../../src/shared/platform.js";
import {
  atspiBus,
  atspiText,
  startApp,
  startSession,
  waitForWindow,
  X11_AVAILABLE,
  type X11Session,
} from "./support.js";

async function walk(s: A11ySession): Promise<Array<{ h: A11yHandle; f: A11yNodeFacts }>> {
  const out: Array<{ h: A11yHandle; f: A11yNodeFacts }> = [];
  const queue = [await s.root()];
  while (queue.length > 0 && out.length < 500) {
    const h = queue.shift();
    out.push({ h, f: await s.facts(h) });
    queue.push(...(await s.children(h)));
  }
  return out;
}

async function codeOf(p: Promise<unknown>): Promise<string | null> {
  try {
    await p;
    return null;
  } catch (e) {
    return isUiError(e) ? e.code : "not-a-UiError";
  }
}

describe.skipIf(!X11_AVAILABLE)("x11 accessibility port (AT-SPI2) on GTK windows", () => {
  let session: X11Session;
  let p: Platform;

  beforeAll(async () => {
    session = startSession();
    const { createX11Platform } = await import("../../src/platforms/x11/index.js");
    p = await createX11Platform({ workerKind: "uia" });
  });

  afterAll(async () => {
    await p?.dispose();
    session?.stop();
  });

  it("maps a GTK form: roles, screen rects inside the window, patterns, the password field flagged", async () => {
    startApp("zenity", ["--forms", "--title=uix forms", "--add-entry=Login", "--add-password=Secret"]);
    const w = await waitForWindow(p, "uix forms");
    const s = await p.accessibility.openSession(w);
    const nodes = await walk(s);
    // zenity windows are GTK dialogs: AT-SPI "dialog" is the vocabulary role "dialog" (docs/roles.md).
    expect(nodes[0]!.f.role).toBe("dialog");
    for (const { f } of nodes) {
      expect(COMMON_ROLES).toContain(f.role);
      if (f.rect && !f.offscreen) {
        expect(f.rect[0]).toBeGreaterThanOrEqual(w.rect[0]);
        expect(f.rect[1]).toBeGreaterThanOrEqual(w.rect[1]);
        expect(f.rect[2]).toBeLessThanOrEqual(w.rect[2]);
        expect(f.rect[3]).toBeLessThanOrEqual(w.rect[3]);
      }
    }
    const edits = nodes.filter((n) => n.f.role === "edit");
    expect(edits.length).toBe(2);
    const pw = edits.filter((n) => n.f.is_password);
    expect(pw.length).toBe(1);
    expect(edits.every((n) => n.f.patterns.includes("value"))).toBe(true);
    const buttons = nodes.filter((n) => n.f.role === "button");
    expect(buttons.length).toBeGreaterThanOrEqual(2);
    expect(buttons.every((b) => b.f.patterns.includes("invoke") && b.f.enabled)).toBe(true);
    expect(nodes.some((n) => n.f.role === "label" && n.f.patterns.length === 0)).toBe(true);
    // A label has no action: asking for one is pattern_not_supported, never a blind DoAction.
    const label = nodes.find((n) => n.f.role === "label")!;
    expect(await codeOf(s.act(label.h, "invoke"))).toBe("pattern_not_supported");
    expect(await codeOf(s.act(label.h, "set_value", "x"))).toBe("pattern_not_supported");
    await s.dispose();
  });

  it("sets a value with EditableText and invokes OK by action name; the dialog returns the value", async () => {
    const app = startApp("zenity", ["--entry", "--title=uix setvalue", "--text=Value"]);
    const w = await waitForWindow(p, "uix setvalue");
    const s = await p.accessibility.openSession(w);
    const nodes = await walk(s);
    const entry = nodes.find((n) => n.f.role === "edit")!;
    await s.act(entry.h, "set_value", "set through AT-SPI ✓");
    const bus = await atspiBus();
    try {
      expect(await atspiText(bus, entry.h as { bus: string; path: string })).toBe("set through AT-SPI ✓");
    } finally {
      bus.disconnect();
    }
    const ok = nodes.find((n) => n.f.role === "button" && n.f.name === "OK")!;
    expect(await s.alive(ok.h)).toBe(true);
    await s.act(ok.h, "invoke");
    expect(await app.exited).toBe(0);
    expect(app.stdout()).toBe("set through AT-SPI ✓\n");
    // The application is gone: its nodes are stale, with a code.
    expect(await s.alive(ok.h)).toBe(false);
    expect(await codeOf(s.facts(ok.h))).toBe("element_stale");
    expect(await codeOf(s.act(ok.h, "invoke"))).toBe("element_stale");
    await s.dispose();
  });

  it("invokes the No button (exit 1) and picks the frame of the right process among several", async () => {
    const a = startApp("zenity", ["--question", "--title=uix question a", "--text=A?"]);
    const b = startApp("zenity", ["--question", "--title=uix question b", "--text=B?"]);
    const wa = await waitForWindow(p, "uix question a");
    await waitForWindow(p, "uix question b");
    const s = await p.accessibility.openSession(wa);
    const nodes = await walk(s);
    expect(nodes[0]!.f.rect).not.toBeNull();
    const no = nodes.find((n) => n.f.role === "button" && n.f.name === "No")!;
    await s.act(no.h, "invoke");
    expect(await a.exited).toBe(1);
    expect(b.child.exitCode).toBeNull();
    await s.dispose();
  });

  it("toggles a check cell of a GTK list by action name; select on a multi-column list is refused with a code", async () => {
    const app = startApp("zenity", [
      "--list",
      "--checklist",
      "--title=uix list",
      "--column=Pick",
      "--column=Name",
      "TRUE",
      "alpha",
      "FALSE",
      "beta",
    ]);
    const w = await waitForWindow(p, "uix list");
    const s = await p.accessibility.openSession(w);
    const nodes = await walk(s);
    const cells = nodes.filter((n) => n.f.role === "cell");
    const toggles = cells.filter((n) => n.f.patterns.includes("toggle"));
    expect(toggles.length).toBe(2);
    expect(cells.every((n) => n.f.patterns.includes("selection_item"))).toBe(true);
    await s.act(toggles[1]!.h, "toggle");
    // GTK 3 tree views refuse Selection.SelectChild with more than one column: a coded refusal.
    const beta = cells.find((n) => n.f.name === "beta")!;
    expect(await codeOf(s.act(beta.h, "select"))).toBe("pattern_not_supported");
    const ok = nodes.find((n) => n.f.role === "button" && n.f.name === "OK")!;
    await s.act(ok.h, "invoke");
    expect(await app.exited).toBe(0);
    expect(app.stdout()).toBe("alpha|beta\n");
    await s.dispose();
  });

  it("selects a row of a single-column GTK list through the parent's Selection", async () => {
    const app = startApp("zenity", ["--list", "--title=uix pick", "--column=Name", "alpha", "beta", "gamma"]);
    const w = await waitForWindow(p, "uix pick");
    const s = await p.accessibility.openSession(w);
    const nodes = await walk(s);
    const beta = nodes.find((n) => n.f.role === "cell" && n.f.name === "beta")!;
    expect(beta.f.patterns).toContain("selection_item");
    await s.act(beta.h, "select");
    const ok = nodes.find((n) => n.f.role === "button" && n.f.name === "OK")!;
    await s.act(ok.h, "invoke");
    expect(await app.exited).toBe(0);
    expect(app.stdout()).toBe("beta\n");
    await s.dispose();
  });
});
