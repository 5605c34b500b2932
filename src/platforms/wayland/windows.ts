import dbus from "dbus-next";
import { resolveProcessInstance, sessionId } from "../../os/linux/proc.js";
import type { Rect } from "../../shared/geometry.js";
import type { WindowInfo } from "../../shared/platform.js";
import {
  ACCESSIBLE,
  type AtspiBus,
  COORD_SCREEN,
  REGISTRY,
  ROOT_PATH,
  refs,
  statesOf,
} from "../x11/atspiBus.js";
import { COMPONENT, extentsRect, hasState } from "../x11/atspiFacts.js";
import { ATSPI_STATE } from "../x11/states.js";

/**
 * Top-level windows on a Wayland session, from AT-SPI: each application on the a11y bus (tied to
 * its process by the bus daemon's GetConnectionUnixProcessID, the kernel's peer credentials),
 * its frames, and /proc for the process instance. A Wayland client knows no global position:
 * GTK reports every frame at (0, 0) with its own size, so `rect` is the client's claim of its
 * size and is never used to prove anything (docs/wayland.md).
 */

const FRAME_ROLES = new Set(["frame", "dialog", "window", "alert", "file chooser"]);
/** AtspiStateType ICONIFIED: GTK sets it only where the toolkit learns it (never on Wayland). */
const ST_ICONIFIED = 15;

/** Where a listed window lives on the a11y bus. */
export interface FrameRef {
  bus: string;
  path: string;
  app: { bus: string; path: string };
}

/**
 * A window's id: 48 bits of FNV-1a over the frame's unique bus name and object path. Unique bus
 * names are never reused on a bus, so an id never names a later window, and every worker
 * computes the same id for the same frame without sharing state.
 */
export function frameId(bus: string, path: string): string {
  let h = 0xcbf29ce484222325n;
  const mask = (1n << 64n) - 1n;
  for (const b of Buffer.from(`${bus}\0${path}`, "utf8")) {
    h ^= BigInt(b);
    h = (h * 0x100000001b3n) & mask;
  }
  return String(h >> 16n);
}

/** The session every instance of this backend carries: the Wayland display and the user. */
export function waylandSession(env: NodeJS.ProcessEnv = process.env): string {
  return sessionId(`wayland:${env.WAYLAND_DISPLAY ?? ""}`);
}

export interface Listing {
  windows: WindowInfo[];
  frames: Map<string, FrameRef>;
}

/**
 * Every application's frames as windows. `excludePid`: the compositor's own process (gnome-shell
 * exposes its stage as a screen-sized "window"), never a target.
 */
export async function listFrames(
  bus: AtspiBus,
  session: string,
  excluded: ReadonlySet<number>,
): Promise<Listing> {
  const apps = refs(await bus.call(REGISTRY, ROOT_PATH, ACCESSIBLE, "GetChildren"));
  const perApp = await Promise.all(
    apps.map(async (app) => {
      const pid = await bus.pidOf(app.bus);
      if (pid === null || excluded.has(pid)) return [];
      let kids: Array<{ bus: string; path: string }>;
      try {
        kids = refs(await bus.call(app.bus, app.path, ACCESSIBLE, "GetChildren"));
      } catch {
        return [];
      }
      const instance = resolveProcessInstance(pid, session);
      const facts = await Promise.all(kids.map((k) => frameFacts(bus, k, app)));
      const out: Array<{ info: Omit<WindowInfo, "z">; ref: FrameRef }> = [];
      kids.forEach((k, i) => {
        const f = facts[i];
        if (!f || !FRAME_ROLES.has(f.role)) return;
        out.push({
          info: {
            hwnd: frameId(k.bus, k.path),
            // The toplevel's title is the compositor's (xdg_toplevel.set_title) and not ours to
            // read; AT-SPI names the frame after it, and a frame without a name (GTK 3 with only
            // a header-bar title) is named after its application, as the top bar does.
            title: f.name !== "" ? f.name : f.appName,
            window_class: f.appName,
            pid,
            instance,
            rect: f.rect,
            visible: f.showing,
            iconic: f.iconic,
            // The input focus is the compositor's to know; a client's ACTIVE state proves nothing.
            foreground: false,
            on_top: false,
          },
          ref: { bus: k.bus, path: k.path, app },
        });
      });
      return out;
    }),
  );
  const windows: WindowInfo[] = [];
  const frames = new Map<string, FrameRef>();
  for (const list of perApp) {
    for (const { info, ref } of list) {
      windows.push({ ...info, z: windows.length });
      frames.set(info.hwnd, ref);
    }
  }
  return { windows, frames };
}

interface FrameFacts {
  role: string;
  name: string;
  appName: string;
  rect: Rect;
  showing: boolean;
  iconic: boolean;
}

async function frameFacts(
  bus: AtspiBus,
  k: { bus: string; path: string },
  app: { bus: string; path: string },
): Promise<FrameFacts | null> {
  try {
    const [role, name, states, extents, appName] = await Promise.all([
      bus.call(k.bus, k.path, ACCESSIBLE, "GetRoleName"),
      bus.getProperty(k.bus, k.path, ACCESSIBLE, "Name"),
      bus.call(k.bus, k.path, ACCESSIBLE, "GetState"),
      bus.call(k.bus, k.path, COMPONENT, "GetExtents", "u", [COORD_SCREEN]).catch(() => [] as unknown[]),
      bus.getProperty(app.bus, app.path, ACCESSIBLE, "Name").catch(() => ""),
    ]);
    const st = statesOf(states[0]);
    const r = extentsRect(extents);
    const roleName = typeof role[0] === "string" ? role[0].toLowerCase() : "";
    return {
      role: roleName,
      name: typeof name === "string" ? name : "",
      appName: typeof appName === "string" ? appName : "",
      // Size only: a Wayland client does not know where the compositor placed it.
      rect: r ? [0, 0, r[2] - r[0], r[3] - r[1]] : [0, 0, 0, 0],
      showing: hasState(st, ATSPI_STATE.SHOWING) && hasState(st, ATSPI_STATE.VISIBLE),
      iconic: hasState(st, ST_ICONIFIED),
    };
  } catch {
    return null;
  }
}

/** The PID of the process that owns `name` on the session bus (the bus daemon's credentials). */
export async function sessionBusOwnerPid(name: string): Promise<number | null> {
  return (await sessionBusOwnerPids([name]))[0] ?? null;
}

/** The PIDs of the owners of `names` on the session bus, in order (null: no owner), on one connection. */
export async function sessionBusOwnerPids(names: readonly string[]): Promise<Array<number | null>> {
  if (!process.env.DBUS_SESSION_BUS_ADDRESS) return names.map(() => null);
  const session = dbus.sessionBus();
  session.on("error", () => {});
  try {
    return await Promise.all(
      names.map(async (name) => {
        try {
          const reply = await session.call(
            new dbus.Message({
              destination: "org.freedesktop.DBus",
              path: "/org/freedesktop/DBus",
              interface: "org.freedesktop.DBus",
              member: "GetConnectionUnixProcessID",
              signature: "s",
              body: [name],
            }),
          );
          const pid = reply?.body[0];
          return typeof pid === "number" ? pid : null;
        } catch {
          return null;
        }
      }),
    );
  } finally {
    session.disconnect();
  }
}
