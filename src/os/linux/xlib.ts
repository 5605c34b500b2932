import koffi, { type LibraryHandle, type TypeObject } from "koffi";
import { uiError } from "../../shared/errors.js";
import { libc } from "./libc.js";

/**
 * koffi bindings (by soname, no -dev packages) for the few Xlib / XTest / XShm / xcb entry
 * points the X11 backend and the release guardian use (libc's come from ./libc.ts). Loaded
 * lazily, once per thread (koffi instances are per isolate); the library handles themselves are
 * process-wide. Every load of an X library goes through `xLibrary`, the dialog's too.
 *
 * Requests that name a client window (which may vanish at any moment) go through xcb, where an
 * error is a value returned with the reply or by xcb_request_check, on this worker's own
 * connection. Xlib is used only for the root window and server-global requests (XTest, XShm /
 * XGetImage of the root, the keyboard mapping), whose failures we detect from return values.
 * See docs/x11.md ("Errors") for why the process-global Xlib error handler is a native no-op.
 */

export type Ptr = bigint;

export interface XImageHeader {
  width: number;
  height: number;
  data: Ptr | null;
  byte_order: number;
  depth: number;
  bytes_per_line: number;
  bits_per_pixel: number;
  red_mask: number | bigint;
  green_mask: number | bigint;
  blue_mask: number | bigint;
}

export interface Cookie {
  sequence: number;
}

type NativeFn = ((...args: unknown[]) => unknown) & { info?: unknown };

