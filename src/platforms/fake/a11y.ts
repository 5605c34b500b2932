import { setTimeout as sleep } from "node:timers/promises";
import { uiError } from "../../shared/errors.js";
import { toScreen } from "../../shared/geometry.js";
import { type ProcessInstance, sameInstance } from "../../shared/identity.js";
import type {
  A11yHandle,
  A11yNodeFacts,
  A11ySession,
  AccessibilityPort,
  SemanticAction,
  WindowInfo,
} from "../../shared/platform.js";
import { ACTION_PATTERN } from "../../shared/roles.js";
import { type FakeContext, findWindow, instanceOf } from "./context.js";
import type { ScenarioNode, ScenarioWindow } from "./scenario.js";

export { ACTION_PATTERN };

/** How deep under a list / combo box select_option looks for the option (combo → list → item). */
const OPTION_DEPTH = 2;

/**
 * A node handle: the index chain from the root plus a fingerprint of the node it named, both
 * checked against the live tree on every access (the file may change between calls). The
 * fingerprint is role + automation_id, or role + name for a node without an automation_id: a
 * node replaced by another at the same place is stale rather than silently retargeted (a renamed
 * node without an automation_id is therefore stale too, the conservative side). Like UIA COM
 * elements, every root()/children() call returns new handle objects, even for the same node.
 */
export class FakeA11yHandle {
  constructor(
    readonly session: number,
    readonly path: readonly number[],
    readonly fingerprint: string,
    /** The window whose tree the path walks: the granted one, or one of its instance's popups. */
    readonly hwnd: string,
  ) {}
}

function fingerprint(n: ScenarioNode): string {
  return n.automation_id !== undefined ? `${n.role}\u0000#${n.automation_id}` : `${n.role}\u0000=${n.name}`;
}

function rootOf(w: ScenarioWindow): ScenarioNode {
  if (w.tree !== undefined) return w.tree;
  // A window without a scripted tree still has a root element, like a UIA window element.
  return { role: "window", name: w.title, rect: [0, 0, w.rect[2] - w.rect[0], w.rect[3] - w.rect[1]] };
}

let nextSession = 1;

class FakeA11ySession implements A11ySession {
  private readonly id = nextSession++;
  private disposed = false;

  constructor(
    private readonly ctx: FakeContext,
    private readonly hwnd: string,
    private readonly instance: ProcessInstance,
  ) {}

  async root(): Promise<A11yHandle> {
    const w = await this.window();
    const r = rootOf(w);
    return new FakeA11yHandle(this.id, [], fingerprint(r), this.hwnd);
  }

  identity(node: A11yHandle): string | null {
    if (!(node instanceof FakeA11yHandle) || node.session !== this.id) return null;
    return `${node.hwnd}\u0000${node.path.join(".")}\u0000${node.fingerprint}`;
  }

  /** The instance's other visible, not minimized windows (its menus, popups and dialogs). */
  async popupRoots(): Promise<A11yHandle[]> {
    await this.window();
    const s = this.ctx.scenario();
    return s.windows
      .filter(
        (w) =>
          String(w.hwnd) !== this.hwnd &&
          w.visible &&
          !w.iconic &&
          sameInstance(instanceOf(s, w), this.instance),
      )
      .map((w) => new FakeA11yHandle(this.id, [], fingerprint(rootOf(w)), String(w.hwnd)));
  }

  async facts(node: A11yHandle): Promise<A11yNodeFacts> {
    const h = this.handle(node);
    const w = await this.window();
    await this.delay(w);
    const { node: n, window } = await this.resolve(h);
    let rect = n.rect !== undefined ? toScreen(window.rect, n.rect) : null;
    if (rect === null && h.path.length === 0)
      rect = [window.rect[0], window.rect[1], window.rect[2], window.rect[3]];
    return {
      role: n.role,
      name: n.name,
      automation_id: n.automation_id ?? null,
      class_name: n.class_name ?? null,
      rect,
      enabled: n.enabled ?? true,
      offscreen: n.offscreen ?? false,
      focused: n.focused ?? false,
      is_password: n.is_password ?? false,
      patterns: [...(n.patterns ?? [])],
      states: [...(n.states ?? [])],
    };
  }

  async children(node: A11yHandle): Promise<A11yHandle[]> {
    const h = this.handle(node);
    const w = await this.window();
    await this.delay(w);
    const { node: n } = await this.resolve(h);
    return (n.children ?? []).map(
      (c, i) => new FakeA11yHandle(this.id, [...h.path, i], fingerprint(c), h.hwnd),
    );
  }

