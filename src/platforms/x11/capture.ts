import koffi from "koffi";
import type { Ptr, XImageHeader } from "../../os/linux/xlib.js";
import { bgrxToRgb, bgrxToRgbRows } from "../../shared/bgrx.js";
import { uiError } from "../../shared/errors.js";
import { intersect, type Rect, rectHeight, rectWidth, sameRect } from "../../shared/geometry.js";
import {
  type CapturePort,
  type FrameTarget,
  frameFits,
  type PendingRead,
  type RawImage,
  type SharedSegment,
} from "../../shared/platform.js";
import { SETTINGS } from "../../shared/settings.js";
import { readSetting } from "../../shared/settingsReader.js";
import type { XConnection } from "./xconn.js";

/**
 * Root-window capture: an MIT-SHM read when MIT-SHM works, XGetImage otherwise, converted once
 * from the server's BGRX to RGB, into the caller's frame when it passes one (the capture
 * worker's PNG rows) or else to packed RGB (the encoder's input as it is). The requested rect
 * is clipped to the screen (its size asked only when an XShm read of the whole rect failed, or
 * without MIT-SHM); what lies outside stays black (the worker's check refuses such a
 * rect with out_of_bounds before it gets here; the clip keeps the port total). Pixels are
 * copied out of native memory before the image is destroyed or the segment read again; the shm
 * segment is marked for removal as soon as it is attached, kept while captures keep the same
 * size, and detached on a size change and at dispose.
 *
 * With libxcb-shm the segment is attached on, and read through, our own xcb connection (the one
 * the checks' requests go on), not Xlib's: the server handles one connection's requests in
 * order, so `afterRead`'s requests, queued right behind the read and sent in the same flush,
 * are answered from the state after the read, and the read costs no round trip of its own.
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
  /** The last MIT-SHM segment, reused while captures keep the same size. */
  private shm: ShmSegment | null = null;
  lastMethod: "xshm" | "xgetimage" | "none" = "none";
  /** Told the attached segment whenever it changes (Platform.onSharedSegments). */
  private readonly onSegments: ((segments: SharedSegment[]) => void) | null;

  constructor(x: XConnection, onSegments?: (segments: SharedSegment[]) => void) {
    this.x = x;
    this.onSegments = onSegments ?? null;
    // UIINSPECT_X11_NO_SHM=1 forces XGetImage; 0, unset or anything else keeps MIT-SHM when present.
    const noShm = readSetting(process.env, SETTINGS.x11NoShm) === "1";
    this.shmUsable = !noShm && x.n.XShmQueryExtension(x.dpy) !== 0;
  }

  /**
   * `afterRead` (CapturePort.captureScreen): called once each read is ordered before anything
   * it sends (queued behind an xcb read, or after an Xlib read returned), so the last call
   * follows the read the frame is from.
   */
  async captureScreen(rect: Rect, into?: FrameTarget, afterRead?: () => void): Promise<RawImage> {
    this.settleOutstanding();
    const width = rectWidth(rect);
    const height = rectHeight(rect);
    if (width <= 0 || height <= 0 || width * height > MAX_PIXELS) {
      throw uiError("invalid_argument", "The capture rectangle is invalid.");
    }
    const fits = into && frameFits(into, width, height) ? into : null;
    if (this.shmUsable) {
      // The whole rect first, with no root size asked before it: the X server reads a window
      // only where the rect lies wholly inside it (BadMatch otherwise), so a read that succeeds
      // proves the rect was on the screen as the server had it for this very request. A rect
      // off the screen in part (or a failing MIT-SHM) fails that read and takes the path below.
      const whole = fits ?? packedFrame(width, height, true);
      if (this.grabShm(rect, whole, 0, 0, false, afterRead)) {
        this.x.checkAlive();
        return imageOf(whole, width, height);
      }
    }
    // The root size, asked now: RandR may have resized the screen.
    const g = this.x.getGeometry(this.x.root).resolve();
    const clip = intersect(rect, [0, 0, g.width, g.height]);
    const whole = clip !== null && sameRect(clip, rect);
    const out = fits ?? packedFrame(width, height, whole);
    if (!whole && out === fits) for (let y = 0; y < height; y++) blackRow(out, y);
    const image = imageOf(out, width, height);
    if (!clip) {
      this.lastMethod = "none";
      afterRead?.();
      return image;
    }
    const dx = clip[0] - rect[0];
    const dy = clip[1] - rect[1];
    let done = false;
    if (this.shmUsable) {
      done = this.grabShm(clip, out, dx, dy, true, afterRead);
      if (!done) this.shmUsable = false;
    }
    if (!done) {
      this.grabPlain(clip, out, dx, dy);
      afterRead?.();
    }
    this.x.checkAlive();
    return image;
  }

  /** A read asked ahead (askRead) whose pixels are not yet copied out of the segment. */
  private outstanding: (() => void) | null = null;

  /** Copies an outstanding read out of the segment before anything reads into it again. */
  private settleOutstanding(): void {
    this.outstanding?.();
  }

  /**
   * CapturePort.askRead: an xcb MIT-SHM read into the segment already attached for this size,
   * queued and not flushed (a new segment would cost a round trip: null then, as without
   * libxcb-shm). The pixels are copied into `into` before any other read can use the segment.
   */
  askRead(rect: Rect, into: FrameTarget, afterRead?: () => void): PendingRead | null {
    this.settleOutstanding();
    const width = rectWidth(rect);
    const height = rectHeight(rect);
    const seg = this.shm;
    if (!this.shmUsable || width <= 0 || height <= 0 || !frameFits(into, width, height)) return null;
    if (!seg || seg.width !== width || seg.height !== height || seg.xcbSeg === null) return null;
    const read = this.x.shmGetImage({ x: rect[0], y: rect[1], width, height }, seg.xcbSeg);
    let ok: boolean | null = null;
    const settle = () => {
      if (ok !== null) return;
      if (this.outstanding === settle) this.outstanding = null;
      ok = false;
      ok = read.resolve() && seg.pixels !== null && this.shm === seg;
      if (ok && seg.pixels) this.convert(seg.pixels, width, height, into, 0, 0);
    };
    this.outstanding = settle;
    try {
      afterRead?.();
    } catch (e) {
      settle();
      into.data.fill(0);
      throw e;
    }
    return {
      take: () => {
        settle();
        if (!ok) {
          into.data.fill(0);
          return null;
        }
        this.lastMethod = "xshm";
        this.x.checkAlive();
        return imageOf(into, width, height);
      },
      drop: () => {
        settle();
        into.data.fill(0);
      },
    };
  }

  private header(img: Ptr): XImageHeader {
    return koffi.decode(img, this.x.n.XImage) as XImageHeader;
  }

  /**
   * The image's pixels as 32-bit words (a view of native memory, not a copy) and its row
   * length in words; only the one visual format this converts is accepted.
   */
  private pixels(h: XImageHeader, rows: number): { words: Uint32Array; wordsPerRow: number } {
    if (h.bits_per_pixel !== 32 || h.data === null || Number(h.red_mask) !== 0xff0000 || h.byte_order !== 0) {
      throw uiError("platform_unavailable", "The X visual format is not supported.");
    }
    const stride = h.bytes_per_line;
    if (stride % 4 !== 0) throw uiError("platform_unavailable", "Unaligned image.");
    return { words: new Uint32Array(koffi.view(h.data, stride * rows)), wordsPerRow: stride / 4 };
  }

  /**
   * BGRX (32 bpp, little-endian, 8-8-8 masks) → RGB into `out` at (dx, dy). Every pixel is
   * copied into `out` (JS memory) before the caller destroys the image or reuses the segment.
   */
  private convert(
    src: { words: Uint32Array; wordsPerRow: number },
    cw: number,
    ch: number,
    out: FrameTarget,
    dx: number,
    dy: number,
  ) {
    const { words, wordsPerRow } = src;
    if (dx === 0 && dy === 0 && cw === out.width && wordsPerRow === cw && out.stride === cw * 3) {
      // The whole frame, packed both sides: one run of cw × ch pixels.
      bgrxToRgb(words, cw * ch, out.data);
      return;
    }
    bgrxToRgbRows(words, wordsPerRow, cw, ch, out.data, out.stride, dy * out.stride + dx * 3);
  }

  private grabPlain(clip: Rect, out: FrameTarget, dx: number, dy: number) {
    const n = this.x.n;
    const cw = rectWidth(clip);
    const ch = rectHeight(clip);
    const img = n.XGetImage(this.x.dpy, this.x.root, clip[0], clip[1], cw, ch, ALL_PLANES, Z_PIXMAP);
    if (img === null || img === 0n) throw uiError("platform_unavailable", "The screen could not be read.");
    try {
      this.convert(this.pixels(this.header(img), ch), cw, ch, out, dx, dy);
      this.lastMethod = "xgetimage";
    } finally {
      n.XDestroyImage(img);
    }
  }

  /** Creates (or reuses, for the same size) the attached shm image; null when MIT-SHM fails. */
  private segment(cw: number, ch: number): ShmSegment | null {
    if (this.shm && this.shm.width === cw && this.shm.height === ch) return this.shm;
    this.releaseShm();
    const x = this.x;
    const n = x.n;
    const seg: ShmSegment = {
      info: koffi.alloc(n.XShmSegmentInfo, 1) as Ptr,
      img: null,
      shmid: -1,
      addr: null,
      attached: false,
      xcbSeg: null,
      width: cw,
      height: ch,
      pixels: null,
    };
    try {
      koffi.encode(seg.info, n.XShmSegmentInfo, { shmseg: 0, shmid: -1, shmaddr: null, readOnly: 0 });
      const visual = n.XDefaultVisual(x.dpy, x.screen);
      const depth = n.XDefaultDepth(x.dpy, x.screen);
      seg.img = n.XShmCreateImage(x.dpy, visual, depth, Z_PIXMAP, null, seg.info, cw, ch);
      if (seg.img === null || seg.img === 0n) throw new ShmUnavailable();
      const h = this.header(seg.img);
      seg.shmid = n.shmget(IPC_PRIVATE, h.bytes_per_line * h.height, IPC_CREAT | 0o600);
      if (seg.shmid < 0) throw new ShmUnavailable();
      const addr = n.shmat(seg.shmid, null, 0);
      if (addr === BigInt.asUintN(64, -1n) || addr === 0n) throw new ShmUnavailable();
      seg.addr = addr;
      koffi.encode(seg.info, koffi.offsetof(n.XShmSegmentInfo, "shmid"), "int", seg.shmid);
      koffi.encode(seg.info, koffi.offsetof(n.XShmSegmentInfo, "shmaddr"), "void *", addr);
      koffi.encode(seg.img, koffi.offsetof(n.XImage, "data"), "void *", addr);
      if (x.hasXcbShm) {
        // Attached for our xcb connection only: the reads go there (see the class comment).
        seg.xcbSeg = x.shmAttach(seg.shmid);
        if (seg.xcbSeg === null) throw new ShmUnavailable();
      } else {
        if (n.XShmAttach(x.dpy, seg.info) === 0) throw new ShmUnavailable();
        seg.attached = true;
        n.XSync(x.dpy, 0);
      }
      // Marked for removal now: the kernel frees it once we and the server have detached.
      n.shmctl(seg.shmid, IPC_RMID, null);
      // One view of the segment for its whole life (a fresh one per shot was 1.9 MB of external
      // memory for V8 to account for each time); dropped with the segment, before shmdt.
      seg.pixels = this.pixels(this.header(seg.img), ch);
      this.shm = seg;
      this.onSegments?.([{ shmid: seg.shmid, addr: addr.toString() }]);
      return seg;
    } catch (e) {
      this.freeSegment(seg);
      if (e instanceof ShmUnavailable) return null;
      throw e;
    }
  }

  private freeSegment(seg: ShmSegment): void {
    const n = this.x.n;
    seg.pixels = null;
    if (seg.xcbSeg !== null) this.x.shmDetach(seg.xcbSeg);
    if (seg.attached) {
      n.XShmDetach(this.x.dpy, seg.info);
      n.XSync(this.x.dpy, 0);
    }
    if (seg.img !== null && seg.img !== 0n) {
      // The data pointer belongs to the segment: clear it so XDestroyImage does not free() it.
      koffi.encode(seg.img, koffi.offsetof(n.XImage, "data"), "void *", null);
      n.XDestroyImage(seg.img);
    }
    if (seg.addr !== null) n.shmdt(seg.addr);
    if (seg.shmid >= 0) n.shmctl(seg.shmid, IPC_RMID, null);
    koffi.free(seg.info);
  }

  private releaseShm(): void {
    const seg = this.shm;
    this.shm = null;
    if (!seg) return;
    this.freeSegment(seg);
    this.onSegments?.([]);
  }

  /**
   * Returns false when the read failed: MIT-SHM does not work here (e.g. another IPC namespace),
   * or the rect is not wholly on the screen. `final`: this was the clipped read, so the segment
   * is dropped (the caller then stops using MIT-SHM); else it is kept for that read.
   */
  private grabShm(
    clip: Rect,
    out: FrameTarget,
    dx: number,
    dy: number,
    final: boolean,
    afterRead: (() => void) | undefined,
  ): boolean {
    const cw = rectWidth(clip);
    const ch = rectHeight(clip);
    const seg = this.segment(cw, ch);
    if (!seg || seg.img === null || seg.pixels === null) return false;
    if (!this.readShm(seg, clip, afterRead)) {
      if (final) this.releaseShm();
      return false;
    }
    this.convert(seg.pixels, cw, ch, out, dx, dy);
    this.lastMethod = "xshm";
    return true;
  }

  /**
   * One MIT-SHM read into `seg`; false when the server refused it. On xcb, `afterRead`'s
   * requests join the read's flush (waiting for the read's reply sends them); its reply is
   * read even when `afterRead` throws, so nothing stays queued.
   */
  private readShm(seg: ShmSegment, clip: Rect, afterRead: (() => void) | undefined): boolean {
    if (seg.img === null) return false;
    if (seg.xcbSeg === null) {
      const n = this.x.n;
      const ok = n.XShmGetImage(this.x.dpy, this.x.root, seg.img, clip[0], clip[1], ALL_PLANES) !== 0;
      afterRead?.();
      return ok;
    }
    const size = { x: clip[0], y: clip[1], width: rectWidth(clip), height: rectHeight(clip) };
    const read = this.x.shmGetImage(size, seg.xcbSeg);
    try {
      if (afterRead) afterRead();
      else this.x.flush();
    } finally {
      read.resolve();
    }
    return read.resolve();
  }

  /** Detaches and removes the cached segment (worker shutdown). */
  dispose(): void {
    this.settleOutstanding();
    this.releaseShm();
  }
}