export interface X11Native {
  XInitThreads: () => number;
  XOpenDisplay: (name: string | null) => Ptr | null;
  XCloseDisplay: (dpy: Ptr) => number;
  XSetErrorHandler: (handler: Ptr | null) => Ptr | null;
  XSetIOErrorHandler: (handler: Ptr | null) => Ptr | null;
  XSetIOErrorExitHandler: (dpy: Ptr, handler: Ptr, data: Ptr | null) => void;
  XSync: (dpy: Ptr, discard: number) => number;
  XFlush: (dpy: Ptr) => number;
  XDefaultScreen: (dpy: Ptr) => number;
  XConnectionNumber: (dpy: Ptr) => number;
  XRootWindow: (dpy: Ptr, screen: number) => bigint | number;
  XDisplayWidth: (dpy: Ptr, screen: number) => number;
  XDisplayHeight: (dpy: Ptr, screen: number) => number;
  XDefaultVisual: (dpy: Ptr, screen: number) => Ptr;
  XDefaultDepth: (dpy: Ptr, screen: number) => number;
  XGetImage: (
    dpy: Ptr,
    d: bigint | number,
    x: number,
    y: number,
    w: number,
    h: number,
    planes: bigint,
    format: number,
  ) => Ptr | null;
  XDestroyImage: (img: Ptr) => number;
  XFree: (p: Ptr) => number;
  XDisplayKeycodes: (dpy: Ptr, min: number[], max: number[]) => number;
  XGetKeyboardMapping: (dpy: Ptr, first: number, count: number, per: number[]) => Ptr | null;
  XChangeKeyboardMapping: (dpy: Ptr, first: number, per: number, syms: BigUint64Array, n: number) => number;
  XKeysymToKeycode: (dpy: Ptr, ks: bigint | number) => number;
  XQueryExtension: (dpy: Ptr, name: string, op: number[], ev: number[], err: number[]) => number;
  XTestQueryExtension: (dpy: Ptr, ev: number[], err: number[], maj: number[], min: number[]) => number;
  XTestFakeMotionEvent: (dpy: Ptr, screen: number, x: number, y: number, delay: number) => number;
  XTestFakeButtonEvent: (dpy: Ptr, button: number, press: number, delay: number) => number;
  XTestFakeKeyEvent: (dpy: Ptr, keycode: number, press: number, delay: number) => number;
  XShmQueryExtension: (dpy: Ptr) => number;
  XShmCreateImage: (
    dpy: Ptr,
    visual: Ptr,
    depth: number,
    format: number,
    data: Ptr | null,
    info: Ptr,
    w: number,
    h: number,
  ) => Ptr | null;
  XShmAttach: (dpy: Ptr, info: Ptr) => number;
  XShmDetach: (dpy: Ptr, info: Ptr) => number;
  XShmGetImage: (dpy: Ptr, d: bigint | number, img: Ptr, x: number, y: number, planes: bigint) => number;
  xcb_connect: (name: string | null, screen: number[]) => Ptr | null;
  xcb_disconnect: (c: Ptr) => void;
  xcb_connection_has_error: (c: Ptr) => number;
  xcb_flush: (c: Ptr) => number;
  xcb_get_file_descriptor: (c: Ptr) => number;
  xcb_intern_atom: (c: Ptr, onlyIfExists: number, len: number, name: string) => Cookie;
  xcb_intern_atom_reply: (c: Ptr, cookie: Cookie, err: Array<Ptr | null>) => Ptr | null;
  xcb_get_property: (
    c: Ptr,
    del: number,
    win: number,
    prop: number,
    type: number,
    off: number,
    len: number,
  ) => Cookie;
  xcb_get_property_reply: (c: Ptr, cookie: Cookie, err: Array<Ptr | null>) => Ptr | null;
  xcb_get_property_value: (reply: Ptr) => Ptr;
  xcb_get_property_value_length: (reply: Ptr) => number;
  xcb_get_geometry: (c: Ptr, d: number) => Cookie;
  xcb_get_geometry_reply: (c: Ptr, cookie: Cookie, err: Array<Ptr | null>) => Ptr | null;
  xcb_translate_coordinates: (c: Ptr, src: number, dst: number, x: number, y: number) => Cookie;
  xcb_translate_coordinates_reply: (c: Ptr, cookie: Cookie, err: Array<Ptr | null>) => Ptr | null;
  xcb_get_window_attributes: (c: Ptr, w: number) => Cookie;
  xcb_get_window_attributes_reply: (c: Ptr, cookie: Cookie, err: Array<Ptr | null>) => Ptr | null;
  xcb_send_event_checked: (c: Ptr, propagate: number, dest: number, mask: number, ev: Uint8Array) => Cookie;
  xcb_map_window_checked: (c: Ptr, w: number) => Cookie;
  xcb_destroy_window_checked: (c: Ptr, w: number) => Cookie;
  xcb_request_check: (c: Ptr, cookie: Cookie) => Ptr | null;
  xcb_query_tree: (c: Ptr, w: number) => Cookie;
  xcb_query_tree_reply: (c: Ptr, cookie: Cookie, err: Array<Ptr | null>) => Ptr | null;
  xcb_query_tree_children: (reply: Ptr) => Ptr;
  xcb_query_tree_children_length: (reply: Ptr) => number;
  xcb_get_input_focus: (c: Ptr) => Cookie;
  xcb_get_input_focus_reply: (c: Ptr, cookie: Cookie, err: Array<Ptr | null>) => Ptr | null;
  xcb_grab_keyboard: (
    c: Ptr,
    ownerEvents: number,
    win: number,
    time: number,
    pm: number,
    km: number,
  ) => Cookie;
  xcb_grab_keyboard_reply: (c: Ptr, cookie: Cookie, err: Array<Ptr | null>) => Ptr | null;
  xcb_grab_pointer: (
    c: Ptr,
    ownerEvents: number,
    win: number,
    mask: number,
    pm: number,
    km: number,
    confine: number,
    cursor: number,
    time: number,
  ) => Cookie;
  xcb_grab_pointer_reply: (c: Ptr, cookie: Cookie, err: Array<Ptr | null>) => Ptr | null;
  xcb_ungrab_keyboard: (c: Ptr, time: number) => Cookie;
  xcb_ungrab_pointer: (c: Ptr, time: number) => Cookie;
  /** A passive key grab, checked: BadAccess when another client holds one that overlaps. */
  xcb_grab_key_checked: (
    c: Ptr,
    ownerEvents: number,
    w: number,
    modifiers: number,
    key: number,
    pm: number,
    km: number,
  ) => Cookie;
  xcb_ungrab_key: (c: Ptr, key: number, w: number, modifiers: number) => Cookie;
  xcb_get_setup: (c: Ptr) => Ptr;
  /** Core per-key auto-repeat (XKeyboardControl / XKeyboardState as plain byte buffers). */
  XChangeKeyboardControl: (dpy: Ptr, mask: number, values: Buffer) => number;
  XGetKeyboardControl: (dpy: Ptr, state: Buffer) => number;
  XGrabServer: (dpy: Ptr) => number;
  XUngrabServer: (dpy: Ptr) => number;
  XGetInputFocus: (dpy: Ptr, focus: Array<bigint | number>, revert: number[]) => number;
  XGrabKeyboard: (
    dpy: Ptr,
    win: bigint | number,
    owner: number,
    pm: number,
    km: number,
    time: number,
  ) => number;
  XUngrabKeyboard: (dpy: Ptr, time: number) => number;
  XGrabPointer: (
    dpy: Ptr,
    win: bigint | number,
    owner: number,
    mask: number,
    pm: number,
    km: number,
    confine: number,
    cursor: number,
    time: number,
  ) => number;
  XUngrabPointer: (dpy: Ptr, time: number) => number;
  XQueryPointer: (
    dpy: Ptr,
    win: bigint | number,
    root: Array<bigint | number>,
    child: Array<bigint | number>,
    rootX: number[],
    rootY: number[],
    winX: number[],
    winY: number[],
    mask: number[],
  ) => number;
  XTranslateCoordinates: (
    dpy: Ptr,
    src: bigint | number,
    dst: bigint | number,
    x: number,
    y: number,
    dx: number[],
    dy: number[],
    child: Array<bigint | number>,
  ) => number;
  free: (p: Ptr) => void;
  sysconf: (name: number) => number | bigint;
  shmget: (key: number, size: number, flags: number) => number;
  shmat: (id: number, addr: Ptr | null, flags: number) => Ptr;
  shmdt: (addr: Ptr) => number;
  shmctl: (id: number, cmd: number, buf: Ptr | null) => number;
  /** libXRes (X-Resource client ids: the server-verified PID of a window's client), or null. */
  xres: {
    XResQueryClientIds: (
      dpy: Ptr,
      numSpecs: number,
      specs: Array<{ client: number; mask: number }>,
      numIds: Array<number | bigint>,
      ids: Array<Ptr | null>,
    ) => number;
    XResGetClientPid: (value: Ptr) => number;
    XResClientIdsDestroy: (numIds: number, ids: Ptr) => void;
  } | null;
  /**
   * The RECORD extension's client side (in libXtst): which clients the server delivers events
   * to, for telling whose pointer grab is active (see grabOwner.ts).
   */
  xrecord: {
    XRecordAllocRange: () => Ptr | null;
    XRecordCreateContext: (
      dpy: Ptr,
      flags: number,
      clients: bigint[],
      nclients: number,
      ranges: Ptr[],
      nranges: number,
    ) => bigint | number;
    XRecordEnableContextAsync: (dpy: Ptr, ctx: bigint | number, cb: unknown, closure: Ptr | null) => number;
    XRecordProcessReplies: (dpy: Ptr) => void;
    XRecordDisableContext: (dpy: Ptr, ctx: bigint | number) => number;
    XRecordFreeContext: (dpy: Ptr, ctx: bigint | number) => number;
    XRecordFreeData: (data: Ptr) => void;
    /** koffi types: the range struct and the intercept callback's prototype / data struct. */
    Range: TypeObject;
    InterceptData: TypeObject;
    InterceptProc: TypeObject;
  };
  /**
   * libXi's XInput 2 queries, for where our XTest events go (the XTEST slave devices and this
   * client's pointer, see xtestRoute.ts), or null when libXi is not installed.
   */
  xi: {
    XIQueryVersion: (dpy: Ptr, major: number[], minor: number[]) => number;
    XIQueryDevice: (dpy: Ptr, deviceid: number, n: number[]) => Ptr | null;
    XIFreeDeviceInfo: (info: Ptr) => void;
    XIGetClientPointer: (dpy: Ptr, win: number, deviceid: number[]) => number;
    /**
     * An XI2 passive key grab; `modifiers` is an XIGrabModifiers array (int modifiers, int
     * status) as bytes, each status set by the server. Returns how many modifiers failed.
     */
    XIGrabKeycode: (
      dpy: Ptr,
      deviceid: number,
      keycode: number,
      win: number,
      grabMode: number,
      pairedMode: number,
      ownerEvents: number,
      mask: Buffer,
      count: number,
      modifiers: Buffer,
    ) => number;
    XIUngrabKeycode: (
      dpy: Ptr,
      deviceid: number,
      keycode: number,
      win: number,
      count: number,
      modifiers: Buffer,
    ) => number;
    DeviceInfo: TypeObject;
  } | null;
  /** libX11-xcb's XGetXCBConnection, when that library is installed (null otherwise). */
  XGetXCBConnection: ((dpy: Ptr) => Ptr | null) | null;
  /** Address of XConnectionNumber: the process-wide no-op Xlib error handler (see docs/x11.md). */
  noopErrorHandler: Ptr;
  XImage: TypeObject;
  XShmSegmentInfo: TypeObject;
}

