import type { TypeObject } from "koffi";
import {
  libX11,
  libXft,
  libXi,
  libXRes,
  noopErrorHandler,
  optional,
  xTypes,
} from "../../../os/linux/xlib.js";

/**
 * What our own trusted dialog window (src/platforms/x11/dialog/window.ts) calls, typed: Xlib to
 * create, draw and prove its window tree, X-Resource (libXRes, optional) for window owners,
 * XInput2 (libXi) to learn which device every input event came from, Xft for Unicode text. The
 * functions are the os layer's one binding of each library (src/os/linux/xlib.ts); they are
 * bound only in the dialog's own child process, never in the server. libXi and libXft come with
 * GTK on every desktop.
 */

export type Ptr = bigint;
export type Xid = bigint | number;

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

/** The dialog's view of the os layer's bindings (libX11, libXi, libXft; libXRes when installed). */
export function dialogNative(): DialogNative {
  if (cached) return cached;
  const t = xTypes();
  const xres = optional(libXRes);
  cached = {
    ...libX11(),
    ...libXi(),
    ...libXft(),
    // Without X-Resource the owners of the window manager's frame cannot be proven (docs/x11.md).
    XResQueryClients: xres?.XResQueryClients ?? null,
    noopErrorHandler: noopErrorHandler(),
    XIDeviceInfo: t.XIDeviceInfo,
    XftFontMetrics: t.XftFontMetrics,
  } as unknown as DialogNative;
  return cached;
}
