import koffi, { type LibraryHandle, type TypeObject } from "koffi";
import { xLibrary } from "../../../os/linux/xlib.js";

/**
 * koffi bindings for our own trusted dialog window (src/platforms/x11/dialog/window.ts): Xlib to
 * create, draw and prove its window tree, X-Resource (libXRes, optional) for window owners, XInput2 (libXi) to learn which device every input event came
 * from, Xft for Unicode text. Loaded only in the dialog's own child process, never in the server.
 * Libraries by soname (no -dev packages); libXi and libXft come with GTK on every desktop.
 */

export type Ptr = bigint;
export type Xid = bigint | number;

type Fn = (...args: unknown[]) => unknown;

export interface DialogNative {
  XOpenDisplay(name: string | null): Ptr | null;
  XCloseDisplay(dpy: Ptr): number;
  XSetErrorHandler(handler: Ptr | null): Ptr | null;
  XDefaultScreen(dpy: Ptr): number;
  XRootWindow(dpy: Ptr, screen: number): Xid;
  XDisplayWidth(dpy: Ptr, screen: number): number;
  XDisplayHeight(dpy: Ptr, screen: number): number;
  XDefaultVisual(dpy: Ptr, screen: number): Ptr;
  XDefaultColormap(dpy: Ptr, screen: number): Xid;
  XCreateSimpleWindow(
    dpy: Ptr,
    parent: Xid,
    x: number,
    y: number,
    w: number,
    h: number,
    border: number,
    borderPixel: number,
    background: number,
  ): Xid;
  XDestroyWindow(dpy: Ptr, w: Xid): number;
  XSelectInput(dpy: Ptr, w: Xid, mask: number): number;
  XStoreName(dpy: Ptr, w: Xid, name: string): number;
  XInternAtom(dpy: Ptr, name: string, onlyIfExists: number): Xid;
  XChangeProperty(
    dpy: Ptr,
    w: Xid,
    prop: Xid,
    type: Xid,
    format: number,
    mode: number,
    data: BigUint64Array | Buffer,
    n: number,
  ): number;
  XSetWMProtocols(dpy: Ptr, w: Xid, protocols: BigUint64Array, n: number): number;
  XMapRaised(dpy: Ptr, w: Xid): number;
  XRaiseWindow(dpy: Ptr, w: Xid): number;
  XFlush(dpy: Ptr): number;
  XSync(dpy: Ptr, discard: number): number;
  XPending(dpy: Ptr): number;
  XNextEvent(dpy: Ptr, ev: Buffer): number;
  XGetEventData(dpy: Ptr, cookie: Buffer): number;
  XFreeEventData(dpy: Ptr, cookie: Buffer): void;
  XQueryExtension(dpy: Ptr, name: string, op: number[], ev: number[], err: number[]): number;
  XQueryTree(dpy: Ptr, w: Xid, root: Xid[], parent: Xid[], children: Array<Ptr | null>, n: number[]): number;
  XGetWindowAttributes(dpy: Ptr, w: Xid, attrs: Buffer): number;
  XQueryPointer(
    dpy: Ptr,
    w: Xid,
    root: Xid[],
    child: Xid[],
    rootX: number[],
    rootY: number[],
    winX: number[],
    winY: number[],
    mask: number[],
  ): number;
  XGetWindowProperty(
    dpy: Ptr,
    w: Xid,
    prop: Xid,
    offset: number,
    length: number,
    del: number,
    reqType: Xid,
    actualType: Xid[],
    actualFormat: number[],
    nItems: number[],
    bytesAfter: number[],
    data: Array<Ptr | null>,
  ): number;
  /** X-Resource (libXRes): every client's resource base and mask; null when libXRes is absent. */
  XResQueryClients: ((dpy: Ptr, n: number[], clients: Array<Ptr | null>) => number) | null;
  XFree(p: Ptr): number;
  XCreateGC(dpy: Ptr, d: Xid, mask: number, values: Ptr | null): Ptr;
  XFreeGC(dpy: Ptr, gc: Ptr): number;
  XSetForeground(dpy: Ptr, gc: Ptr, pixel: number): number;
  XFillRectangle(dpy: Ptr, d: Xid, gc: Ptr, x: number, y: number, w: number, h: number): number;
  XDrawRectangle(dpy: Ptr, d: Xid, gc: Ptr, x: number, y: number, w: number, h: number): number;
  XkbKeycodeToKeysym(dpy: Ptr, kc: number, group: number, level: number): Xid;
  XIQueryVersion(dpy: Ptr, major: number[], minor: number[]): number;
  XISelectEvents(dpy: Ptr, w: Xid, masks: Buffer, n: number): number;
  XIQueryDevice(dpy: Ptr, deviceid: number, n: number[]): Ptr | null;
  XIFreeDeviceInfo(info: Ptr): void;
  XftFontOpenName(dpy: Ptr, screen: number, name: string): Ptr | null;
  XftDrawCreate(dpy: Ptr, d: Xid, visual: Ptr, cmap: Xid): Ptr | null;
  XftDrawDestroy(draw: Ptr): void;
  XftColorAllocName(dpy: Ptr, visual: Ptr, cmap: Xid, name: string, result: Buffer): number;
  XftDrawStringUtf8(draw: Ptr, color: Buffer, font: Ptr, x: number, y: number, s: Buffer, len: number): void;
  /** A native no-op usable as the Xlib error handler (XConnectionNumber: reads, returns an int). */
  noopErrorHandler: Ptr;
  XIDeviceInfo: TypeObject;
  XftFontMetrics: TypeObject;
}

