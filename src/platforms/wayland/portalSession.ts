import dbus from "dbus-next";
import { uiError } from "../../shared/errors.js";

/**
 * One org.freedesktop.portal.RemoteDesktop session with its ScreenCast sources: the person picks
 * in the portal's dialog what may be seen and driven (CreateSession, SelectDevices,
 * SelectSources, Start); the answer is a PipeWire node per picked source and the allowed
 * devices. Input goes through the same session (Notify*), in a window stream's own coordinates,
 * so the compositor maps it onto that window wherever the window is.
 *
 * The session belongs to the D-Bus connection that created it: the portal accepts Notify*
 * only from that connection, so the object that opened a session is the only one that can
 * inject through it. Nothing is persisted: persist_mode is none (the default), and a restore
 * token, when the caller asks for one, is kept only in this object's memory.
 *
 * `closed` settles when the session ends for any reason: our close(), the portal's Closed
 * signal (the person stopped sharing, the compositor ended the session), the bus connection
 * dropping. A grant tied to the session ends with it.
 */

const PORTAL = "org.freedesktop.portal.Desktop";
const PORTAL_PATH = "/org/freedesktop/portal/desktop";
const RD = "org.freedesktop.portal.RemoteDesktop";
const SC = "org.freedesktop.portal.ScreenCast";
const REQUEST = "org.freedesktop.portal.Request";
const SESSION = "org.freedesktop.portal.Session";

/** Portal device bits (RemoteDesktop AvailableDeviceTypes / SelectDevices types). */
export const DEVICE = { keyboard: 1, pointer: 2, touchscreen: 4 } as const;
/** Portal source bits (ScreenCast AvailableSourceTypes / SelectSources types). */
export const SOURCE = { monitor: 1, window: 2, virtual: 4 } as const;
/** Portal cursor modes (ScreenCast AvailableCursorModes / SelectSources cursor_mode). */
export const CURSOR = { hidden: 1, embedded: 2, metadata: 4 } as const;

/** evdev button codes, as NotifyPointerButton takes them. */
const BUTTON_CODE = { left: 0x110, right: 0x111, middle: 0x112 } as const;
export type PortalButton = keyof typeof BUTTON_CODE;

export type SourceType = "monitor" | "window" | "virtual";

export interface PortalStream {
  /** The PipeWire node of the stream (pipewiresrc path=node). */
  readonly node: number;
  readonly sourceType: SourceType;
  /** The stream's size in compositor coordinates, when the portal says it. */
  readonly size: readonly [number, number] | null;
  /** A monitor stream's position in the compositor's layout, when the portal says it. */
  readonly position: readonly [number, number] | null;
}

export interface PortalDevices {
  readonly keyboard: boolean;
  readonly pointer: boolean;
  readonly touchscreen: boolean;
}

/** Why a session ended. */
export type PortalCloseReason = "closed_by_us" | "closed_by_compositor" | "bus_lost";

export interface PortalOpenOptions {
  /** Devices to ask for (the person may allow fewer; `devices` says what was allowed). */
  devices: { keyboard: boolean; pointer: boolean };
  /** Sources the dialog offers; with both, the person picks one window and one monitor. */
  sources: { window: boolean; monitor: boolean };
  /** Hidden by default: a stream without the pointer drawn in it can be compared pixel by pixel. */
  cursor?: keyof typeof CURSOR;
  /** A restore token from an earlier session of this process (memory only), or null. */
  restoreToken?: string | null;
  /** Ask the portal for a restore token, kept only in memory (persist_mode 1: while it runs). */
  wantRestoreToken?: boolean;
  /** How long the person may take in the dialog, in ms (the session is closed after it). */
  timeoutMs: number;
  signal?: AbortSignal;
  /** A bus to use (tests); by default a private connection to the session bus is opened. */
  bus?: dbus.MessageBus;
}

type Vardict = Record<string, { value?: unknown; signature?: string }>;

function variantOf(v: unknown): unknown {
  return v && typeof v === "object" && "value" in v ? (v as { value: unknown }).value : v;
}

function pair(v: unknown): readonly [number, number] | null {
  const a = variantOf(v);
  return Array.isArray(a) && a.length === 2 && typeof a[0] === "number" && typeof a[1] === "number"
    ? [a[0], a[1]]
    : null;
}

function sourceTypeOf(bits: unknown): SourceType | null {
  const b = variantOf(bits);
  if (b === SOURCE.monitor) return "monitor";
  if (b === SOURCE.window) return "window";
  if (b === SOURCE.virtual) return "virtual";
  return null;
}

