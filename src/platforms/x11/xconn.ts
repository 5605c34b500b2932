import koffi from "koffi";
import {
  type Cookie,
  type Ptr,
  takeXcbError,
  type X11Native,
  x11Native,
  xErrorToUi,
} from "../../os/linux/xlib.js";
import { isUiError, uiError } from "../../shared/errors.js";

/**
 * One worker's X connections: an Xlib Display (XTest, XShm/XGetImage of the root, keyboard
 * mapping) and an xcb connection (everything that names a client window; errors are values).
 * Created once per worker; never shared between threads.
 */

export const ATOM_NAMES = [
  "_NET_CLIENT_LIST_STACKING",
  "_NET_CLIENT_LIST",
  "_NET_ACTIVE_WINDOW",
  "_NET_WM_NAME",
  "UTF8_STRING",
  "_NET_WM_PID",
  "_NET_WM_STATE",
  "_NET_WM_STATE_HIDDEN",
  "_NET_WM_STATE_ABOVE",
  "WM_STATE",
  "_NET_FRAME_EXTENTS",
  "WM_PROTOCOLS",
  "WM_DELETE_WINDOW",
  "_NET_SUPPORTING_WM_CHECK",
] as const;
export type AtomName = (typeof ATOM_NAMES)[number];

const XRES_CLIENT_ID_PID_MASK = 2;
/** sizeof(XResClientIdValue): { XResClientIdSpec spec (16), long length, void *value }. */
const XRES_ID_VALUE_SIZE = 32;

/** Predefined atoms of the core protocol. */
export const XA_WM_NAME = 39;
export const XA_WM_CLASS = 67;
export const XA_WM_CLIENT_MACHINE = 36;
export const XA_WM_TRANSIENT_FOR = 68;
export const XA_WINDOW = 33;

export interface PropertyValue {
  type: number;
  format: number;
  bytes: Buffer;
}

/** A pending xcb request: resolve() returns the reply (copied, freed) or throws the coded X error. */
export interface Pending<T> {
  resolve(): T;
}

let errorHandlerInstalled = false;

/**
 * XInitThreads first, then the process-wide error handler. The handler is the address of a
 * native libX11 function (XConnectionNumber) that only reads a field and returns: the same
 * pointer in every thread of the process, so installing it again from another worker changes
 * nothing, and it never depends on a JS isolate that may have exited.
 */
function prepareXlib(n: X11Native): void {
  if (errorHandlerInstalled) return;
  n.XInitThreads();
  n.XSetErrorHandler(n.noopErrorHandler);
  // A lost X server: the default I/O error handlers exit the process. Ours return; the
  // connection is then dead and every later request fails with platform_unavailable.
  n.XSetIOErrorHandler(n.noopErrorHandler);
  errorHandlerInstalled = true;
}

export class XConnection {
  readonly n: X11Native;
  readonly dpy: Ptr;
  readonly c: Ptr;
  readonly screen: number;
  readonly root: number;
  readonly displayName: string;
  readonly atoms: Record<AtomName, number>;
  /**
   * Xlib's own xcb connection (libX11-xcb), to see that Xlib lost the server and for checked
   * requests under our server grab (passiveGrabs.ts); else null.
   */
  readonly xlibXcb: Ptr | null;
  private closed = false;
  private xresOk: boolean | undefined;
  private constructor(n: X11Native, dpy: Ptr, c: Ptr, displayName: string, withXlibXcb: boolean) {
    this.n = n;
    this.dpy = dpy;
    this.c = c;
    this.displayName = displayName;
    this.screen = n.XDefaultScreen(dpy);
    this.xlibXcb = withXlibXcb && n.XGetXCBConnection ? n.XGetXCBConnection(dpy) : null;
    this.root = Number(n.XRootWindow(dpy, this.screen));
    // All requests first, then all replies: one round trip for the whole list.
    const cookies = ATOM_NAMES.map(
      (name) => [name, n.xcb_intern_atom(c, 0, Buffer.byteLength(name), name)] as const,
    );
    const atoms: Partial<Record<AtomName, number>> = {};
    cookies.forEach(([name, cookie]) => {
      const err: Array<Ptr | null> = [null];
      const reply = n.xcb_intern_atom_reply(c, cookie, err);
      takeXcbError(n, err[0] ?? null);
      if (reply === null || reply === 0n) throw uiError("platform_unavailable", "X atoms are unavailable.");
      atoms[name] = koffi.decode(reply, 8, "uint32") as number;
      n.free(reply);
    });
    this.atoms = atoms as Record<AtomName, number>;
  }