let cached: X11Native | null = null;
const libraries = new Map<string, LibraryHandle>();

/** An X library by soname, loaded once per thread. Throws platform_unavailable when missing. */
export function xLibrary(soname: string): LibraryHandle {
  const known = libraries.get(soname);
  if (known) return known;
  let lib: LibraryHandle;
  try {
    lib = koffi.load(soname);
  } catch {
    throw uiError("platform_unavailable", "An X11 library could not be loaded.");
  }
  libraries.set(soname, lib);
  return lib;
}

/** XTest's XRecord bindings (the pointer-delivery record of the input port). */
function xrecordBindings(xtst: LibraryHandle): X11Native["xrecord"] {
  const f = (decl: string): NativeFn => xtst.func(decl) as NativeFn;
  const r8 = koffi.struct("XRecordRange8", { first: "uint8", last: "uint8" });
  const r16 = koffi.struct("XRecordRange16", { first: "uint16", last: "uint16" });
  const rExt = koffi.struct("XRecordExtRange", { ext_major: r8, ext_minor: r16 });
  const Range = koffi.struct("XRecordRange", {
    core_requests: r8,
    core_replies: r8,
    ext_requests: rExt,
    ext_replies: rExt,
    delivered_events: r8,
    device_events: r8,
    errors: r8,
    client_started: "int",
    client_died: "int",
  });
  const InterceptData = koffi.struct("XRecordInterceptData", {
    id_base: "unsigned long",
    server_time: "unsigned long",
    client_seq: "unsigned long",
    category: "int",
    client_swapped: "int",
    data: "uint8_t *",
    data_len: "unsigned long",
  });
  const InterceptProc = koffi.proto("void XRecordInterceptProc(void *closure, XRecordInterceptData *data)");
  return {
    XRecordAllocRange: f("XRecordRange *XRecordAllocRange()") as X11Native["xrecord"]["XRecordAllocRange"],
    XRecordCreateContext: f(
      "unsigned long XRecordCreateContext(Display *dpy, int flags, unsigned long *clients, int nclients, XRecordRange **ranges, int nranges)",
    ) as X11Native["xrecord"]["XRecordCreateContext"],
    XRecordEnableContextAsync: f(
      "int XRecordEnableContextAsync(Display *dpy, unsigned long ctx, XRecordInterceptProc *cb, void *closure)",
    ) as X11Native["xrecord"]["XRecordEnableContextAsync"],
    XRecordProcessReplies: f(
      "void XRecordProcessReplies(Display *dpy)",
    ) as X11Native["xrecord"]["XRecordProcessReplies"],
    XRecordDisableContext: f(
      "int XRecordDisableContext(Display *dpy, unsigned long ctx)",
    ) as X11Native["xrecord"]["XRecordDisableContext"],
    XRecordFreeContext: f(
      "int XRecordFreeContext(Display *dpy, unsigned long ctx)",
    ) as X11Native["xrecord"]["XRecordFreeContext"],
    XRecordFreeData: f(
      "void XRecordFreeData(XRecordInterceptData *data)",
    ) as X11Native["xrecord"]["XRecordFreeData"],
    Range,
    InterceptData,
    InterceptProc,
  };
}