/** Start's `streams` (a(ua{sv})) → our streams; entries of an unknown shape are dropped. */
export function parseStreams(raw: unknown): PortalStream[] {
  const list = variantOf(raw);
  if (!Array.isArray(list)) return [];
  const out: PortalStream[] = [];
  for (const entry of list) {
    if (!Array.isArray(entry) || typeof entry[0] !== "number") continue;
    const props = (entry[1] ?? {}) as Vardict;
    const sourceType = sourceTypeOf(props.source_type);
    if (!sourceType) continue;
    out.push({ node: entry[0], sourceType, size: pair(props.size), position: pair(props.position) });
  }
  return out;
}

export function parseDevices(raw: unknown): PortalDevices {
  const bits = variantOf(raw);
  const b = typeof bits === "number" ? bits : 0;
  return {
    keyboard: (b & DEVICE.keyboard) !== 0,
    pointer: (b & DEVICE.pointer) !== 0,
    touchscreen: (b & DEVICE.touchscreen) !== 0,
  };
}

let tokenCounter = 0;
function token(prefix: string): string {
  tokenCounter += 1;
  return `uiinspect_${prefix}_${process.pid}_${tokenCounter}_${Math.floor(Math.random() * 1e9)}`;
}

export class PortalSession {
  /** Settles once, when the session has ended, with why. */
  readonly closed: Promise<PortalCloseReason>;
  private settleClosed!: (r: PortalCloseReason) => void;
  private open = true;
  private readonly listeners = new Set<(r: PortalCloseReason) => void>();
  private restore: string | null;

  private constructor(
    private readonly bus: dbus.MessageBus,
    private readonly ownsBus: boolean,
    /** The session's object path (the portal's handle). */
    readonly handle: string,
    readonly streams: readonly PortalStream[],
    readonly devices: PortalDevices,
    restoreToken: string | null,
  ) {
    this.restore = restoreToken;
    this.closed = new Promise((r) => {
      this.settleClosed = r;
    });
  }

  /** The first stream of a source type, or null. */
  stream(type: SourceType): PortalStream | null {
    return this.streams.find((s) => s.sourceType === type) ?? null;
  }

  get isOpen(): boolean {
    return this.open;
  }

  /** The restore token the portal returned, memory only (null when not asked or not given). */
  get restoreToken(): string | null {
    return this.restore;
  }