  /**
   * `opts.withoutXlibXcb`: behave as without libX11-xcb (no xcb view of Xlib's connection), as
   * the tests of that path ask (see SETTINGS.x11TestWithoutXlibXcb).
   */
  static open(opts: { withoutXlibXcb?: boolean } = {}): XConnection {
    const displayName = process.env.DISPLAY ?? "";
    if (!displayName)
      throw uiError(
        "platform_unavailable",
        'DISPLAY is not set in the server\'s environment: set it to the display of your apps (export DISPLAY=:0), and pass it on from the client (Codex: env_vars = ["DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "XAUTHORITY"]); `uiinspect-mcp doctor` checks it.',
      );
    const n = x11Native();
    prepareXlib(n);
    const dpy = n.XOpenDisplay(displayName);
    if (dpy === null || dpy === 0n)
      throw uiError(
        "platform_unavailable",
        "The X display named by DISPLAY cannot be opened: check DISPLAY and XAUTHORITY in the server's environment; `uiinspect-mcp doctor` checks them.",
      );
    // libX11 ≥ 1.8: per display, an exit handler that returns instead of calling exit().
    n.XSetIOErrorExitHandler(dpy, n.noopErrorHandler, null);
    const c = n.xcb_connect(displayName, [0]);
    if (c === null || c === 0n || n.xcb_connection_has_error(c) !== 0) {
      if (c !== null && c !== 0n) n.xcb_disconnect(c);
      n.XCloseDisplay(dpy);
      throw uiError("platform_unavailable", "The X display cannot be opened.");
    }
    try {
      return new XConnection(n, dpy, c, displayName, opts.withoutXlibXcb !== true);
    } catch (e) {
      n.xcb_disconnect(c);
      n.XCloseDisplay(dpy);
      throw e;
    }
  }

  /**
   * The sockets of this worker's two X connections (Xlib's and ours). A worker thread that ends
   * without close() leaves them open in the process, each an X client the server keeps (and
   * whatever it held, a server grab included), until the host closes them.
   */
  fds(): number[] {
    if (this.closed) return [];
    return [this.n.XConnectionNumber(this.dpy), this.n.xcb_get_file_descriptor(this.c)].filter(
      (fd) => fd >= 0,
    );
  }

  /** Throws platform_unavailable when the connection is closed or the X server went away. */
  checkAlive(): void {
    if (this.closed) throw uiError("platform_unavailable", "The X connection is closed.");
    if (this.n.xcb_connection_has_error(this.c) !== 0) {
      throw uiError("platform_unavailable", "The X connection was lost.");
    }
    if (this.xlibXcb !== null && this.xlibXcb !== 0n && this.n.xcb_connection_has_error(this.xlibXcb) !== 0) {
      throw uiError("platform_unavailable", "The X connection was lost.");
    }
  }

  /** Whether the server and libXRes give verified client PIDs (X-Resource ≥ 1.2). */
  get hasXRes(): boolean {
    if (this.xresOk === undefined) {
      const op = [0];
      this.xresOk =
        this.n.xres !== null && this.n.XQueryExtension(this.dpy, "X-Resource", op, [0], [0]) !== 0;
    }
    return this.xresOk;
  }

  /**
   * The PID of the client that owns a window, as the X server knows it (from the local
   * connection's credentials), or null (remote client, unknown, or X-Resource unavailable).
   */
  clientPid(win: number): number | null {
    let found: number | null = null;
    this.queryClientIds([win], (_client, pid) => {
      if (pid > 0 && found === null) found = pid;
    });
    return found;
  }

  /**
   * One X-Resource QueryClientIds request (PID mask) for `clients` (a window, or 0 = every
   * client): calls `visit` with each answer's client id base and PID.
   */
  private queryClientIds(clients: readonly number[], visit: (client: number, pid: number) => void): void {
    if (!this.hasXRes || clients.length === 0) return;
    for (const [client, pid] of this.xlibClientIds(clients)) visit(client, pid);
  }