  async act(node: A11yHandle, action: SemanticAction, value?: string): Promise<void> {
    const h = this.handle(node);
    const { node: n, window } = await this.resolve(h);
    const needed = ACTION_PATTERN[action];
    if (needed === undefined) throw uiError("invalid_argument", "Unknown semantic action.");
    if (!(n.patterns ?? []).includes(needed)) throw uiError("pattern_not_supported");
    if (n.enabled === false) throw uiError("pattern_not_supported", "The element is disabled.");
    if ((action === "set_value" || action === "select_option") && typeof value !== "string") {
      throw uiError("invalid_argument", "This action needs a value.");
    }
    if (action === "select_option") {
      // The option is a selectable descendant named exactly so (case aside), like a UIA list item.
      const option = findOption(n, value ?? "", OPTION_DEPTH);
      if (option === null) throw uiError("target_not_found", "No option has that name.");
      this.ctx.effects.append({
        type: "a11y",
        hwnd: String(window.hwnd),
        action,
        automation_id: n.automation_id ?? null,
        option_automation_id: option.automation_id ?? null,
      });
      return;
    }
    this.ctx.effects.append({
      type: "a11y",
      hwnd: String(window.hwnd),
      action,
      automation_id: n.automation_id ?? null,
      ...(action === "set_value" ? { value } : {}),
    });
  }

  async alive(node: A11yHandle): Promise<boolean> {
    const h = this.handle(node);
    try {
      await this.resolve(h);
      return true;
    } catch (e) {
      if (e instanceof Error && "code" in e && e.code === "element_stale") return false;
      throw e;
    }
  }

  async dispose(): Promise<void> {
    this.disposed = true;
  }

  private handle(node: A11yHandle): FakeA11yHandle {
    if (this.disposed) throw uiError("element_stale");
    if (!(node instanceof FakeA11yHandle) || node.session !== this.id) throw uiError("element_stale");
    return node;
  }

  /** A live window of this session (same process instance), after its fault if any. */
  private async window(hwnd: string = this.hwnd): Promise<ScenarioWindow> {
    if (this.disposed) throw uiError("element_stale");
    const s = this.ctx.scenario();
    const w = findWindow(s, hwnd);
    if (w === null || !sameInstance(instanceOf(s, w), this.instance)) throw uiError("element_stale");
    await this.ctx.touch(w);
    return w;
  }

  private async resolve(h: FakeA11yHandle): Promise<{ node: ScenarioNode; window: ScenarioWindow }> {
    // A popup that was hidden is gone for its refs, like a closed menu.
    const window = await this.window(h.hwnd);
    if (h.hwnd !== this.hwnd && (!window.visible || window.iconic)) throw uiError("element_stale");
    let n: ScenarioNode | undefined = rootOf(window);
    for (const i of h.path) {
      n = n.children?.[i];
      if (n === undefined) throw uiError("element_stale");
    }
    if (fingerprint(n) !== h.fingerprint) throw uiError("element_stale");
    return { node: n, window };
  }

  private async delay(w: ScenarioWindow): Promise<void> {
    const ms = w.a11y_delay_ms ?? 0;
    if (ms > 0) await sleep(ms);
  }
}

function findOption(n: ScenarioNode, name: string, depth: number): ScenarioNode | null {
  const want = name.trim().toLowerCase();
  let level: ScenarioNode[] = n.children ?? [];
  for (let d = 0; d < depth && level.length > 0; d += 1) {
    const hit = level.find(
      (c) => (c.patterns ?? []).includes("selection_item") && c.name.trim().toLowerCase() === want,
    );
    if (hit !== undefined) return hit;
    level = level.flatMap((c) => c.children ?? []);
  }
  return null;
}

export class FakeAccessibility implements AccessibilityPort {
  constructor(private readonly ctx: FakeContext) {}

  async openSession(window: WindowInfo): Promise<A11ySession> {
    const s = this.ctx.scenario();
    const w = findWindow(s, window.hwnd);
    if (w === null) throw uiError("target_gone");
    const live = instanceOf(s, w);
    if (window.instance === null || !sameInstance(live, window.instance)) throw uiError("target_changed");
    await this.ctx.touch(w);
    return new FakeA11ySession(this.ctx, String(w.hwnd), live);
  }
}