  /** Called once when the session ends (at once if it already has). */
  onClosed(fn: (r: PortalCloseReason) => void): () => void {
    if (!this.open) {
      void this.closed.then(fn);
      return () => {};
    }
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private ended(reason: PortalCloseReason): void {
    if (!this.open) return;
    this.open = false;
    this.restore = null;
    this.settleClosed(reason);
    for (const fn of this.listeners) {
      try {
        fn(reason);
      } catch {
        // a listener's failure does not keep the others from hearing
      }
    }
    this.listeners.clear();
    if (this.ownsBus) this.bus.disconnect();
  }

  /**
   * Asks the portal for a session: the person sees the compositor's portal dialog (pick the
   * sources, allow the devices). Rejects with consent_denied when the person cancels,
   * consent_timeout when `timeoutMs` passes, cancelled on the signal, platform_unavailable when
   * the portal is missing or fails. Nothing of the dialog's content is ever put in an error.
   */
  static async open(opts: PortalOpenOptions): Promise<PortalSession> {
    const ownsBus = !opts.bus;
    if (ownsBus && !process.env.DBUS_SESSION_BUS_ADDRESS)
      throw uiError("platform_unavailable", "No session bus is available for the desktop portal.");
    const bus = opts.bus ?? dbus.sessionBus();
    bus.on("error", () => {});
    const responses = new Map<string, (body: unknown[]) => void>();
    const onMessage = (m: dbus.Message) => {
      if (m.interface === REQUEST && m.member === "Response" && m.path) responses.get(m.path)?.(m.body);
    };
    bus.on("message", onMessage);
    const deadline = exchangeDeadline(opts.timeoutMs, opts.signal);
    const dialog: Dialog = { handle: null };
    try {
      const request = await requester(bus, responses, deadline.abort);
      const started = await runDialog(request, opts, dialog);
      const h = dialog.handle as string;
      const restoreToken = opts.wantRestoreToken ? (variantOf(started.restore_token) as string | null) : null;
      const session = new PortalSession(
        bus,
        ownsBus,
        h,
        parseStreams(started.streams),
        parseDevices(started.devices),
        typeof restoreToken === "string" ? restoreToken : null,
      );
      deadline.settle();
      bus.removeListener("message", onMessage);
      session.watchEnd();
      return session;
    } catch (e) {
      deadline.settle();
      bus.removeListener("message", onMessage);
      if (dialog.handle) await closeHandle(bus, dialog.handle).catch(() => {});
      if (ownsBus) bus.disconnect();
      throw e;
    }
  }

  /** The session ends when the portal says Closed for it or the bus connection drops. */
  private watchEnd(): void {
    this.bus.on("message", (m: dbus.Message) => {
      if (m.path === this.handle && m.interface === SESSION && m.member === "Closed")
        this.ended("closed_by_compositor");
    });
    // A dropped connection ends the session on the portal's side too.
    const conn = (this.bus as unknown as { _connection?: { on?: (e: string, f: () => void) => void } })
      ._connection;
    conn?.on?.("end", () => this.ended("bus_lost"));
    this.bus.on("error", () => this.ended("bus_lost"));
  }

  private requireOpen(): void {
    if (!this.open) throw uiError("target_gone", "The screen-sharing session has ended.");
  }

  private async notify(member: string, signature: string, body: unknown[]): Promise<void> {
    this.requireOpen();
    await call(this.bus, PORTAL, PORTAL_PATH, RD, member, signature, [this.handle, {}, ...body]);
  }

  /** Pointer to (x, y) of `stream`'s picture (the compositor places it on the stream's source). */
  async pointerMotionAbsolute(stream: PortalStream, x: number, y: number): Promise<void> {
    if (!this.devices.pointer) throw uiError("platform_unavailable", "Pointer input was not allowed.");
    await this.notify("NotifyPointerMotionAbsolute", "oa{sv}udd", [stream.node, x, y]);
  }

  async pointerButton(button: PortalButton, pressed: boolean): Promise<void> {
    if (!this.devices.pointer) throw uiError("platform_unavailable", "Pointer input was not allowed.");
    await this.notify("NotifyPointerButton", "oa{sv}iu", [BUTTON_CODE[button], pressed ? 1 : 0]);
  }

  /** Wheel clicks on the vertical axis (positive = towards the user, the portal's direction). */
  async pointerAxisDiscrete(steps: number): Promise<void> {
    if (!this.devices.pointer) throw uiError("platform_unavailable", "Pointer input was not allowed.");
    await this.notify("NotifyPointerAxisDiscrete", "oa{sv}ui", [0, steps]);
  }

  async keysym(sym: number, pressed: boolean): Promise<void> {
    if (!this.devices.keyboard) throw uiError("platform_unavailable", "Keyboard input was not allowed.");
    await this.notify("NotifyKeyboardKeysym", "oa{sv}iu", [sym, pressed ? 1 : 0]);
  }

  /** Ends the session (the streams stop, the devices go); idempotent. */
  async close(): Promise<void> {
    if (!this.open) return;
    await closeHandle(this.bus, this.handle).catch(() => {});
    this.ended("closed_by_us");
  }
}

/** One request to the portal: its answer's results, or a refusal (see `requester`). */
type Request = (
  iface: string,
  member: string,
  signature: string,
  body: (t: string) => unknown[],
) => Promise<Vardict>;

/** The session handle once CreateSession gave it: closed again when a later step fails. */
interface Dialog {
  handle: string | null;
}

/**
 * One deadline and one cancellation for the whole exchange (every dialog step counts): `abort`
 * rejects with consent_timeout or cancelled; `settle` clears both once the exchange is over.
 */
function exchangeDeadline(
  timeoutMs: number,
  signal: AbortSignal | undefined,
): { abort: Promise<never>; settle: () => void } {
  let timer: NodeJS.Timeout | null = null;
  let onAbort: (() => void) | null = null;
  const abort = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(uiError("consent_timeout")), Math.max(0, timeoutMs));
    if (signal) {
      onAbort = () => reject(uiError("cancelled"));
      if (signal.aborted) onAbort();
      else signal.addEventListener("abort", onAbort, { once: true });
    }
  });
  abort.catch(() => {});
  const settle = () => {
    if (timer) clearTimeout(timer);
    if (onAbort) signal?.removeEventListener("abort", onAbort);
  };
  return { abort, settle };
}

/** The bus delivers the portal's Response and Closed signals to this connection. */
async function matchPortalSignals(bus: dbus.MessageBus): Promise<void> {
  for (const [iface, member] of [
    [REQUEST, "Response"],
    [SESSION, "Closed"],
  ])
    await call(
      bus,
      "org.freedesktop.DBus",
      "/org/freedesktop/DBus",
      "org.freedesktop.DBus",
      "AddMatch",
      "s",
      [`type='signal',sender='${PORTAL}',interface='${iface}',member='${member}'`],
    );
}