  /**
   * QueryClientIds (PID mask) for `clients`: `inBatch` with libxcb-res, queued on our xcb connection (sent
   * by its next flush, so it can join a batch; the answer is read on resolve()), else asked on
   * resolve() on Xlib's connection (one round trip of its own, after the caller's flush). Each
   * answer's client id base and PID (-1 when the server knows none); an X error answers none,
   * as libXRes does.
   */
  private askClientIds(clients: readonly number[], inBatch: boolean): Pending<Array<[number, number]>> {
    if (!this.hasXRes || clients.length === 0) return { resolve: () => [] };
    const res = inBatch ? this.n.xcbRes : null;
    if (res === null) {
      let now: Array<[number, number]> | null = null;
      return {
        resolve: () => {
          now ??= this.xlibClientIds(clients);
          return now;
        },
      };
    }
    this.checkAlive();
    const specs = new Uint32Array(clients.length * 2);
    clients.forEach((client, i) => {
      specs[i * 2] = client >>> 0;
      specs[i * 2 + 1] = XRES_CLIENT_ID_PID_MASK;
    });
    const cookie = res.xcb_res_query_client_ids(this.c, clients.length, specs);
    const asked = this.request(cookie, res.xcb_res_query_client_ids_reply, (reply) => {
      // xcb_res_query_client_ids_reply_t: 32 bytes (num_ids at 8), then per id: spec (client,
      // mask), length in bytes, then length / 4 words of value (the PID for the PID mask).
      const words = 8 + (koffi.decode(reply, 4, "uint32") as number);
      const count = koffi.decode(reply, 8, "uint32") as number;
      const u = new Uint32Array(koffi.view(reply, words * 4));
      const out: Array<[number, number]> = [];
      for (let i = 0, at = 8; i < count && at + 3 <= words; i++) {
        const client = u[at] ?? 0;
        const mask = u[at + 1] ?? 0;
        const len = (u[at + 2] ?? 0) >>> 2;
        if (at + 3 + len > words) break;
        out.push([client, (mask & XRES_CLIENT_ID_PID_MASK) !== 0 && len === 1 ? (u[at + 3] ?? -1) : -1]);
        at += 3 + len;
      }
      return out;
    });
    return {
      resolve: () => {
        try {
          return asked.resolve();
        } catch (e) {
          this.checkAlive();
          if (isUiError(e)) return [];
          throw e;
        }
      },
    };
  }

  /** QueryClientIds through libXRes on Xlib's connection (without libxcb-res). */
  private xlibClientIds(clients: readonly number[]): Array<[number, number]> {
    const xres = this.n.xres;
    const out: Array<[number, number]> = [];
    if (!xres) return out;
    const num: Array<number | bigint> = [0];
    const ids: Array<Ptr | null> = [null];
    const specs = clients.map((client) => ({ client, mask: XRES_CLIENT_ID_PID_MASK }));
    const status = xres.XResQueryClientIds(this.dpy, specs.length, specs, num, ids);
    const list = ids[0] ?? null;
    try {
      this.checkAlive();
      if (status !== 0 || list === null || list === 0n) return out;
      for (let i = 0; i < Number(num[0] ?? 0); i++) {
        const at = list + BigInt(i * XRES_ID_VALUE_SIZE);
        out.push([Number(koffi.decode(at, "unsigned long") as number | bigint), xres.XResGetClientPid(at)]);
      }
      return out;
    } finally {
      if (list !== null && list !== 0n) xres.XResClientIdsDestroy(Number(num[0] ?? 0), list);
    }
  }

  /**
   * The PIDs the X server knows for the clients owning `wins`, in one X-Resource request on
   * Xlib's connection (so it is answered under our own server grab too): window → PID (windows
   * of unknown or remote clients are missing from the map).
   */
  clientPids(wins: readonly number[]): Map<number, number> {
    return this.pidsOf(wins, false).resolve();
  }

  /**
   * clientPids' request, queued now on our xcb connection when libxcb-res is there (sent by the
   * next flush, in the same batch as the requests queued around it); resolve() reads it. Never
   * under a server grab taken on Xlib's connection: the server would not answer this one until
   * the grab ends (clientPids asks on Xlib's, the grabbing one).
   */
  askClientPids(wins: readonly number[]): Pending<Map<number, number>> {
    return this.pidsOf(wins, true);
  }