let cached: DialogNative | null = null;

export function dialogNative(): DialogNative {
  if (cached) return cached;
  const x11: LibraryHandle = xLibrary("libX11.so.6");
  const xi: LibraryHandle = xLibrary("libXi.so.6");
  const xft: LibraryHandle = xLibrary("libXft.so.2");
  const XIDeviceInfo = koffi.struct("DialogXIDeviceInfo", {
    deviceid: "int",
    name: "const char *",
    use: "int",
    attachment: "int",
    enabled: "int",
    num_classes: "int",
    classes: "void *",
  });
  const XftFontMetrics = koffi.struct("DialogXftFont", {
    ascent: "int",
    descent: "int",
    height: "int",
    max_advance_width: "int",
  });
  const f = (lib: LibraryHandle, decl: string): Fn => lib.func(decl) as Fn;
  const n = {
    XOpenDisplay: f(x11, "void *XOpenDisplay(const char *name)"),
    XCloseDisplay: f(x11, "int XCloseDisplay(void *dpy)"),
    XSetErrorHandler: f(x11, "void *XSetErrorHandler(void *handler)"),
    XDefaultScreen: f(x11, "int XDefaultScreen(void *dpy)"),
    XRootWindow: f(x11, "unsigned long XRootWindow(void *dpy, int screen)"),
    XDisplayWidth: f(x11, "int XDisplayWidth(void *dpy, int screen)"),
    XDisplayHeight: f(x11, "int XDisplayHeight(void *dpy, int screen)"),
    XDefaultVisual: f(x11, "void *XDefaultVisual(void *dpy, int screen)"),
    XDefaultColormap: f(x11, "unsigned long XDefaultColormap(void *dpy, int screen)"),
    XCreateSimpleWindow: f(
      x11,
      "unsigned long XCreateSimpleWindow(void *dpy, unsigned long parent, int x, int y, unsigned int w, unsigned int h, unsigned int border, unsigned long borderPixel, unsigned long background)",
    ),
    XDestroyWindow: f(x11, "int XDestroyWindow(void *dpy, unsigned long w)"),
    XSelectInput: f(x11, "int XSelectInput(void *dpy, unsigned long w, long mask)"),
    XStoreName: f(x11, "int XStoreName(void *dpy, unsigned long w, const char *name)"),
    XInternAtom: f(x11, "unsigned long XInternAtom(void *dpy, const char *name, int onlyIfExists)"),
    XChangeProperty: f(
      x11,
      "int XChangeProperty(void *dpy, unsigned long w, unsigned long prop, unsigned long type, int format, int mode, const void *data, int n)",
    ),
    XSetWMProtocols: f(
      x11,
      "int XSetWMProtocols(void *dpy, unsigned long w, unsigned long *protocols, int n)",
    ),
    XMapRaised: f(x11, "int XMapRaised(void *dpy, unsigned long w)"),
    XRaiseWindow: f(x11, "int XRaiseWindow(void *dpy, unsigned long w)"),
    XFlush: f(x11, "int XFlush(void *dpy)"),
    XSync: f(x11, "int XSync(void *dpy, int discard)"),
    XPending: f(x11, "int XPending(void *dpy)"),
    XNextEvent: f(x11, "int XNextEvent(void *dpy, void *ev)"),
    XGetEventData: f(x11, "int XGetEventData(void *dpy, void *cookie)"),
    XFreeEventData: f(x11, "void XFreeEventData(void *dpy, void *cookie)"),
    XQueryExtension: f(
      x11,
      "int XQueryExtension(void *dpy, const char *name, _Out_ int *op, _Out_ int *ev, _Out_ int *err)",
    ),
    XQueryTree: f(
      x11,
      "int XQueryTree(void *dpy, unsigned long w, _Out_ unsigned long *root, _Out_ unsigned long *parent, _Out_ void **children, _Out_ unsigned int *n)",
    ),
    XGetWindowAttributes: f(x11, "int XGetWindowAttributes(void *dpy, unsigned long w, void *attrs)"),
    XQueryPointer: f(
      x11,
      "int XQueryPointer(void *dpy, unsigned long w, _Out_ unsigned long *root, _Out_ unsigned long *child, _Out_ int *rx, _Out_ int *ry, _Out_ int *wx, _Out_ int *wy, _Out_ unsigned int *mask)",
    ),
    XGetWindowProperty: f(
      x11,
      "int XGetWindowProperty(void *dpy, unsigned long w, unsigned long prop, long offset, long length, int del, unsigned long reqType, _Out_ unsigned long *actualType, _Out_ int *actualFormat, _Out_ unsigned long *nItems, _Out_ unsigned long *bytesAfter, _Out_ void **data)",
    ),
    XFree: f(x11, "int XFree(void *p)"),
    XCreateGC: f(x11, "void *XCreateGC(void *dpy, unsigned long d, unsigned long mask, void *values)"),
    XFreeGC: f(x11, "int XFreeGC(void *dpy, void *gc)"),
    XSetForeground: f(x11, "int XSetForeground(void *dpy, void *gc, unsigned long pixel)"),
    XFillRectangle: f(
      x11,
      "int XFillRectangle(void *dpy, unsigned long d, void *gc, int x, int y, unsigned int w, unsigned int h)",
    ),
    XDrawRectangle: f(
      x11,
      "int XDrawRectangle(void *dpy, unsigned long d, void *gc, int x, int y, unsigned int w, unsigned int h)",
    ),
    XkbKeycodeToKeysym: f(
      x11,
      "unsigned long XkbKeycodeToKeysym(void *dpy, uint8_t kc, int group, int level)",
    ),
    XIQueryVersion: f(xi, "int XIQueryVersion(void *dpy, _Inout_ int *major, _Inout_ int *minor)"),
    XISelectEvents: f(xi, "int XISelectEvents(void *dpy, unsigned long w, void *masks, int n)"),
    XIQueryDevice: f(xi, "void *XIQueryDevice(void *dpy, int deviceid, _Out_ int *n)"),
    XIFreeDeviceInfo: f(xi, "void XIFreeDeviceInfo(void *info)"),
    XftFontOpenName: f(xft, "void *XftFontOpenName(void *dpy, int screen, const char *name)"),
    XftDrawCreate: f(
      xft,
      "void *XftDrawCreate(void *dpy, unsigned long d, void *visual, unsigned long cmap)",
    ),
    XftDrawDestroy: f(xft, "void XftDrawDestroy(void *draw)"),
    XftColorAllocName: f(
      xft,
      "int XftColorAllocName(void *dpy, void *visual, unsigned long cmap, const char *name, void *result)",
    ),
    XftDrawStringUtf8: f(
      xft,
      "void XftDrawStringUtf8(void *draw, void *color, void *font, int x, int y, const uint8_t *s, int len)",
    ),
  };
  let XResQueryClients: DialogNative["XResQueryClients"] = null;
  try {
    const xres: LibraryHandle = xLibrary("libXRes.so.1");
    XResQueryClients = f(
      xres,
      "int XResQueryClients(void *dpy, _Out_ int *n, _Out_ void **clients)",
    ) as DialogNative["XResQueryClients"];
  } catch {
    // Without X-Resource the owners of the window manager's frame cannot be proven (docs/x11.md).
  }
  const noop = x11.symbol("XConnectionNumber") as unknown;
  if (typeof noop !== "bigint") throw new Error("XConnectionNumber missing");
  cached = {
    ...(n as unknown as DialogNative),
    XResQueryClients,
    noopErrorHandler: noop,
    XIDeviceInfo,
    XftFontMetrics,
  };
  return cached;
}
