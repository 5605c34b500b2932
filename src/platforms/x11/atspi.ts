import { uiError } from "../../shared/errors.js";
import { intersect, rectArea, sameRect } from "../../shared/geometry.js";
import type { A11ySession, AccessibilityPort, WindowInfo } from "../../shared/platform.js";
import { ACCESSIBLE, AtspiBus, COORD_SCREEN, REGISTRY, ROOT_PATH, refs, staleToUi } from "./atspiBus.js";
import { COMPONENT, extentsRect } from "./atspiFacts.js";
import { AtspiSession, type Node, type PopupAreas } from "./atspiSession.js";

export type { PopupAreas } from "./atspiSession.js";

/**
 * AT-SPI2 over D-Bus with dbus-next's low-level bus.call (no introspection per node). The a11y
 * bus address comes from org.a11y.Bus.GetAddress on the session bus; an application is tied to
 * a process through GetConnectionUnixProcessID on the a11y bus. Once tied, calls to it go peer
 * to peer over the application's own server (atspiPeer.ts) when the kernel confirms that server
 * is the application's, else through the bus. A walk reads the bulk facts from the
 * application's Cache.GetItems and asks per node only what the cache lacks. Every call has a
 * timeout; a node that no longer exists is element_stale. Values and text contents are never read.
 */

export interface AtspiOptions {
  /** Talk to applications peer to peer when they offer it (default true). */
  peer?: boolean;
  /** Read a walk's bulk facts from the application's Cache.GetItems (default true). */
  bulk?: boolean;
  /**
   * The screen rects of the window's popups (override-redirect windows of its process, windows
   * transient for it) and of its process's other top-levels, from the X server. With it, a
   * popup root is kept only when its extents lie mostly on a popup: another top-level of the
   * process is a window of its own (its title must pass the policy and be granted by itself).
   */
  popupAreas?: PopupAreas;
}

export class X11Accessibility implements AccessibilityPort {
  private busPromise: Promise<AtspiBus> | null = null;
  private readonly peer: boolean;
  private readonly bulk: boolean;

  private readonly popupAreas: PopupAreas | null;

  constructor(opts: AtspiOptions = {}) {
    this.peer = opts.peer ?? true;
    this.bulk = opts.bulk ?? true;
    this.popupAreas = opts.popupAreas ?? null;
  }

  private bus(): Promise<AtspiBus> {
    if (!this.busPromise) {
      this.busPromise = AtspiBus.connect();
      this.busPromise.catch(() => {
        this.busPromise = null;
      });
    }
    return this.busPromise;
  }

  async openSession(window: WindowInfo): Promise<A11ySession> {
    if (!window.instance) throw uiError("target_changed");
    const pid = window.instance.pid;
    const bus = await this.bus();
    let apps: Array<{ bus: string; path: string }>;
    try {
      apps = refs(await bus.call(REGISTRY, ROOT_PATH, ACCESSIBLE, "GetChildren"));
    } catch (e) {
      return staleToUi(e);
    }
    const pids = await Promise.all(apps.map((a) => bus.pidOf(a.bus)));
    const mine = apps.filter((_, i) => pids[i] === pid);
    if (mine.length === 0)
      throw uiError("target_not_found", "The application exposes no accessibility tree.");
    if (this.peer) await Promise.all(mine.map((a) => bus.linkPeer(a.bus, pid)));
    const frames: Node[] = [];
    for (const app of mine) {
      const appNode: Node = { bus: app.bus, path: app.path, parent: null };
      try {
        const kids = refs(await bus.call(app.bus, app.path, ACCESSIBLE, "GetChildren"));
        for (const k of kids) frames.push({ bus: k.bus, path: k.path, parent: appNode });
      } catch {
        // An application that went away meanwhile has no frames.
      }
    }
    const extents = await Promise.all(
      frames.map((f) =>
        bus
          .call(f.bus, f.path, COMPONENT, "GetExtents", "u", [COORD_SCREEN])
          .then(extentsRect)
          .catch(() => null),
      ),
    );
    // Prefer exact extents; then the largest overlap; names are never trusted.
    let best = -1;
    let bestScore = 0;
    extents.forEach((r, i) => {
      if (!r) return;
      const inter = intersect(r, window.rect);
      const score = sameRect(r, window.rect) ? Number.POSITIVE_INFINITY : inter ? rectArea(inter) : 0;
      if (score > bestScore) {
        bestScore = score;
        best = i;
      }
    });
    if (best < 0 && frames.length === 1) best = 0;
    const frame = frames[best];
    if (!frame) throw uiError("target_not_found", "No accessibility tree matches this window.");
    return new AtspiSession(
      bus,
      { bus: frame.bus, path: frame.path, parent: null },
      this.bulk,
      mine,
      this.popupAreas ? { window, areas: this.popupAreas } : null,
    );
  }

  dispose(): void {
    const p = this.busPromise;
    this.busPromise = null;
    p?.then((b) => b.disconnect()).catch(() => {});
  }
}