  private pidsOf(wins: readonly number[], inBatch: boolean): Pending<Map<number, number>> {
    if (wins.length === 0) return { resolve: () => new Map() };
    const mask = this.resourceIdMask;
    const base = (w: number) => (w & ~mask) >>> 0;
    const asked = this.askClientIds(wins, inBatch);
    let out: Map<number, number> | null = null;
    return {
      resolve: () => {
        if (out) return out;
        const byClient = new Map<number, number>();
        for (const [client, pid] of asked.resolve()) if (pid > 0) byClient.set(base(client), pid);
        out = new Map();
        for (const w of wins) {
          const pid = byClient.get(base(w));
          if (pid !== undefined) out.set(w, pid);
        }
        return out;
      },
    };
  }

  /** How many connected clients the X server attributes to each PID (one X-Resource request). */
  clientCountsByPid(): Map<number, number> {
    const out = new Map<number, number>();
    // client 0 = every client.
    this.queryClientIds([0], (_client, pid) => {
      if (pid > 0) out.set(pid, (out.get(pid) ?? 0) + 1);
    });
    return out;
  }

  /** Sends the queued xcb requests now, so the server works on them while we ask elsewhere. */
  flush(): void {
    this.checkAlive();
    this.n.xcb_flush(this.c);
  }

  /** Sends one xcb request and returns a handle for its reply, so callers can pipeline. */
  private request<T>(
    cookie: Cookie,
    replyFn: (c: Ptr, cookie: Cookie, err: Array<Ptr | null>) => Ptr | null,
    read: (reply: Ptr) => T,
  ): Pending<T> {
    // A reply can be read from xcb once: later resolve() calls answer from the first one.
    let done: { value: T } | { error: unknown } | null = null;
    const fetch = (): T => {
      const err: Array<Ptr | null> = [null];
      const reply = replyFn(this.c, cookie, err);
      const code = takeXcbError(this.n, err[0] ?? null);
      if (reply === null || reply === 0n) {
        this.checkAlive();
        throw xErrorToUi(code ?? 0);
      }
      try {
        return read(reply);
      } finally {
        this.n.free(reply);
      }
    };
    return {
      resolve: () => {
        if (done === null) {
          try {
            done = { value: fetch() };
          } catch (e) {
            done = { error: e };
          }
        }
        if ("error" in done) throw done.error;
        return done.value;
      },
    };
  }

  /** Whether MIT-SHM reads can go on this xcb connection (libxcb-shm is installed). */
  get hasXcbShm(): boolean {
    return this.n.xcbShm !== null;
  }

  /**
   * Attaches System V segment `shmid` to the X server for this xcb connection (one round trip,
   * once per segment); the segment's id, or null when the server refuses it (another IPC
   * namespace, no MIT-SHM).
   */
  shmAttach(shmid: number): number | null {
    this.checkAlive();
    const shm = this.n.xcbShm;
    if (!shm) return null;
    const seg = this.n.xcb_generate_id(this.c);
    const err = this.n.xcb_request_check(this.c, shm.xcb_shm_attach_checked(this.c, seg, shmid, 0));
    if (takeXcbError(this.n, err) !== null) return null;
    this.checkAlive();
    return seg;
  }

  /** Detaches a segment shmAttach attached (sent now; nothing to wait for). */
  shmDetach(seg: number): void {
    const shm = this.n.xcbShm;
    if (!shm || this.closed) return;
    shm.xcb_shm_detach(this.c, seg);
    this.n.xcb_flush(this.c);
  }

  /**
   * Queues (does not flush) an MIT-SHM read of the root's rect into segment `seg` at offset 0,
   * ZPixmap, all planes. Requests queued after it on this connection are handled by the server
   * after the read. resolve(): true once the server has written the pixels, false when it
   * refused the read (a rect not wholly on the screen: BadMatch).
   */
  shmGetImage(rect: { x: number; y: number; width: number; height: number }, seg: number): Pending<boolean> {
    this.checkAlive();
    const shm = this.n.xcbShm;
    if (!shm) throw uiError("platform_unavailable", "MIT-SHM over xcb is unavailable.");
    const Z_PIXMAP = 2;
    const cookie = shm.xcb_shm_get_image(
      this.c,
      this.root,
      rect.x,
      rect.y,
      rect.width,
      rect.height,
      0xffffffff,
      Z_PIXMAP,
      seg,
      0,
    );
    let done: boolean | null = null;
    return {
      resolve: () => {
        if (done !== null) return done;
        const err: Array<Ptr | null> = [null];
        const reply = shm.xcb_shm_get_image_reply(this.c, cookie, err);
        const code = takeXcbError(this.n, err[0] ?? null);
        if (reply !== null && reply !== 0n) this.n.free(reply);
        this.checkAlive();
        done = code === null && reply !== null && reply !== 0n;
        return done;
      },
    };
  }

