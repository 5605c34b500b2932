import dbus from "dbus-next";
import { isUiError, uiError } from "../../shared/errors.js";
import { SETTINGS } from "../../shared/settings.js";
import { readSetting } from "../../shared/settingsReader.js";
import { withTimeout as rejectAfter } from "../../shared/timeout.js";
import { PeerLink, type PeerReply, PeerTimeout, verifiedPeerPath } from "./atspiPeer.js";

/**
 * The a11y bus: the connection (its address from org.a11y.Bus.GetAddress on the session bus),
 * bounded calls, and peer links to the applications it was asked to link (atspiPeer.ts). Also
 * the small readers of D-Bus answers every part of the AT-SPI backend shares.
 */

export const ACCESSIBLE = "org.a11y.atspi.Accessible";
const APPLICATION = "org.a11y.atspi.Application";
export const CACHE = "org.a11y.atspi.Cache";
export const CACHE_PATH = "/org/a11y/atspi/cache";
export const REGISTRY = "org.a11y.atspi.Registry";
export const ROOT_PATH = "/org/a11y/atspi/accessible/root";
const NULL_PATH = "/org/a11y/atspi/null";
/** Per D-Bus call; 100..60000 ms, anything else is the default 3000. */
const CALL_TIMEOUT_MS = readSetting(process.env, SETTINGS.atspiCallTimeoutMs);
export const COORD_SCREEN = 0;
/** Peer links kept at most per worker (the oldest closes first). */
const MAX_PEERS = 32;

export class StaleError extends Error {}

/** D-Bus error names that mean the object (or its application) is gone. */
function isStaleErrorName(name: string): boolean {
  return (
    name.endsWith(".UnknownObject") ||
    name.endsWith(".UnknownMethod") ||
    name.endsWith(".ServiceUnknown") ||
    name.endsWith(".NameHasNoOwner") ||
    name.endsWith(".NoReply") ||
    name.endsWith(".UnknownInterface")
  );
}

function lateError(): Error {
  return uiError("platform_unavailable", "The accessibility provider did not answer in time.");
}

/**
 * Connection to the a11y bus with bounded calls, plus peer links to the applications it was
 * asked to link: a call goes over the destination's link while that is open, else the bus.
 */
export class AtspiBus {
  private readonly bus: dbus.MessageBus;
  /** Bus name → its peer link, or null when the application offers none we accept. */
  private readonly peers = new Map<string, Promise<PeerLink | null>>();
  /** The links of `peers` that are open, by bus name (the fast path of call). */
  private readonly open = new Map<string, PeerLink>();

  private constructor(bus: dbus.MessageBus) {
    this.bus = bus;
    // A lost bus surfaces as failed calls; the error event must not become an uncaught exception.
    this.bus.on("error", () => {});
  }

  static async connect(): Promise<AtspiBus> {
    if (!process.env.DBUS_SESSION_BUS_ADDRESS) {
      throw uiError("platform_unavailable", "No D-Bus session bus is available.");
    }
    let session: dbus.MessageBus | null = null;
    try {
      session = dbus.sessionBus();
      session.on("error", () => {});
      const reply = await withTimeout(
        session.call(
          new dbus.Message({
            destination: "org.a11y.Bus",
            path: "/org/a11y/bus",
            interface: "org.a11y.Bus",
            member: "GetAddress",
          }),
        ),
      );
      const address = reply?.body[0];
      if (typeof address !== "string" || address === "") throw new Error("no address");
      return new AtspiBus(dbus.sessionBus({ busAddress: address }));
    } catch (e) {
      if (isUiError(e)) throw e;
      throw uiError("platform_unavailable", "The accessibility bus is unavailable.");
    } finally {
      session?.disconnect();
    }
  }

  /**
   * Opens a peer link to the application `busName` (process `pid`, as the bus daemon says),
   * once; an application that offers none, or one the kernel does not confirm, stays on the bus.
   */
  linkPeer(busName: string, pid: number): Promise<void> {
    let link = this.peers.get(busName);
    if (!link) {
      while (this.peers.size >= MAX_PEERS) {
        const [oldest, evicted] = this.peers.entries().next().value as [string, Promise<PeerLink | null>];
        this.peers.delete(oldest);
        this.open.delete(oldest);
        void evicted.then((l) => l?.close());
      }
      link = this.openPeer(busName, pid);
      this.peers.set(busName, link);
    }
    return link.then(() => undefined);
  }

  private async openPeer(busName: string, pid: number): Promise<PeerLink | null> {
    try {
      const body = await this.viaBus(busName, ROOT_PATH, APPLICATION, "GetApplicationBusAddress");
      const address = body[0];
      if (typeof address !== "string") return null;
      const path = verifiedPeerPath(address, pid);
      if (path === null) return null;
      const link = await PeerLink.open(path, pid, CALL_TIMEOUT_MS, () => {
        // A closed link is forgotten: later calls go through the bus.
        if (this.peers.get(busName) === current) this.peers.delete(busName);
        if (this.open.get(busName) === link) this.open.delete(busName);
      });
      const current = Promise.resolve(link);
      this.peers.set(busName, current);
      this.open.set(busName, link);
      return link;
    } catch {
      return null;
    }
  }