/** libX11-xcb's XGetXCBConnection, or null when that library is not installed. */
function xcbOfXlib(): X11Native["XGetXCBConnection"] {
  try {
    const x11xcb = xLibrary("libX11-xcb.so.1");
    return x11xcb.func("xcb_connection_t *XGetXCBConnection(Display *dpy)") as unknown as (
      dpy: Ptr,
    ) => Ptr | null;
  } catch {
    return null;
  }
}

/** X-Resource's client-id queries, or null when libXRes is not installed. */
function xresBindings(): X11Native["xres"] {
  try {
    const lib = xLibrary("libXRes.so.1");
    koffi.struct("XResClientIdSpec", { client: "unsigned long", mask: "unsigned int" });
    return {
      XResQueryClientIds: lib.func(
        "int XResQueryClientIds(Display *dpy, long num_specs, XResClientIdSpec *specs, _Out_ long *num_ids, _Out_ void **ids)",
      ) as unknown as NonNullable<X11Native["xres"]>["XResQueryClientIds"],
      XResGetClientPid: lib.func("int XResGetClientPid(void *value)") as unknown as NonNullable<
        X11Native["xres"]
      >["XResGetClientPid"],
      XResClientIdsDestroy: lib.func(
        "void XResClientIdsDestroy(long num_ids, void *ids)",
      ) as unknown as NonNullable<X11Native["xres"]>["XResClientIdsDestroy"],
    };
  } catch {
    return null;
  }
}