  getProperty(win: number, prop: number, maxLongs = 4096): Pending<PropertyValue | null> {
    this.checkAlive();
    const n = this.n;
    const cookie = n.xcb_get_property(this.c, 0, win, prop, 0, 0, maxLongs);
    return this.request(cookie, n.xcb_get_property_reply, (reply) => {
      const format = koffi.decode(reply, 1, "uint8") as number;
      const type = koffi.decode(reply, 8, "uint32") as number;
      if (type === 0) return null;
      const len = n.xcb_get_property_value_length(reply);
      const bytes =
        len > 0
          ? Buffer.from(new Uint8Array(koffi.view(n.xcb_get_property_value(reply), len)))
          : Buffer.alloc(0);
      return { type, format, bytes };
    });
  }

  getGeometry(win: number): Pending<{ x: number; y: number; width: number; height: number; border: number }> {
    this.checkAlive();
    const cookie = this.n.xcb_get_geometry(this.c, win);
    return this.request(cookie, this.n.xcb_get_geometry_reply, (r) => ({
      x: koffi.decode(r, 12, "int16") as number,
      y: koffi.decode(r, 14, "int16") as number,
      width: koffi.decode(r, 16, "uint16") as number,
      height: koffi.decode(r, 18, "uint16") as number,
      border: koffi.decode(r, 20, "uint16") as number,
    }));
  }

  /** Root coordinates of a window's origin (inside its border). */
  translateToRoot(win: number): Pending<{ x: number; y: number }> {
    this.checkAlive();
    const cookie = this.n.xcb_translate_coordinates(this.c, win, this.root, 0, 0);
    return this.request(cookie, this.n.xcb_translate_coordinates_reply, (r) => ({
      x: koffi.decode(r, 12, "int16") as number,
      y: koffi.decode(r, 14, "int16") as number,
    }));
  }

  /** map_state: 0 unmapped, 1 unviewable, 2 viewable; inputOnly: class InputOnly (no pixels). */
  getMapState(win: number): Pending<{ mapState: number; overrideRedirect: boolean; inputOnly: boolean }> {
    this.checkAlive();
    const cookie = this.n.xcb_get_window_attributes(this.c, win);
    return this.request(cookie, this.n.xcb_get_window_attributes_reply, (r) => ({
      mapState: koffi.decode(r, 26, "uint8") as number,
      overrideRedirect: (koffi.decode(r, 27, "uint8") as number) !== 0,
      inputOnly: (koffi.decode(r, 12, "uint16") as number) === 2,
    }));
  }

  /** The server's window tree around `win`: its parent and its children, bottom to top. */
  queryTree(win: number): Pending<{ parent: number; children: number[] }> {
    this.checkAlive();
    const n = this.n;
    const cookie = n.xcb_query_tree(this.c, win);
    return this.request(cookie, n.xcb_query_tree_reply, (r) => {
      const len = n.xcb_query_tree_children_length(r);
      const children =
        len > 0
          ? Array.from(koffi.decode(n.xcb_query_tree_children(r), "uint32", len) as ArrayLike<number>)
          : [];
      return { parent: koffi.decode(r, 12, "uint32") as number, children };
    });
  }

  /** The window holding the input focus (0 = None, 1 = PointerRoot), as the X server knows it. */
  inputFocus(): Pending<number> {
    this.checkAlive();
    const cookie = this.n.xcb_get_input_focus(this.c);
    return this.request(
      cookie,
      this.n.xcb_get_input_focus_reply,
      (r) => koffi.decode(r, 8, "uint32") as number,
    );
  }

