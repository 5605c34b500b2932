import koffi from "koffi";
import { uiError } from "../../shared/errors.js";
import { intersect, type Rect, rectHeight, rectWidth } from "../../shared/geometry.js";
import type { CapturePort, RawImage } from "../../shared/platform.js";
import type { Ptr, XImageHeader } from "./native.js";
import type { XConnection } from "./xconn.js";

/**
 * Root-window capture: XShmGetImage when MIT-SHM works, XGetImage otherwise. The requested rect
 * is clipped to the screen; what lies outside stays black. Pixels are copied out of native
 * memory before the image is destroyed; the shm segment is detached and removed every time.
 */

const Z_PIXMAP = 2;
const ALL_PLANES = 0xffffffffffffffffn;
const IPC_PRIVATE = 0;
const IPC_CREAT = 0o1000;
const IPC_RMID = 0;
const MAX_PIXELS = 16_777_216 * 4;

export class X11Capture implements CapturePort {
  private readonly x: XConnection;
  private shmUsable: boolean;
  lastMethod: "xshm" | "xgetimage" | "none" = "none";

  constructor(x: XConnection) {
    this.x = x;
    this.shmUsable = process.env.UIINSPECT_X11_NO_SHM !== "1" && x.n.XShmQueryExtension(x.dpy) !== 0;
  }

  async captureScreen(rect: Rect): Promise<RawImage> {
    const width = rectWidth(rect);
    const height = rectHeight(rect);
    if (width <= 0 || height <= 0 || width * height > MAX_PIXELS) {
      throw uiError("invalid_argument", "The capture rectangle is invalid.");
    }
    const out = new Uint8Array(width * height * 4);
    // Opaque black outside the screen.
    for (let i = 3; i < out.length; i += 4) out[i] = 255;
    const g = this.x.getGeometry(this.x.root).resolve();
    const clip = intersect(rect, [0, 0, g.width, g.height]);
    if (!clip) {
      this.lastMethod = "none";
      return { width, height, channels: 4, data: out };
    }
    const cw = rectWidth(clip);
    const ch = rectHeight(clip);
    let done = false;
    if (this.shmUsable) {
      done = this.grabShm(clip, cw, ch, out, width, clip[0] - rect[0], clip[1] - rect[1]);
      if (!done) this.shmUsable = false;
    }
    if (!done) this.grabPlain(clip, cw, ch, out, width, clip[0] - rect[0], clip[1] - rect[1]);
    this.x.checkAlive();
    return { width, height, channels: 4, data: out };
  }

  private header(img: Ptr): XImageHeader {
    return koffi.decode(img, this.x.n.XImage) as XImageHeader;
  }

  /** BGRX (32 bpp, little-endian, 8-8-8 masks) → RGBA into `out` at (dx, dy). */
  private convert(
    h: XImageHeader,
    cw: number,
    ch: number,
    out: Uint8Array,
    outW: number,
    dx: number,
    dy: number,
  ) {
    if (h.bits_per_pixel !== 32 || h.data === null || Number(h.red_mask) !== 0xff0000 || h.byte_order !== 0) {
      throw uiError("platform_unavailable", "The X visual format is not supported.");
    }
    const stride = h.bytes_per_line;
    // One copy out of native memory; the view itself is not a copy.
    const src = new Uint8Array(new Uint8Array(koffi.view(h.data, stride * ch)));
    for (let y = 0; y < ch; y++) {
      let s = y * stride;
      let d = ((dy + y) * outW + dx) * 4;
      for (let x = 0; x < cw; x++) {
        out[d] = src[s + 2]!;
        out[d + 1] = src[s + 1]!;
        out[d + 2] = src[s]!;
        out[d + 3] = 255;
        s += 4;
        d += 4;
      }
    }
  }

  private grabPlain(
    clip: Rect,
    cw: number,
    ch: number,
    out: Uint8Array,
    outW: number,
    dx: number,
    dy: number,
  ) {
    const n = this.x.n;
    const img = n.XGetImage(this.x.dpy, this.x.root, clip[0], clip[1], cw, ch, ALL_PLANES, Z_PIXMAP);
    if (img === null || img === 0n) throw uiError("platform_unavailable", "The screen could not be read.");
    try {
      this.convert(this.header(img), cw, ch, out, outW, dx, dy);
      this.lastMethod = "xgetimage";
    } finally {
      n.XDestroyImage(img);
    }
  }

  /** Returns false when MIT-SHM does not work here (e.g. another IPC namespace). */
  private grabShm(
    clip: Rect,
    cw: number,
    ch: number,
    out: Uint8Array,
    outW: number,
    dx: number,
    dy: number,
  ): boolean {
    const x = this.x;
    const n = x.n;
    const info = koffi.alloc(n.XShmSegmentInfo, 1) as Ptr;
    let img: Ptr | null = null;
    let shmid = -1;
    let addr: Ptr | null = null;
    let attached = false;
    try {
      koffi.encode(info, n.XShmSegmentInfo, { shmseg: 0, shmid: -1, shmaddr: null, readOnly: 0 });
      const visual = n.XDefaultVisual(x.dpy, x.screen);
      const depth = n.XDefaultDepth(x.dpy, x.screen);
      img = n.XShmCreateImage(x.dpy, visual, depth, Z_PIXMAP, null, info, cw, ch);
      if (img === null || img === 0n) return false;
      const h = this.header(img);
      shmid = n.shmget(IPC_PRIVATE, h.bytes_per_line * h.height, IPC_CREAT | 0o600);
      if (shmid < 0) return false;
      addr = n.shmat(shmid, null, 0);
      if (addr === BigInt.asUintN(64, -1n) || addr === 0n) {
        addr = null;
        return false;
      }
      koffi.encode(info, koffi.offsetof(n.XShmSegmentInfo, "shmid"), "int", shmid);
      koffi.encode(info, koffi.offsetof(n.XShmSegmentInfo, "shmaddr"), "void *", addr);
      koffi.encode(img, koffi.offsetof(n.XImage, "data"), "void *", addr);
      if (n.XShmAttach(x.dpy, info) === 0) return false;
      attached = true;
      n.XSync(x.dpy, 0);
      if (n.XShmGetImage(x.dpy, x.root, img, clip[0], clip[1], ALL_PLANES) === 0) return false;
      this.convert(this.header(img), cw, ch, out, outW, dx, dy);
      this.lastMethod = "xshm";
      return true;
    } finally {
      if (attached) {
        n.XShmDetach(x.dpy, info);
        n.XSync(x.dpy, 0);
      }
      if (img !== null && img !== 0n) {
        // The data pointer belongs to the segment: clear it so XDestroyImage does not free() it.
        koffi.encode(img, koffi.offsetof(n.XImage, "data"), "void *", null);
        n.XDestroyImage(img);
      }
      if (addr !== null) n.shmdt(addr);
      if (shmid >= 0) n.shmctl(shmid, IPC_RMID, null);
      koffi.free(info);
    }
  }
}