/** XInput2's device queries (the XTEST route check), or null when libXi is not installed. */
function xiBindings(): X11Native["xi"] {
  try {
    const lib = xLibrary("libXi.so.6");
    const DeviceInfo = koffi.struct("X11XIDeviceInfo", {
      deviceid: "int",
      name: "const char *",
      use: "int",
      attachment: "int",
      enabled: "int",
      num_classes: "int",
      classes: "void *",
    });
    const g = (decl: string) => lib.func(decl) as unknown;
    return {
      XIQueryVersion: g(
        "int XIQueryVersion(Display *dpy, _Inout_ int *major, _Inout_ int *minor)",
      ) as NonNullable<X11Native["xi"]>["XIQueryVersion"],
      XIQueryDevice: g("void *XIQueryDevice(Display *dpy, int deviceid, _Out_ int *n)") as NonNullable<
        X11Native["xi"]
      >["XIQueryDevice"],
      XIFreeDeviceInfo: g("void XIFreeDeviceInfo(void *info)") as NonNullable<
        X11Native["xi"]
      >["XIFreeDeviceInfo"],
      XIGetClientPointer: g(
        "int XIGetClientPointer(Display *dpy, unsigned long win, _Out_ int *deviceid)",
      ) as NonNullable<X11Native["xi"]>["XIGetClientPointer"],
      XIGrabKeycode: g(
        "int XIGrabKeycode(Display *dpy, int deviceid, int keycode, unsigned long win, int grab_mode, int paired_device_mode, int owner_events, void *mask, int num_modifiers, void *modifiers)",
      ) as NonNullable<X11Native["xi"]>["XIGrabKeycode"],
      XIUngrabKeycode: g(
        "int XIUngrabKeycode(Display *dpy, int deviceid, int keycode, unsigned long win, int num_modifiers, void *modifiers)",
      ) as NonNullable<X11Native["xi"]>["XIUngrabKeycode"],
      DeviceInfo,
    };
  } catch {
    return null;
  }
}

function cLibrary(): ReturnType<typeof libc> {
  try {
    return libc();
  } catch {
    throw uiError("platform_unavailable", "The C library could not be loaded.");
  }
}