  /**
   * Probes whether another client holds an active grab: asks for the grab on the root and queues
   * the release right behind it (an ungrab only ever releases this client's own grab), so the
   * probe holds nothing once the replies are read. Status: 0 Success, 1 AlreadyGrabbed,
   * 2 InvalidTime, 3 NotViewable, 4 Frozen.
   */
  probeGrabs(
    keyboard: boolean,
    pointer: boolean,
  ): { keyboard: Pending<number> | null; pointer: Pending<number> | null } {
    this.checkAlive();
    const n = this.n;
    const ASYNC = 1;
    const kb = keyboard ? n.xcb_grab_keyboard(this.c, 0, this.root, 0, ASYNC, ASYNC) : null;
    const ptr = pointer ? n.xcb_grab_pointer(this.c, 0, this.root, 0, ASYNC, ASYNC, 0, 0, 0) : null;
    if (kb) n.xcb_ungrab_keyboard(this.c, 0);
    if (ptr) n.xcb_ungrab_pointer(this.c, 0);
    const status = (r: Ptr) => koffi.decode(r, 1, "uint8") as number;
    return {
      keyboard: kb ? this.request(kb, n.xcb_grab_keyboard_reply, status) : null,
      pointer: ptr ? this.request(ptr, n.xcb_grab_pointer_reply, status) : null,
    };
  }

  /** Deepest-first hit test step: the child of `win` that contains root point (x, y), or 0. */
  childAt(win: number, x: number, y: number): Pending<number> {
    this.checkAlive();
    const cookie = this.n.xcb_translate_coordinates(this.c, this.root, win, x, y);
    return this.request(
      cookie,
      this.n.xcb_translate_coordinates_reply,
      (r) => koffi.decode(r, 8, "uint32") as number,
    );
  }

  /** The server's resource-id mask: an XID with these bits cleared names its client. */
  get resourceIdMask(): number {
    this.checkAlive();
    this.idMask ??= koffi.decode(this.n.xcb_get_setup(this.c), 16, "uint32") as number;
    return this.idMask;
  }

  private idMask: number | undefined;

  /**
   * The client that created `win`, as the X server allots ids: every resource a client creates
   * carries its resource id base, so two windows with the same base belong to one connection.
   * Server truth at no cost (no request), and no client can create a window under another's base.
   */
  clientOf(win: number): number {
    return (win & ~this.resourceIdMask) >>> 0;
  }

  /** Sends a request without a reply and waits for its error, if any. */
  private checked(cookie: Cookie): void {
    const err = this.n.xcb_request_check(this.c, cookie);
    const code = takeXcbError(this.n, err);
    if (code !== null) throw xErrorToUi(code);
    this.checkAlive();
  }

  /** A 32-bit ClientMessage (EWMH / ICCCM) to `dest`. */
  sendClientMessage(dest: number, window: number, type: number, data: number[], toRoot: boolean): void {
    this.checkAlive();
    const ev = new Uint8Array(32);
    const dv = new DataView(ev.buffer);
    ev[0] = 33; // ClientMessage
    ev[1] = 32; // format
    dv.setUint32(4, window, true);
    dv.setUint32(8, type, true);
    for (let i = 0; i < Math.min(5, data.length); i++) dv.setUint32(12 + i * 4, (data[i] ?? 0) >>> 0, true);
    // SubstructureRedirect | SubstructureNotify for messages to the WM, none for the client itself.
    const mask = toRoot ? 0x00180000 : 0;
    this.checked(this.n.xcb_send_event_checked(this.c, 0, dest, mask, ev));
  }

  mapWindow(win: number): void {
    this.checkAlive();
    this.checked(this.n.xcb_map_window_checked(this.c, win));
  }

  /** Test support: destroys a window we do not own is never done; used only on our own windows. */
  destroyWindow(win: number): void {
    this.checkAlive();
    this.checked(this.n.xcb_destroy_window_checked(this.c, win));
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.n.xcb_disconnect(this.c);
    this.n.XCloseDisplay(this.dpy);
  }
}

/** Decodes a format-32 property (xcb delivers 4-byte items) as unsigned numbers. */
export function cardinals(p: PropertyValue | null): number[] {
  if (p?.format !== 32) return [];
  const out: number[] = [];
  for (let i = 0; i + 4 <= p.bytes.length; i += 4) out.push(p.bytes.readUInt32LE(i));
  return out;
}

/** Decodes a text property: UTF-8 for UTF8_STRING, Latin-1 for STRING. */
export function text(p: PropertyValue | null, utf8Atom: number): string | null {
  if (p?.format !== 8) return null;
  let b = p.bytes;
  const nul = b.indexOf(0);
  if (nul >= 0) b = b.subarray(0, nul);
  return p.type === utf8Atom ? b.toString("utf8") : b.toString("latin1");
}
