import { uiError } from "../../src/shared/errors.js";
import type { Rect } from "../../src/shared/geometry.js";
import type { ProcessInstance } from "../../src/shared/identity.js";
import type {
  A11yHandle,
  A11yNodeFacts,
  A11ySession,
  AccessibilityPort,
  DesktopPort,
  Platform,
  SemanticAction,
  WindowInfo,
} from "../../src/shared/platform.js";
import type { TargetExpectation } from "../../src/shared/protocol.js";
import type { HandlerContext } from "../../src/workers/handlers.js";

/**
 * A small in-test accessibility provider, for what the fake desktop cannot script: providers
 * that never answer, that hand out a new handle object per call, and call counting.
 */
export interface DoubleNode {
  id: string;
  facts?: Partial<A11yNodeFacts>;
  children?: DoubleNode[];
  /** facts()/children() of this node never settle. */
  hang?: boolean;
}

export const DOUBLE_INSTANCE: ProcessInstance = {
  pid: 777,
  start_time: "2026-11-30T08:00:00.000Z",
  exe_path: "/usr/bin/app",
  session: ":0:1000",
};

export const DOUBLE_TARGET: TargetExpectation = { hwnd: "42", instance: DOUBLE_INSTANCE };

export interface DoubleOptions {
  /** A new handle object per call (like COM pointers), instead of one per node. */
  freshHandles?: boolean;
  /** Runs inside openSession before it returns (to change the desktop during an attach). */
  onOpen?: () => Promise<void> | void;
  /** Delay per facts()/children() call. */
  delayMs?: number;
  windowRect?: Rect;
}

class Handle {
  constructor(readonly node: DoubleNode) {}
}

export class DoubleProvider implements AccessibilityPort {
  calls = { facts: 0, children: 0, act: 0, openSession: 0, dispose: 0 };
  inFlight = 0;
  maxInFlight = 0;
  acted: { id: string; action: SemanticAction }[] = [];
  removed = new Set<string>();
  private readonly interned = new Map<DoubleNode, Handle>();

  constructor(
    readonly root: DoubleNode,
    readonly opts: DoubleOptions = {},
  ) {}

  private handle(n: DoubleNode): Handle {
    if (this.opts.freshHandles) return new Handle(n);
    let h = this.interned.get(n);
    if (h === undefined) {
      h = new Handle(n);
      this.interned.set(n, h);
    }
    return h;
  }

  private async slow<T>(n: DoubleNode, fn: () => T): Promise<T> {
    if (n.hang) return new Promise<T>(() => {});
    this.inFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      const ms = this.opts.delayMs ?? 0;
      await (ms > 0 ? new Promise((r) => setTimeout(r, ms)) : Promise.resolve());
      if (this.removed.has(n.id)) throw uiError("element_stale");
      return fn();
    } finally {
      this.inFlight -= 1;
    }
  }

  async openSession(_window: WindowInfo): Promise<A11ySession> {
    this.calls.openSession += 1;
    await this.opts.onOpen?.();
    const self = this;
    let disposed = false;
    const node = (h: A11yHandle): DoubleNode => {
      if (disposed || !(h instanceof Handle)) throw uiError("element_stale");
      return h.node;
    };
    return {
      async root() {
        return self.handle(self.root);
      },
      async facts(h) {
        const n = node(h);
        self.calls.facts += 1;
        return self.slow(n, () => ({
          role: "button",
          name: n.id,
          automation_id: n.id,
          class_name: null,
          rect: [10, 10, 20, 20] as Rect,
          enabled: true,
          offscreen: false,
          focused: false,
          is_password: false,
          patterns: [],
          ...n.facts,
        }));
      },
      async children(h) {
        const n = node(h);
        self.calls.children += 1;
        return self.slow(n, () =>
          (n.children ?? []).filter((c) => !self.removed.has(c.id)).map((c) => self.handle(c)),
        );
      },
      async act(h, action) {
        const n = node(h);
        self.calls.act += 1;
        if (!(n.facts?.patterns ?? []).length) throw uiError("pattern_not_supported");
        self.acted.push({ id: n.id, action });
      },
      async alive(h) {
        return !disposed && h instanceof Handle && !self.removed.has(h.node.id);
      },
      async dispose() {
        disposed = true;
        self.calls.dispose += 1;
      },
    };
  }
}

export function doubleWindow(rect: Rect = [0, 0, 800, 600]): WindowInfo {
  return {
    hwnd: "42",
    title: "Double",
    window_class: "Double",
    pid: DOUBLE_INSTANCE.pid,
    instance: DOUBLE_INSTANCE,
    rect,
    visible: true,
    iconic: false,
    foreground: true,
    on_top: false,
    z: 0,
  };
}

/** The double's desktop shows `current.window` (a test may replace it). */
export function doublePlatform(
  provider: DoubleProvider,
  rect?: Rect,
  current = { window: doubleWindow(rect) },
): Platform {
  const win = current.window;
  const desktop: DesktopPort = {
    platform: "fake",
    listWindows: async () => [current.window],
    getWindow: async (hwnd) => (hwnd === win.hwnd ? win : null),
    isInstanceAlive: async () => true,
    virtualScreen: async () => [0, 0, 1920, 1080],
    health: async () => ({}),
    restoreWindow: async () => {},
    activateWindow: async () => {},
    closeWindow: async () => {},
    dispose: async () => {},
  };
  const never = (): never => {
    throw new Error("not used by these tests");
  };
  return {
    desktop,
    capture: { captureScreen: async () => never() },
    input: {
      moveTo: async () => never(),
      buttonDown: async () => never(),
      buttonUp: async () => never(),
      wheel: async () => never(),
      keyDown: async () => never(),
      keyUp: async () => never(),
      typeText: async () => never(),
    },
    accessibility: provider,
    dispose: async () => {},
  };
}

export function doubleCtx(
  platform: Platform,
  signal = new AbortController().signal,
  budgetMs = 10_000,
): HandlerContext {
  return {
    signal,
    deadline: Date.now() + budgetMs,
    init: { kind: "uia", platform: "fake", fake_desktop: null, log_level: "silent" },
    platform,
  };
}

/** A tree of `count` nodes, `fanout` children each, breadth first ids n0, n1, … */
export function wideTree(count: number, fanout: number): DoubleNode {
  const nodes: DoubleNode[] = Array.from({ length: count }, (_, i) => ({ id: `n${i}`, children: [] }));
  for (let i = 1; i < count; i += 1)
    nodes[Math.floor((i - 1) / fanout)]?.children?.push(nodes[i] as DoubleNode);
  return nodes[0] as DoubleNode;
}