/** Loads the bindings once per thread. Throws platform_unavailable when a library is missing. */
export function x11Native(): X11Native {
  if (cached) return cached;
  const x11 = xLibrary("libX11.so.6");
  const xtst = xLibrary("libXtst.so.6");
  const xext = xLibrary("libXext.so.6");
  const xcb = xLibrary("libxcb.so.1");
  const c = cLibrary();

  koffi.opaque("Display");
  koffi.opaque("Visual");
  koffi.opaque("xcb_connection_t");
  const Cookie = koffi.struct("xcb_cookie_t", { sequence: "uint32" });
  const XImage = koffi.struct("XImage", {
    width: "int",
    height: "int",
    xoffset: "int",
    format: "int",
    data: "void *",
    byte_order: "int",
    bitmap_unit: "int",
    bitmap_bit_order: "int",
    bitmap_pad: "int",
    depth: "int",
    bytes_per_line: "int",
    bits_per_pixel: "int",
    red_mask: "unsigned long",
    green_mask: "unsigned long",
    blue_mask: "unsigned long",
    obdata: "void *",
    f: koffi.array("void *", 6),
  });
  const XShmSegmentInfo = koffi.struct("XShmSegmentInfo", {
    shmseg: "unsigned long",
    shmid: "int",
    shmaddr: "void *",
    readOnly: "int",
  });

  const f = (lib: LibraryHandle, decl: string): NativeFn => lib.func(decl) as NativeFn;
  const n = {
    XInitThreads: f(x11, "int XInitThreads()"),
    XOpenDisplay: f(x11, "Display *XOpenDisplay(const char *name)"),
    XCloseDisplay: f(x11, "int XCloseDisplay(Display *dpy)"),
    XSetErrorHandler: f(x11, "void *XSetErrorHandler(void *handler)"),
    XSetIOErrorHandler: f(x11, "void *XSetIOErrorHandler(void *handler)"),
    XSetIOErrorExitHandler: f(x11, "void XSetIOErrorExitHandler(Display *dpy, void *handler, void *data)"),
    XSync: f(x11, "int XSync(Display *dpy, int discard)"),
    XFlush: f(x11, "int XFlush(Display *dpy)"),
    XDefaultScreen: f(x11, "int XDefaultScreen(Display *dpy)"),
    XConnectionNumber: f(x11, "int XConnectionNumber(Display *dpy)"),
    XRootWindow: f(x11, "unsigned long XRootWindow(Display *dpy, int screen)"),
    XDisplayWidth: f(x11, "int XDisplayWidth(Display *dpy, int screen)"),
    XDisplayHeight: f(x11, "int XDisplayHeight(Display *dpy, int screen)"),
    XDefaultVisual: f(x11, "Visual *XDefaultVisual(Display *dpy, int screen)"),
    XDefaultDepth: f(x11, "int XDefaultDepth(Display *dpy, int screen)"),
    XGetImage: f(
      x11,
      "XImage *XGetImage(Display *dpy, unsigned long d, int x, int y, unsigned int w, unsigned int h, unsigned long planes, int format)",
    ),
    XDestroyImage: f(x11, "int XDestroyImage(XImage *img)"),
    XFree: f(x11, "int XFree(void *p)"),
    XDisplayKeycodes: f(x11, "int XDisplayKeycodes(Display *dpy, _Out_ int *min, _Out_ int *max)"),
    XGetKeyboardMapping: f(
      x11,
      "unsigned long *XGetKeyboardMapping(Display *dpy, uint8_t first, int count, _Out_ int *per)",
    ),
    XChangeKeyboardMapping: f(
      x11,
      "int XChangeKeyboardMapping(Display *dpy, int first, int per, unsigned long *syms, int n)",
    ),
    XKeysymToKeycode: f(x11, "uint8_t XKeysymToKeycode(Display *dpy, unsigned long ks)"),
    XQueryExtension: f(
      x11,
      "int XQueryExtension(Display *dpy, const char *name, _Out_ int *op, _Out_ int *ev, _Out_ int *err)",
    ),
    XTestQueryExtension: f(
      xtst,
      "int XTestQueryExtension(Display *dpy, _Out_ int *ev, _Out_ int *err, _Out_ int *maj, _Out_ int *min)",
    ),
    XTestFakeMotionEvent: f(
      xtst,
      "int XTestFakeMotionEvent(Display *dpy, int screen, int x, int y, unsigned long delay)",
    ),
    XTestFakeButtonEvent: f(
      xtst,
      "int XTestFakeButtonEvent(Display *dpy, unsigned int button, int press, unsigned long delay)",
    ),
    XTestFakeKeyEvent: f(
      xtst,
      "int XTestFakeKeyEvent(Display *dpy, unsigned int keycode, int press, unsigned long delay)",
    ),
    XShmQueryExtension: f(xext, "int XShmQueryExtension(Display *dpy)"),
    XShmCreateImage: f(
      xext,
      "XImage *XShmCreateImage(Display *dpy, Visual *visual, unsigned int depth, int format, void *data, XShmSegmentInfo *info, unsigned int w, unsigned int h)",
    ),
    XShmAttach: f(xext, "int XShmAttach(Display *dpy, XShmSegmentInfo *info)"),
    XShmDetach: f(xext, "int XShmDetach(Display *dpy, XShmSegmentInfo *info)"),
    XShmGetImage: f(
      xext,
      "int XShmGetImage(Display *dpy, unsigned long d, XImage *img, int x, int y, unsigned long planes)",
    ),
    xcb_connect: f(xcb, "xcb_connection_t *xcb_connect(const char *name, _Out_ int *screen)"),
    xcb_disconnect: f(xcb, "void xcb_disconnect(xcb_connection_t *c)"),
    xcb_connection_has_error: f(xcb, "int xcb_connection_has_error(xcb_connection_t *c)"),
    xcb_flush: f(xcb, "int xcb_flush(xcb_connection_t *c)"),
    xcb_get_file_descriptor: f(xcb, "int xcb_get_file_descriptor(xcb_connection_t *c)"),
    xcb_intern_atom: f(
      xcb,
      "xcb_cookie_t xcb_intern_atom(xcb_connection_t *c, uint8_t only_if_exists, uint16_t len, const char *name)",
    ),
    xcb_intern_atom_reply: f(
      xcb,
      "void *xcb_intern_atom_reply(xcb_connection_t *c, xcb_cookie_t cookie, _Out_ void **err)",
    ),
    xcb_get_property: f(
      xcb,
      "xcb_cookie_t xcb_get_property(xcb_connection_t *c, uint8_t del, uint32_t w, uint32_t prop, uint32_t type, uint32_t off, uint32_t len)",
    ),
    xcb_get_property_reply: f(
      xcb,
      "void *xcb_get_property_reply(xcb_connection_t *c, xcb_cookie_t cookie, _Out_ void **err)",
    ),
    xcb_get_property_value: f(xcb, "void *xcb_get_property_value(void *reply)"),
    xcb_get_property_value_length: f(xcb, "int xcb_get_property_value_length(void *reply)"),
    xcb_get_geometry: f(xcb, "xcb_cookie_t xcb_get_geometry(xcb_connection_t *c, uint32_t d)"),
    xcb_get_geometry_reply: f(
      xcb,
      "void *xcb_get_geometry_reply(xcb_connection_t *c, xcb_cookie_t cookie, _Out_ void **err)",
    ),
    xcb_translate_coordinates: f(
      xcb,
      "xcb_cookie_t xcb_translate_coordinates(xcb_connection_t *c, uint32_t src, uint32_t dst, int16_t x, int16_t y)",
    ),
    xcb_translate_coordinates_reply: f(
      xcb,
      "void *xcb_translate_coordinates_reply(xcb_connection_t *c, xcb_cookie_t cookie, _Out_ void **err)",
    ),
    xcb_get_window_attributes: f(
      xcb,
      "xcb_cookie_t xcb_get_window_attributes(xcb_connection_t *c, uint32_t w)",
    ),
    xcb_get_window_attributes_reply: f(
      xcb,
      "void *xcb_get_window_attributes_reply(xcb_connection_t *c, xcb_cookie_t cookie, _Out_ void **err)",
    ),
    xcb_send_event_checked: f(
      xcb,
      "xcb_cookie_t xcb_send_event_checked(xcb_connection_t *c, uint8_t propagate, uint32_t dest, uint32_t mask, const uint8_t *ev)",
    ),
    xcb_map_window_checked: f(xcb, "xcb_cookie_t xcb_map_window_checked(xcb_connection_t *c, uint32_t w)"),
    xcb_destroy_window_checked: f(
      xcb,
      "xcb_cookie_t xcb_destroy_window_checked(xcb_connection_t *c, uint32_t w)",
    ),
    xcb_request_check: f(xcb, "void *xcb_request_check(xcb_connection_t *c, xcb_cookie_t cookie)"),
    xcb_query_tree: f(xcb, "xcb_cookie_t xcb_query_tree(xcb_connection_t *c, uint32_t w)"),
    xcb_query_tree_reply: f(
      xcb,
      "void *xcb_query_tree_reply(xcb_connection_t *c, xcb_cookie_t cookie, _Out_ void **err)",
    ),
    xcb_query_tree_children: f(xcb, "void *xcb_query_tree_children(void *reply)"),
    xcb_query_tree_children_length: f(xcb, "int xcb_query_tree_children_length(void *reply)"),
    xcb_get_input_focus: f(xcb, "xcb_cookie_t xcb_get_input_focus(xcb_connection_t *c)"),
    xcb_get_input_focus_reply: f(
      xcb,
      "void *xcb_get_input_focus_reply(xcb_connection_t *c, xcb_cookie_t cookie, _Out_ void **err)",
    ),
    xcb_grab_keyboard: f(
      xcb,
      "xcb_cookie_t xcb_grab_keyboard(xcb_connection_t *c, uint8_t owner_events, uint32_t w, uint32_t time, uint8_t pm, uint8_t km)",
    ),
    xcb_grab_keyboard_reply: f(
      xcb,
      "void *xcb_grab_keyboard_reply(xcb_connection_t *c, xcb_cookie_t cookie, _Out_ void **err)",
    ),
    xcb_grab_pointer: f(
      xcb,
      "xcb_cookie_t xcb_grab_pointer(xcb_connection_t *c, uint8_t owner_events, uint32_t w, uint16_t mask, uint8_t pm, uint8_t km, uint32_t confine, uint32_t cursor, uint32_t time)",
    ),
    xcb_grab_pointer_reply: f(
      xcb,
      "void *xcb_grab_pointer_reply(xcb_connection_t *c, xcb_cookie_t cookie, _Out_ void **err)",
    ),
    xcb_ungrab_keyboard: f(xcb, "xcb_cookie_t xcb_ungrab_keyboard(xcb_connection_t *c, uint32_t time)"),
    xcb_ungrab_pointer: f(xcb, "xcb_cookie_t xcb_ungrab_pointer(xcb_connection_t *c, uint32_t time)"),
    xcb_grab_key_checked: f(
      xcb,
      "xcb_cookie_t xcb_grab_key_checked(xcb_connection_t *c, uint8_t owner_events, uint32_t w, uint16_t modifiers, uint8_t key, uint8_t pm, uint8_t km)",
    ),
    xcb_ungrab_key: f(
      xcb,
      "xcb_cookie_t xcb_ungrab_key(xcb_connection_t *c, uint8_t key, uint32_t w, uint16_t modifiers)",
    ),
    xcb_get_setup: f(xcb, "const void *xcb_get_setup(xcb_connection_t *c)"),
    XChangeKeyboardControl: f(
      x11,
      "int XChangeKeyboardControl(Display *dpy, unsigned long mask, uint8_t *values)",
    ),
    XGetKeyboardControl: f(x11, "int XGetKeyboardControl(Display *dpy, uint8_t *state)"),
    XGrabServer: f(x11, "int XGrabServer(Display *dpy)"),
    XUngrabServer: f(x11, "int XUngrabServer(Display *dpy)"),
    XGetInputFocus: f(x11, "int XGetInputFocus(Display *dpy, _Out_ unsigned long *focus, _Out_ int *revert)"),
    XGrabKeyboard: f(
      x11,
      "int XGrabKeyboard(Display *dpy, unsigned long w, int owner, int pm, int km, unsigned long time)",
    ),
    XUngrabKeyboard: f(x11, "int XUngrabKeyboard(Display *dpy, unsigned long time)"),
    XGrabPointer: f(
      x11,
      "int XGrabPointer(Display *dpy, unsigned long w, int owner, unsigned int mask, int pm, int km, unsigned long confine, unsigned long cursor, unsigned long time)",
    ),
    XUngrabPointer: f(x11, "int XUngrabPointer(Display *dpy, unsigned long time)"),
    XQueryPointer: f(
      x11,
      "int XQueryPointer(Display *dpy, unsigned long w, _Out_ unsigned long *root, _Out_ unsigned long *child, _Out_ int *rx, _Out_ int *ry, _Out_ int *wx, _Out_ int *wy, _Out_ unsigned int *mask)",
    ),
    XTranslateCoordinates: f(
      x11,
      "int XTranslateCoordinates(Display *dpy, unsigned long src, unsigned long dst, int x, int y, _Out_ int *dx, _Out_ int *dy, _Out_ unsigned long *child)",
    ),
    free: c.free,
    sysconf: c.sysconf,
    shmget: c.shmget,
    shmat: c.shmat,
    shmdt: c.shmdt,
    shmctl: c.shmctl,
  };
  const xrecord = xrecordBindings(xtst);
  const xi = xiBindings();
  const noop = x11.symbol("XConnectionNumber") as unknown;
  if (typeof noop !== "bigint") throw uiError("platform_unavailable", "An X11 symbol is missing.");
  void Cookie;
  cached = {
    ...(n as unknown as Omit<
      X11Native,
      "noopErrorHandler" | "XGetXCBConnection" | "XImage" | "XShmSegmentInfo" | "xrecord" | "xi"
    >),
    xrecord,
    xi,
    noopErrorHandler: noop,
    XGetXCBConnection: xcbOfXlib(),
    xres: xresBindings(),
    XImage,
    XShmSegmentInfo,
  };
  return cached;
}