/**
 * The portal's requests over `bus`. Each Response signal is matched by the request path the
 * portal documents (…/request/SENDER/TOKEN), registered before the call so an early answer is
 * not lost; a cancel in the dialog is consent_denied, any other failure platform_unavailable.
 */
async function requester(
  bus: dbus.MessageBus,
  responses: Map<string, (body: unknown[]) => void>,
  abort: Promise<never>,
): Promise<Request> {
  await matchPortalSignals(bus);
  const sender = ((bus as unknown as { name?: string }).name ?? "").replace(/^:/, "").replace(/\./g, "_");
  if (!sender) throw uiError("platform_unavailable", "The session bus gave no connection name.");
  return async (iface, member, signature, body) => {
    const t = token("r");
    const path = `${PORTAL_PATH}/request/${sender}/${t}`;
    const answered = new Promise<unknown[]>((r) => responses.set(path, r));
    try {
      await Promise.race([call(bus, PORTAL, PORTAL_PATH, iface, member, signature, body(t)), abort]);
      const reply = await Promise.race([answered, abort]);
      const code = reply[0];
      if (code === 1) throw uiError("consent_denied");
      if (code !== 0) throw uiError("platform_unavailable", "The desktop portal refused the session.");
      return (reply[1] ?? {}) as Vardict;
    } finally {
      responses.delete(path);
    }
  };
}

/**
 * The dialog's steps in the portal's order: CreateSession (its handle goes into `dialog`),
 * SelectDevices, SelectSources, Start. Start's results, with at least one stream shared.
 */
async function runDialog(request: Request, opts: PortalOpenOptions, dialog: Dialog): Promise<Vardict> {
  const created = await request(RD, "CreateSession", "a{sv}", (t) => [
    {
      handle_token: new dbus.Variant("s", t),
      session_handle_token: new dbus.Variant("s", token("s")),
    },
  ]);
  const h = variantOf(created.session_handle);
  if (typeof h !== "string") throw uiError("platform_unavailable", "The desktop portal gave no session.");
  dialog.handle = h;
  const deviceBits =
    (opts.devices.keyboard ? DEVICE.keyboard : 0) | (opts.devices.pointer ? DEVICE.pointer : 0);
  if (deviceBits !== 0) {
    await request(RD, "SelectDevices", "oa{sv}", (t) => [
      h,
      { handle_token: new dbus.Variant("s", t), types: new dbus.Variant("u", deviceBits) },
    ]);
  }
  const selectOptions = sourceOptions(opts);
  await request(SC, "SelectSources", "oa{sv}", (t) => [
    h,
    { handle_token: new dbus.Variant("s", t), ...selectOptions },
  ]);
  const started = await request(RD, "Start", "osa{sv}", (t) => [
    h,
    "",
    { handle_token: new dbus.Variant("s", t) },
  ]);
  if (parseStreams(started.streams).length === 0) throw uiError("consent_denied", "No source was shared.");
  return started;
}

/** SelectSources' options: the source types, the cursor mode, a restore token in memory only. */
function sourceOptions(opts: PortalOpenOptions): Record<string, dbus.Variant> {
  const sourceBits = (opts.sources.window ? SOURCE.window : 0) | (opts.sources.monitor ? SOURCE.monitor : 0);
  if (sourceBits === 0) throw uiError("invalid_argument", "A portal session needs at least one source.");
  const selectOptions: Record<string, dbus.Variant> = {
    types: new dbus.Variant("u", sourceBits),
    multiple: new dbus.Variant("b", opts.sources.window && opts.sources.monitor),
    cursor_mode: new dbus.Variant("u", CURSOR[opts.cursor ?? "hidden"]),
  };
  if (opts.wantRestoreToken) selectOptions.persist_mode = new dbus.Variant("u", 1);
  if (opts.restoreToken) selectOptions.restore_token = new dbus.Variant("s", opts.restoreToken);
  return selectOptions;
}

async function call(
  bus: dbus.MessageBus,
  destination: string,
  path: string,
  iface: string,
  member: string,
  signature: string,
  body: unknown[],
): Promise<unknown[]> {
  try {
    const reply = await bus.call(
      new dbus.Message({ destination, path, interface: iface, member, signature, body }),
    );
    return reply?.body ?? [];
  } catch (e) {
    // The portal's error text may name what the person picked: it never crosses.
    if (e instanceof dbus.DBusError) throw uiError("platform_unavailable", "The desktop portal call failed.");
    throw e;
  }
}

async function closeHandle(bus: dbus.MessageBus, handle: string): Promise<void> {
  await call(bus, PORTAL, handle, SESSION, "Close", "", []);
}