  call(
    destination: string,
    path: string,
    iface: string,
    member: string,
    signature?: string,
    body?: unknown[],
  ): Promise<unknown[]> {
    // An open link settled earlier: straight to it, without an async frame and two awaits per
    // call (a walk makes hundreds, and their garbage was a good part of its collections).
    const open = this.open.get(destination);
    if (open !== undefined && !open.closed)
      return this.callPeer(open, destination, path, iface, member, signature, body);
    return this.callSlow(destination, path, iface, member, signature, body);
  }

  /** One call on a peer link: its reply answered, a failure handled as peerFailed decides. */
  private callPeer(
    peer: PeerLink,
    destination: string,
    path: string,
    iface: string,
    member: string,
    signature?: string,
    body?: unknown[],
  ): Promise<unknown[]> {
    return peer.call(path, iface, member, signature, body, CALL_TIMEOUT_MS).then(
      (reply) => this.answer(reply),
      (e: unknown) => this.peerFailed(e, destination, path, iface, member, signature, body),
    );
  }

  private async callSlow(
    destination: string,
    path: string,
    iface: string,
    member: string,
    signature?: string,
    body?: unknown[],
  ): Promise<unknown[]> {
    const link = this.peers.get(destination);
    const peer = link ? await link : null;
    if (peer !== null && !peer.closed)
      return this.callPeer(peer, destination, path, iface, member, signature, body);
    return this.viaBus(destination, path, iface, member, signature, body);
  }

  private answer(reply: PeerReply): unknown[] {
    if (reply.ok) return reply.body;
    if (isStaleErrorName(reply.errorName)) throw new StaleError();
    throw uiError("platform_unavailable", "An accessibility call failed.");
  }

  /** A peer call that failed: late is late; a link closed under it leaves the call to the bus. */
  private peerFailed(
    e: unknown,
    destination: string,
    path: string,
    iface: string,
    member: string,
    signature?: string,
    body?: unknown[],
  ): Promise<unknown[]> {
    if (e instanceof PeerTimeout) throw lateError();
    // The bus still knows the application (or says it is gone).
    return this.viaBus(destination, path, iface, member, signature, body);
  }

  private async viaBus(
    destination: string,
    path: string,
    iface: string,
    member: string,
    signature?: string,
    body?: unknown[],
  ): Promise<unknown[]> {
    const msg = new dbus.Message({ destination, path, interface: iface, member, signature, body });
    try {
      const reply = await withTimeout(this.bus.call(msg));
      return reply?.body ?? [];
    } catch (e) {
      if (isUiError(e)) throw e;
      if (e instanceof dbus.DBusError && isStaleErrorName(e.type)) throw new StaleError();
      throw uiError("platform_unavailable", "An accessibility call failed.");
    }
  }

  async getProperty(dest: string, path: string, iface: string, prop: string): Promise<unknown> {
    const body = await this.call(dest, path, "org.freedesktop.DBus.Properties", "Get", "ss", [iface, prop]);
    const v = body[0];
    return v instanceof dbus.Variant ? v.value : v;
  }

  async pidOf(busName: string): Promise<number | null> {
    try {
      const body = await this.viaBus(
        "org.freedesktop.DBus",
        "/org/freedesktop/DBus",
        "org.freedesktop.DBus",
        "GetConnectionUnixProcessID",
        "s",
        [busName],
      );
      return typeof body[0] === "number" ? body[0] : null;
    } catch {
      return null;
    }
  }

  disconnect(): void {
    for (const link of this.peers.values()) void link.then((l) => l?.close());
    this.peers.clear();
    this.open.clear();
    this.bus.disconnect();
  }
}

function withTimeout<T>(p: Promise<T>, ms = CALL_TIMEOUT_MS): Promise<T> {
  return rejectAfter(p, ms, lateError);
}

export function refs(body: unknown[]): Array<{ bus: string; path: string }> {
  const list = body[0];
  if (!Array.isArray(list)) return [];
  const out: Array<{ bus: string; path: string }> = [];
  for (const item of list) {
    if (Array.isArray(item) && typeof item[0] === "string" && typeof item[1] === "string") {
      if (item[1] !== NULL_PATH) out.push({ bus: item[0], path: item[1] });
    }
  }
  return out;
}

export function stringsOf(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((s): s is string => typeof s === "string") : [];
}

export function statesOf(v: unknown): number[] {
  return Array.isArray(v) ? v.map((x) => (typeof x === "number" ? x : 0)) : [];
}

/** Settles a call to its value or null (a missing interface is not an error for facts). */
/**
 * Properties.GetAll's a{sv} → property name → value (variants unwrapped); an answer of another
 * shape is no property at all.
 */
export function propertiesOf(body: unknown[]): Map<string, unknown> {
  const out = new Map<string, unknown>();
  const dict = body[0];
  if (typeof dict !== "object" || dict === null || Array.isArray(dict)) return out;
  for (const [k, v] of Object.entries(dict)) out.set(k, v instanceof dbus.Variant ? v.value : v);
  return out;
}

export async function optional<T>(p: Promise<T>): Promise<T | null> {
  try {
    return await p;
  } catch (e) {
    if (e instanceof StaleError) return null;
    if (isUiError(e) && e.code === "platform_unavailable") return null;
    throw e;
  }
}

export function staleToUi(e: unknown): never {
  if (e instanceof StaleError) throw uiError("element_stale");
  if (isUiError(e)) throw e;
  throw uiError("platform_unavailable", "An accessibility call failed.");
}