/** The guardian's read-back of the keyboard: the keymap and one keycode's keysyms over xcb. */
export interface XKeyboardState {
  xcb_get_keyboard_mapping: (c: Ptr, first: number, count: number) => { sequence: number };
  xcb_get_keyboard_mapping_reply: (
    c: Ptr,
    cookie: { sequence: number },
    err: Array<Ptr | null>,
  ) => Ptr | null;
  XQueryKeymap: (dpy: Ptr, keys: Uint8Array) => number;
}

let keyboardState: XKeyboardState | null = null;

/** The keyboard read-back bindings, after x11Native() (whose xcb types they use). */
export function xKeyboardState(): XKeyboardState {
  if (keyboardState) return keyboardState;
  x11Native();
  const x11 = xLibrary("libX11.so.6");
  const xcb = xLibrary("libxcb.so.1");
  keyboardState = {
    xcb_get_keyboard_mapping: xcb.func(
      "xcb_cookie_t xcb_get_keyboard_mapping(xcb_connection_t *c, uint8_t first, uint8_t count)",
    ) as XKeyboardState["xcb_get_keyboard_mapping"],
    xcb_get_keyboard_mapping_reply: xcb.func(
      "void *xcb_get_keyboard_mapping_reply(xcb_connection_t *c, xcb_cookie_t cookie, _Out_ void **err)",
    ) as XKeyboardState["xcb_get_keyboard_mapping_reply"],
    XQueryKeymap: x11.func(
      "int XQueryKeymap(void *dpy, _Out_ uint8_t *keys)",
    ) as XKeyboardState["XQueryKeymap"],
  };
  return keyboardState;
}

/** X protocol error codes we tell apart. */
export const X_BAD_WINDOW = 3;
export const X_BAD_DRAWABLE = 9;

/** Reads the error code of an xcb_generic_error_t and frees it. */
export function takeXcbError(n: X11Native, err: Ptr | null): number | null {
  if (err === null || err === 0n) return null;
  const code = koffi.decode(err, 1, "uint8") as number;
  n.free(err);
  return code;
}

/** Turns an X error code into our stable code: a vanished window is target_gone. */
export function xErrorToUi(code: number): ReturnType<typeof uiError> {
  if (code === X_BAD_WINDOW || code === X_BAD_DRAWABLE) return uiError("target_gone");
  return uiError("platform_unavailable", "An X request failed.");
}
