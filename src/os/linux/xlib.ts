import koffi, { type LibraryHandle, type TypeObject } from "koffi";
import { uiError } from "../../shared/errors.js";
import { libc } from "./libc.js";

/**
 * The one binding of each X library (by soname, no -dev packages): the Xlib / XTest / XShm /
 * xcb / XInput2 / X-Resource / Xft entry points the X11 backend, the release guardian and our
 * consent dialog use, declared once in a table per library below (libc's come from ./libc.ts).
 * Bound lazily, once per thread (koffi instances are per isolate); the library handles
 * themselves are process-wide.
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
  XInternAtom: (dpy: Ptr, name: string, onlyIfExists: number) => number | bigint;
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
  /** A passive button grab, checked: BadAccess when another client holds one that overlaps. */
  xcb_grab_button_checked: (
    c: Ptr,
    ownerEvents: number,
    w: number,
    eventMask: number,
    pm: number,
    km: number,
    confine: number,
    cursor: number,
    button: number,
    modifiers: number,
  ) => Cookie;
  xcb_ungrab_button: (c: Ptr, button: number, w: number, modifiers: number) => Cookie;
  xcb_get_setup: (c: Ptr) => Ptr;
  xcb_generate_id: (c: Ptr) => number;
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
  /** Core passive grabs on Xlib's connection (the probes without libX11-xcb, corePassiveXlib.ts). */
  XGrabKey: (
    dpy: Ptr,
    key: number,
    modifiers: number,
    w: number,
    owner: number,
    pm: number,
    km: number,
  ) => number;
  XUngrabKey: (dpy: Ptr, key: number, modifiers: number, w: number) => number;
  XGrabButton: (
    dpy: Ptr,
    button: number,
    modifiers: number,
    w: number,
    owner: number,
    mask: number,
    pm: number,
    km: number,
    confine: number,
    cursor: number,
  ) => number;
  XUngrabButton: (dpy: Ptr, button: number, modifiers: number, w: number) => number;
  XCreatePixmap: (dpy: Ptr, d: number, w: number, h: number, depth: number) => bigint | number;
  XQueryTree: (
    dpy: Ptr,
    w: number,
    root: Array<bigint | number>,
    parent: Array<bigint | number>,
    children: Array<Ptr | null>,
    n: number[],
  ) => number;
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
  /**
   * libxcb-shm (MIT-SHM on our own xcb connection, so a read is ordered with the checks'
   * requests on that connection), or null when it is not installed.
   */
  xcbShm: {
    xcb_shm_attach_checked: (c: Ptr, seg: number, shmid: number, readOnly: number) => Cookie;
    xcb_shm_detach: (c: Ptr, seg: number) => Cookie;
    xcb_shm_get_image: (
      c: Ptr,
      drawable: number,
      x: number,
      y: number,
      w: number,
      h: number,
      planes: number,
      format: number,
      seg: number,
      offset: number,
    ) => Cookie;
    xcb_shm_get_image_reply: (c: Ptr, cookie: Cookie, err: Array<Ptr | null>) => Ptr | null;
  } | null;
  /**
   * libxcb-res (X-Resource on our own xcb connection, so an owner request can join a batch of
   * other requests), or null when it is not installed.
   */
  xcbRes: {
    /** `specs`: (client, mask) pairs, as xcb_res_client_id_spec_t. */
    xcb_res_query_client_ids: (c: Ptr, numSpecs: number, specs: Uint32Array) => Cookie;
    xcb_res_query_client_ids_reply: (c: Ptr, cookie: Cookie, err: Array<Ptr | null>) => Ptr | null;
  } | null;
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
    /** Every client's resource base and mask (XResClient: two unsigned longs each). */
    XResQueryClients: (dpy: Ptr, n: number[], clients: Array<Ptr | null>) => number;
    /** How many resources of each type a client holds (XResType: Atom, unsigned int). */
    XResQueryClientResources: (dpy: Ptr, client: number, n: number[], types: Array<Ptr | null>) => number;
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
    /** An XI2 passive button grab, like XIGrabKeycode (plus a cursor, 0 here). */
    XIGrabButton: (
      dpy: Ptr,
      deviceid: number,
      button: number,
      win: number,
      cursor: number,
      grabMode: number,
      pairedMode: number,
      ownerEvents: number,
      mask: Buffer,
      count: number,
      modifiers: Buffer,
    ) => number;
    XIUngrabButton: (
      dpy: Ptr,
      deviceid: number,
      button: number,
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

// One table of C declarations per library: every function any of our X clients calls. The types
// they name (Display, XImage, the xcb cookie, XRecord's structs, …) are registered first (xTypes).

const LIBX11 = {
  XInitThreads: "int XInitThreads()",
  XOpenDisplay: "Display *XOpenDisplay(const char *name)",
  XCloseDisplay: "int XCloseDisplay(Display *dpy)",
  XSetErrorHandler: "void *XSetErrorHandler(void *handler)",
  XSetIOErrorHandler: "void *XSetIOErrorHandler(void *handler)",
  XSetIOErrorExitHandler: "void XSetIOErrorExitHandler(Display *dpy, void *handler, void *data)",
  XSync: "int XSync(Display *dpy, int discard)",
  XFlush: "int XFlush(Display *dpy)",
  XDefaultScreen: "int XDefaultScreen(Display *dpy)",
  XConnectionNumber: "int XConnectionNumber(Display *dpy)",
  XRootWindow: "unsigned long XRootWindow(Display *dpy, int screen)",
  XDisplayWidth: "int XDisplayWidth(Display *dpy, int screen)",
  XDisplayHeight: "int XDisplayHeight(Display *dpy, int screen)",
  XDefaultVisual: "Visual *XDefaultVisual(Display *dpy, int screen)",
  XDefaultDepth: "int XDefaultDepth(Display *dpy, int screen)",
  XGetImage:
    "XImage *XGetImage(Display *dpy, unsigned long d, int x, int y, unsigned int w, unsigned int h, unsigned long planes, int format)",
  XDestroyImage: "int XDestroyImage(XImage *img)",
  XFree: "int XFree(void *p)",
  XDisplayKeycodes: "int XDisplayKeycodes(Display *dpy, _Out_ int *min, _Out_ int *max)",
  XGetKeyboardMapping:
    "unsigned long *XGetKeyboardMapping(Display *dpy, uint8_t first, int count, _Out_ int *per)",
  XChangeKeyboardMapping:
    "int XChangeKeyboardMapping(Display *dpy, int first, int per, unsigned long *syms, int n)",
  XKeysymToKeycode: "uint8_t XKeysymToKeycode(Display *dpy, unsigned long ks)",
  XQueryExtension:
    "int XQueryExtension(Display *dpy, const char *name, _Out_ int *op, _Out_ int *ev, _Out_ int *err)",
  XChangeKeyboardControl: "int XChangeKeyboardControl(Display *dpy, unsigned long mask, uint8_t *values)",
  XGetKeyboardControl: "int XGetKeyboardControl(Display *dpy, uint8_t *state)",
  XGrabServer: "int XGrabServer(Display *dpy)",
  XUngrabServer: "int XUngrabServer(Display *dpy)",
  XGetInputFocus: "int XGetInputFocus(Display *dpy, _Out_ unsigned long *focus, _Out_ int *revert)",
  XGrabKeyboard:
    "int XGrabKeyboard(Display *dpy, unsigned long w, int owner, int pm, int km, unsigned long time)",
  XUngrabKeyboard: "int XUngrabKeyboard(Display *dpy, unsigned long time)",
  XGrabKey:
    "int XGrabKey(Display *dpy, int key, unsigned int mods, unsigned long w, int owner, int pm, int km)",
  XUngrabKey: "int XUngrabKey(Display *dpy, int key, unsigned int mods, unsigned long w)",
  XGrabButton:
    "int XGrabButton(Display *dpy, unsigned int button, unsigned int mods, unsigned long w, int owner, unsigned int mask, int pm, int km, unsigned long confine, unsigned long cursor)",
  XUngrabButton: "int XUngrabButton(Display *dpy, unsigned int button, unsigned int mods, unsigned long w)",
  XCreatePixmap:
    "unsigned long XCreatePixmap(Display *dpy, unsigned long d, unsigned int w, unsigned int h, unsigned int depth)",
  XGrabPointer:
    "int XGrabPointer(Display *dpy, unsigned long w, int owner, unsigned int mask, int pm, int km, unsigned long confine, unsigned long cursor, unsigned long time)",
  XUngrabPointer: "int XUngrabPointer(Display *dpy, unsigned long time)",
  XQueryPointer:
    "int XQueryPointer(Display *dpy, unsigned long w, _Out_ unsigned long *root, _Out_ unsigned long *child, _Out_ int *rx, _Out_ int *ry, _Out_ int *wx, _Out_ int *wy, _Out_ unsigned int *mask)",
  XTranslateCoordinates:
    "int XTranslateCoordinates(Display *dpy, unsigned long src, unsigned long dst, int x, int y, _Out_ int *dx, _Out_ int *dy, _Out_ unsigned long *child)",
  XDefaultColormap: "unsigned long XDefaultColormap(Display *dpy, int screen)",
  XCreateSimpleWindow:
    "unsigned long XCreateSimpleWindow(Display *dpy, unsigned long parent, int x, int y, unsigned int w, unsigned int h, unsigned int border, unsigned long borderPixel, unsigned long background)",
  XDestroyWindow: "int XDestroyWindow(Display *dpy, unsigned long w)",
  XSelectInput: "int XSelectInput(Display *dpy, unsigned long w, long mask)",
  XStoreName: "int XStoreName(Display *dpy, unsigned long w, const char *name)",
  XInternAtom: "unsigned long XInternAtom(Display *dpy, const char *name, int onlyIfExists)",
  XChangeProperty:
    "int XChangeProperty(Display *dpy, unsigned long w, unsigned long prop, unsigned long type, int format, int mode, const void *data, int n)",
  XSetWMProtocols: "int XSetWMProtocols(Display *dpy, unsigned long w, unsigned long *protocols, int n)",
  XMapRaised: "int XMapRaised(Display *dpy, unsigned long w)",
  XRaiseWindow: "int XRaiseWindow(Display *dpy, unsigned long w)",
  XPending: "int XPending(Display *dpy)",
  XNextEvent: "int XNextEvent(Display *dpy, void *ev)",
  XGetEventData: "int XGetEventData(Display *dpy, void *cookie)",
  XFreeEventData: "void XFreeEventData(Display *dpy, void *cookie)",
  XQueryTree:
    "int XQueryTree(Display *dpy, unsigned long w, _Out_ unsigned long *root, _Out_ unsigned long *parent, _Out_ void **children, _Out_ unsigned int *n)",
  XGetWindowAttributes: "int XGetWindowAttributes(Display *dpy, unsigned long w, void *attrs)",
  XGetWindowProperty:
    "int XGetWindowProperty(Display *dpy, unsigned long w, unsigned long prop, long offset, long length, int del, unsigned long reqType, _Out_ unsigned long *actualType, _Out_ int *actualFormat, _Out_ unsigned long *nItems, _Out_ unsigned long *bytesAfter, _Out_ void **data)",
  XCreateGC: "void *XCreateGC(Display *dpy, unsigned long d, unsigned long mask, void *values)",
  XFreeGC: "int XFreeGC(Display *dpy, void *gc)",
  XSetForeground: "int XSetForeground(Display *dpy, void *gc, unsigned long pixel)",
  XFillRectangle:
    "int XFillRectangle(Display *dpy, unsigned long d, void *gc, int x, int y, unsigned int w, unsigned int h)",
  XDrawRectangle:
    "int XDrawRectangle(Display *dpy, unsigned long d, void *gc, int x, int y, unsigned int w, unsigned int h)",
  XkbKeycodeToKeysym: "unsigned long XkbKeycodeToKeysym(Display *dpy, uint8_t kc, int group, int level)",
  XQueryKeymap: "int XQueryKeymap(Display *dpy, _Out_ uint8_t *keys)",
} as const;

const LIBXTST = {
  XTestQueryExtension:
    "int XTestQueryExtension(Display *dpy, _Out_ int *ev, _Out_ int *err, _Out_ int *maj, _Out_ int *min)",
  XTestFakeMotionEvent:
    "int XTestFakeMotionEvent(Display *dpy, int screen, int x, int y, unsigned long delay)",
  XTestFakeButtonEvent:
    "int XTestFakeButtonEvent(Display *dpy, unsigned int button, int press, unsigned long delay)",
  XTestFakeKeyEvent:
    "int XTestFakeKeyEvent(Display *dpy, unsigned int keycode, int press, unsigned long delay)",
  XRecordAllocRange: "XRecordRange *XRecordAllocRange()",
  XRecordCreateContext:
    "unsigned long XRecordCreateContext(Display *dpy, int flags, unsigned long *clients, int nclients, XRecordRange **ranges, int nranges)",
  XRecordEnableContextAsync:
    "int XRecordEnableContextAsync(Display *dpy, unsigned long ctx, XRecordInterceptProc *cb, void *closure)",
  XRecordProcessReplies: "void XRecordProcessReplies(Display *dpy)",
  XRecordDisableContext: "int XRecordDisableContext(Display *dpy, unsigned long ctx)",
  XRecordFreeContext: "int XRecordFreeContext(Display *dpy, unsigned long ctx)",
  XRecordFreeData: "void XRecordFreeData(XRecordInterceptData *data)",
} as const;

const LIBXEXT = {
  XShmQueryExtension: "int XShmQueryExtension(Display *dpy)",
  XShmCreateImage:
    "XImage *XShmCreateImage(Display *dpy, Visual *visual, unsigned int depth, int format, void *data, XShmSegmentInfo *info, unsigned int w, unsigned int h)",
  XShmAttach: "int XShmAttach(Display *dpy, XShmSegmentInfo *info)",
  XShmDetach: "int XShmDetach(Display *dpy, XShmSegmentInfo *info)",
  XShmGetImage:
    "int XShmGetImage(Display *dpy, unsigned long d, XImage *img, int x, int y, unsigned long planes)",
} as const;

const LIBXCB = {
  xcb_connect: "xcb_connection_t *xcb_connect(const char *name, _Out_ int *screen)",
  xcb_disconnect: "void xcb_disconnect(xcb_connection_t *c)",
  xcb_connection_has_error: "int xcb_connection_has_error(xcb_connection_t *c)",
  xcb_flush: "int xcb_flush(xcb_connection_t *c)",
  xcb_get_file_descriptor: "int xcb_get_file_descriptor(xcb_connection_t *c)",
  xcb_intern_atom:
    "xcb_cookie_t xcb_intern_atom(xcb_connection_t *c, uint8_t only_if_exists, uint16_t len, const char *name)",
  xcb_intern_atom_reply:
    "void *xcb_intern_atom_reply(xcb_connection_t *c, xcb_cookie_t cookie, _Out_ void **err)",
  xcb_get_property:
    "xcb_cookie_t xcb_get_property(xcb_connection_t *c, uint8_t del, uint32_t w, uint32_t prop, uint32_t type, uint32_t off, uint32_t len)",
  xcb_get_property_reply:
    "void *xcb_get_property_reply(xcb_connection_t *c, xcb_cookie_t cookie, _Out_ void **err)",
  xcb_get_property_value: "void *xcb_get_property_value(void *reply)",
  xcb_get_property_value_length: "int xcb_get_property_value_length(void *reply)",
  xcb_get_geometry: "xcb_cookie_t xcb_get_geometry(xcb_connection_t *c, uint32_t d)",
  xcb_get_geometry_reply:
    "void *xcb_get_geometry_reply(xcb_connection_t *c, xcb_cookie_t cookie, _Out_ void **err)",
  xcb_translate_coordinates:
    "xcb_cookie_t xcb_translate_coordinates(xcb_connection_t *c, uint32_t src, uint32_t dst, int16_t x, int16_t y)",
  xcb_translate_coordinates_reply:
    "void *xcb_translate_coordinates_reply(xcb_connection_t *c, xcb_cookie_t cookie, _Out_ void **err)",
  xcb_get_window_attributes: "xcb_cookie_t xcb_get_window_attributes(xcb_connection_t *c, uint32_t w)",
  xcb_get_window_attributes_reply:
    "void *xcb_get_window_attributes_reply(xcb_connection_t *c, xcb_cookie_t cookie, _Out_ void **err)",
  xcb_send_event_checked:
    "xcb_cookie_t xcb_send_event_checked(xcb_connection_t *c, uint8_t propagate, uint32_t dest, uint32_t mask, const uint8_t *ev)",
  xcb_map_window_checked: "xcb_cookie_t xcb_map_window_checked(xcb_connection_t *c, uint32_t w)",
  xcb_destroy_window_checked: "xcb_cookie_t xcb_destroy_window_checked(xcb_connection_t *c, uint32_t w)",
  xcb_request_check: "void *xcb_request_check(xcb_connection_t *c, xcb_cookie_t cookie)",
  xcb_query_tree: "xcb_cookie_t xcb_query_tree(xcb_connection_t *c, uint32_t w)",
  xcb_query_tree_reply:
    "void *xcb_query_tree_reply(xcb_connection_t *c, xcb_cookie_t cookie, _Out_ void **err)",
  xcb_query_tree_children: "void *xcb_query_tree_children(void *reply)",
  xcb_query_tree_children_length: "int xcb_query_tree_children_length(void *reply)",
  xcb_get_input_focus: "xcb_cookie_t xcb_get_input_focus(xcb_connection_t *c)",
  xcb_get_input_focus_reply:
    "void *xcb_get_input_focus_reply(xcb_connection_t *c, xcb_cookie_t cookie, _Out_ void **err)",
  xcb_grab_keyboard:
    "xcb_cookie_t xcb_grab_keyboard(xcb_connection_t *c, uint8_t owner_events, uint32_t w, uint32_t time, uint8_t pm, uint8_t km)",
  xcb_grab_keyboard_reply:
    "void *xcb_grab_keyboard_reply(xcb_connection_t *c, xcb_cookie_t cookie, _Out_ void **err)",
  xcb_grab_pointer:
    "xcb_cookie_t xcb_grab_pointer(xcb_connection_t *c, uint8_t owner_events, uint32_t w, uint16_t mask, uint8_t pm, uint8_t km, uint32_t confine, uint32_t cursor, uint32_t time)",
  xcb_grab_pointer_reply:
    "void *xcb_grab_pointer_reply(xcb_connection_t *c, xcb_cookie_t cookie, _Out_ void **err)",
  xcb_ungrab_keyboard: "xcb_cookie_t xcb_ungrab_keyboard(xcb_connection_t *c, uint32_t time)",
  xcb_ungrab_pointer: "xcb_cookie_t xcb_ungrab_pointer(xcb_connection_t *c, uint32_t time)",
  xcb_grab_key_checked:
    "xcb_cookie_t xcb_grab_key_checked(xcb_connection_t *c, uint8_t owner_events, uint32_t w, uint16_t modifiers, uint8_t key, uint8_t pm, uint8_t km)",
  xcb_ungrab_key:
    "xcb_cookie_t xcb_ungrab_key(xcb_connection_t *c, uint8_t key, uint32_t w, uint16_t modifiers)",
  xcb_grab_button_checked:
    "xcb_cookie_t xcb_grab_button_checked(xcb_connection_t *c, uint8_t owner_events, uint32_t w, uint16_t event_mask, uint8_t pm, uint8_t km, uint32_t confine_to, uint32_t cursor, uint8_t button, uint16_t modifiers)",
  xcb_ungrab_button:
    "xcb_cookie_t xcb_ungrab_button(xcb_connection_t *c, uint8_t button, uint32_t w, uint16_t modifiers)",
  xcb_get_setup: "const void *xcb_get_setup(xcb_connection_t *c)",
  xcb_generate_id: "uint32_t xcb_generate_id(xcb_connection_t *c)",
  xcb_get_keyboard_mapping:
    "xcb_cookie_t xcb_get_keyboard_mapping(xcb_connection_t *c, uint8_t first, uint8_t count)",
  xcb_get_keyboard_mapping_reply:
    "void *xcb_get_keyboard_mapping_reply(xcb_connection_t *c, xcb_cookie_t cookie, _Out_ void **err)",
} as const;

const LIBXI = {
  XIQueryVersion: "int XIQueryVersion(Display *dpy, _Inout_ int *major, _Inout_ int *minor)",
  XIQueryDevice: "void *XIQueryDevice(Display *dpy, int deviceid, _Out_ int *n)",
  XIFreeDeviceInfo: "void XIFreeDeviceInfo(void *info)",
  XIGetClientPointer: "int XIGetClientPointer(Display *dpy, unsigned long win, _Out_ int *deviceid)",
  XISelectEvents: "int XISelectEvents(Display *dpy, unsigned long w, void *masks, int n)",
  XIGrabKeycode:
    "int XIGrabKeycode(Display *dpy, int deviceid, int keycode, unsigned long win, int grab_mode, int paired_device_mode, int owner_events, void *mask, int num_modifiers, void *modifiers)",
  XIUngrabKeycode:
    "int XIUngrabKeycode(Display *dpy, int deviceid, int keycode, unsigned long win, int num_modifiers, void *modifiers)",
  XIGrabButton:
    "int XIGrabButton(Display *dpy, int deviceid, int button, unsigned long win, unsigned long cursor, int grab_mode, int paired_device_mode, int owner_events, void *mask, int num_modifiers, void *modifiers)",
  XIUngrabButton:
    "int XIUngrabButton(Display *dpy, int deviceid, int button, unsigned long win, int num_modifiers, void *modifiers)",
} as const;

const LIBXFT = {
  XftFontOpenName: "void *XftFontOpenName(Display *dpy, int screen, const char *name)",
  XftDrawCreate: "void *XftDrawCreate(Display *dpy, unsigned long d, void *visual, unsigned long cmap)",
  XftDrawDestroy: "void XftDrawDestroy(void *draw)",
  XftColorAllocName:
    "int XftColorAllocName(Display *dpy, void *visual, unsigned long cmap, const char *name, void *result)",
  XftDrawStringUtf8:
    "void XftDrawStringUtf8(void *draw, void *color, void *font, int x, int y, const uint8_t *s, int len)",
} as const;

const LIBXRES = {
  XResQueryClientIds:
    "int XResQueryClientIds(Display *dpy, long num_specs, XResClientIdSpec *specs, _Out_ long *num_ids, _Out_ void **ids)",
  XResGetClientPid: "int XResGetClientPid(void *value)",
  XResClientIdsDestroy: "void XResClientIdsDestroy(long num_ids, void *ids)",
  XResQueryClients: "int XResQueryClients(Display *dpy, _Out_ int *n, _Out_ void **clients)",
  XResQueryClientResources:
    "int XResQueryClientResources(Display *dpy, unsigned long xid, _Out_ int *num_types, _Out_ void **types)",
} as const;

const LIBXCB_SHM = {
  xcb_shm_attach_checked:
    "xcb_cookie_t xcb_shm_attach_checked(xcb_connection_t *c, uint32_t shmseg, uint32_t shmid, uint8_t read_only)",
  xcb_shm_detach: "xcb_cookie_t xcb_shm_detach(xcb_connection_t *c, uint32_t shmseg)",
  xcb_shm_get_image:
    "xcb_cookie_t xcb_shm_get_image(xcb_connection_t *c, uint32_t drawable, int16_t x, int16_t y, uint16_t width, uint16_t height, uint32_t plane_mask, uint8_t format, uint32_t shmseg, uint32_t offset)",
  xcb_shm_get_image_reply:
    "void *xcb_shm_get_image_reply(xcb_connection_t *c, xcb_cookie_t cookie, _Out_ void **err)",
} as const;

const LIBXCB_RES = {
  xcb_res_query_client_ids:
    "xcb_cookie_t xcb_res_query_client_ids(xcb_connection_t *c, uint32_t num_specs, const uint32_t *specs)",
  xcb_res_query_client_ids_reply:
    "void *xcb_res_query_client_ids_reply(xcb_connection_t *c, xcb_cookie_t cookie, _Out_ void **err)",
} as const;

const LIBX11_XCB = {
  XGetXCBConnection: "xcb_connection_t *XGetXCBConnection(Display *dpy)",
} as const;

/** The koffi types the declarations name and the structs their callers decode. */
export interface XTypes {
  XImage: TypeObject;
  XShmSegmentInfo: TypeObject;
  XRecordRange: TypeObject;
  XRecordInterceptData: TypeObject;
  XRecordInterceptProc: TypeObject;
  XIDeviceInfo: TypeObject;
  XftFontMetrics: TypeObject;
}

let types: XTypes | null = null;

/** Registers the X types once per thread (koffi type names are per instance). */
export function xTypes(): XTypes {
  if (types) return types;
  koffi.opaque("Display");
  koffi.opaque("Visual");
  koffi.opaque("xcb_connection_t");
  koffi.struct("xcb_cookie_t", { sequence: "uint32" });
  koffi.struct("XResClientIdSpec", { client: "unsigned long", mask: "unsigned int" });
  const r8 = koffi.struct("XRecordRange8", { first: "uint8", last: "uint8" });
  const r16 = koffi.struct("XRecordRange16", { first: "uint16", last: "uint16" });
  const rExt = koffi.struct("XRecordExtRange", { ext_major: r8, ext_minor: r16 });
  const XRecordInterceptData = koffi.struct("XRecordInterceptData", {
    id_base: "unsigned long",
    server_time: "unsigned long",
    client_seq: "unsigned long",
    category: "int",
    client_swapped: "int",
    data: "uint8_t *",
    data_len: "unsigned long",
  });
  types = {
    XImage: koffi.struct("XImage", {
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
    }),
    XShmSegmentInfo: koffi.struct("XShmSegmentInfo", {
      shmseg: "unsigned long",
      shmid: "int",
      shmaddr: "void *",
      readOnly: "int",
    }),
    XRecordRange: koffi.struct("XRecordRange", {
      core_requests: r8,
      core_replies: r8,
      ext_requests: rExt,
      ext_replies: rExt,
      delivered_events: r8,
      device_events: r8,
      errors: r8,
      client_started: "int",
      client_died: "int",
    }),
    XRecordInterceptData,
    XRecordInterceptProc: koffi.proto("void XRecordInterceptProc(void *closure, XRecordInterceptData *data)"),
    XIDeviceInfo: koffi.struct("XIDeviceInfo", {
      deviceid: "int",
      name: "const char *",
      use: "int",
      attachment: "int",
      enabled: "int",
      num_classes: "int",
      classes: "void *",
    }),
    XftFontMetrics: koffi.struct("XftFontMetrics", {
      ascent: "int",
      descent: "int",
      height: "int",
      max_advance_width: "int",
    }),
  };
  return types;
}

type Bound<T> = { readonly [K in keyof T]: NativeFn };
const bound = new Map<string, Readonly<Record<string, NativeFn>>>();

/** A library's table, bound once per thread. Throws platform_unavailable when it is missing. */
function bind<T extends Record<string, string>>(soname: string, table: T): Bound<T> {
  const known = bound.get(soname);
  if (known) return known as Bound<T>;
  xTypes();
  const lib = xLibrary(soname);
  const fns: Record<string, NativeFn> = {};
  for (const [name, decl] of Object.entries(table)) fns[name] = lib.func(decl) as NativeFn;
  bound.set(soname, fns);
  return fns as Bound<T>;
}

export const libX11 = () => bind("libX11.so.6", LIBX11);
export const libXtst = () => bind("libXtst.so.6", LIBXTST);
export const libXext = () => bind("libXext.so.6", LIBXEXT);
export const libXcb = () => bind("libxcb.so.1", LIBXCB);
export const libXi = () => bind("libXi.so.6", LIBXI);
export const libXRes = () => bind("libXRes.so.1", LIBXRES);
export const libXft = () => bind("libXft.so.2", LIBXFT);
const libX11Xcb = () => bind("libX11-xcb.so.1", LIBX11_XCB);
const libXcbShm = () => bind("libxcb-shm.so.0", LIBXCB_SHM);
const libXcbRes = () => bind("libxcb-res.so.0", LIBXCB_RES);

/** An optional library's bindings, or null when it is not installed. */
export function optional<T>(load: () => T): T | null {
  try {
    return load();
  } catch {
    return null;
  }
}

/** The address of XConnectionNumber: a native no-op usable as the Xlib error handler. */
export function noopErrorHandler(): Ptr {
  const noop = xLibrary("libX11.so.6").symbol("XConnectionNumber") as unknown;
  if (typeof noop !== "bigint") throw uiError("platform_unavailable", "An X11 symbol is missing.");
  return noop;
}

function cLibrary(): ReturnType<typeof libc> {
  try {
    return libc();
  } catch {
    throw uiError("platform_unavailable", "The C library could not be loaded.");
  }
}

let cached: X11Native | null = null;

/** The backend's and the guardian's view, once per thread. Throws platform_unavailable when a library is missing. */
export function x11Native(): X11Native {
  if (cached) return cached;
  const t = xTypes();
  const tst = libXtst();
  const c = cLibrary();
  const xi = optional(libXi);
  const xres = optional(libXRes);
  cached = {
    ...libX11(),
    ...tst,
    ...libXext(),
    ...libXcb(),
    free: c.free,
    sysconf: c.sysconf,
    shmget: c.shmget,
    shmat: c.shmat,
    shmdt: c.shmdt,
    shmctl: c.shmctl,
    xrecord: {
      XRecordAllocRange: tst.XRecordAllocRange,
      XRecordCreateContext: tst.XRecordCreateContext,
      XRecordEnableContextAsync: tst.XRecordEnableContextAsync,
      XRecordProcessReplies: tst.XRecordProcessReplies,
      XRecordDisableContext: tst.XRecordDisableContext,
      XRecordFreeContext: tst.XRecordFreeContext,
      XRecordFreeData: tst.XRecordFreeData,
      Range: t.XRecordRange,
      InterceptData: t.XRecordInterceptData,
      InterceptProc: t.XRecordInterceptProc,
    },
    xi: xi && {
      XIQueryVersion: xi.XIQueryVersion,
      XIQueryDevice: xi.XIQueryDevice,
      XIFreeDeviceInfo: xi.XIFreeDeviceInfo,
      XIGetClientPointer: xi.XIGetClientPointer,
      XIGrabKeycode: xi.XIGrabKeycode,
      XIUngrabKeycode: xi.XIUngrabKeycode,
      XIGrabButton: xi.XIGrabButton,
      XIUngrabButton: xi.XIUngrabButton,
      DeviceInfo: t.XIDeviceInfo,
    },
    xres: xres && {
      XResQueryClientIds: xres.XResQueryClientIds,
      XResGetClientPid: xres.XResGetClientPid,
      XResClientIdsDestroy: xres.XResClientIdsDestroy,
      XResQueryClients: xres.XResQueryClients,
      XResQueryClientResources: xres.XResQueryClientResources,
    },
    xcbShm: optional(libXcbShm),
    xcbRes: optional(libXcbRes),
    XGetXCBConnection: optional(libX11Xcb)?.XGetXCBConnection ?? null,
    noopErrorHandler: noopErrorHandler(),
    XImage: t.XImage,
    XShmSegmentInfo: t.XShmSegmentInfo,
  } as unknown as X11Native;
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

/** The keyboard read-back bindings (from the same tables as x11Native). */
export function xKeyboardState(): XKeyboardState {
  const xcb = libXcb();
  return {
    xcb_get_keyboard_mapping: xcb.xcb_get_keyboard_mapping,
    xcb_get_keyboard_mapping_reply: xcb.xcb_get_keyboard_mapping_reply,
    XQueryKeymap: libX11().XQueryKeymap,
  } as unknown as XKeyboardState;
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