class ShmUnavailable extends Error {}

interface ShmSegment {
  info: Ptr;
  img: Ptr | null;
  shmid: number;
  addr: Ptr | null;
  attached: boolean;
  /** The segment's id on our xcb connection when attached there, else null. */
  xcbSeg: number | null;
  width: number;
  height: number;
  /** The segment's pixels, viewed once it is attached; null before and after. */
  pixels: { words: Uint32Array; wordsPerRow: number } | null;
}

/** The frame as the port answers it (the stride only when rows are not packed). */
function imageOf(out: FrameTarget, width: number, height: number): RawImage {
  return {
    width,
    height,
    channels: 3,
    data: out.data,
    ...(out.stride !== width * 3 ? { stride: out.stride } : {}),
  };
}

/**
 * A packed RGB frame of our own. A rect wholly on screen is written to every byte by the
 * conversion, so it starts uninitialised; anything else starts black (zeros).
 */
function packedFrame(width: number, height: number, whole: boolean): FrameTarget {
  const data = whole
    ? new Uint8Array(Buffer.allocUnsafeSlow(width * height * 3).buffer)
    : new Uint8Array(width * height * 3);
  return { width, height, data, stride: width * 3 };
}

/** Row `y`'s pixel bytes black, the bytes between rows left alone. */
function blackRow(out: FrameTarget, y: number): void {
  out.data.fill(0, y * out.stride, y * out.stride + out.width * 3);
}
