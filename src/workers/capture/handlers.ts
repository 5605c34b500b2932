import { isUiError, type UiError, uiError } from "../../shared/errors.js";
import { FairShare } from "../../shared/fairShare.js";
import { type Rect, rectHeight, rectWidth, sameRect, toScreen } from "../../shared/geometry.js";
import { instanceKey, sameInstance } from "../../shared/identity.js";
import type { PendingRead, RawImage, WindowInfo } from "../../shared/platform.js";
import type {
  OpArgs,
  OpParsedArgs,
  OpResult,
  OpWireResult,
  TargetExpectation,
} from "../../shared/protocol.js";
import { SHOTS_IN_FLIGHT } from "../../shared/shots.js";
import type { HandlerContext, HandlerTable } from "../handlers.js";
import { portalsOf } from "../input/handlers.js";
import { verifyTarget, verifyUnchangedAfter } from "../verify.js";
import { frameHashOfPng } from "./frameHash.js";
import { FramePool, type PngFrame } from "./frames.js";
import { type KeepSlot, LaterTiles } from "./laterTiles.js";
import { ListingCache, readRecently } from "./listings.js";
import { assertImage, drawGrid, hash, paintMasks, sampleColor, tileHashes } from "./pixels.js";
import { encodePng, encodePngFrame } from "./png.js";

function cancelledError(signal: AbortSignal): UiError {
  return isUiError(signal.reason) ? signal.reason : uiError("cancelled");
}

function throwIfAborted(ctx: HandlerContext): void {
  if (ctx.signal.aborted) throw cancelledError(ctx.signal);
}

/** The platform's frame must be exactly the requested rect; anything else is a backend fault. */
function checkFrame(raw: RawImage, region: Rect): void {
  try {
    assertImage(raw);
  } catch {
    throw uiError("platform_unavailable", "The platform returned a malformed frame.");
  }
  if (raw.width !== rectWidth(region) || raw.height !== rectHeight(region)) {
    throw uiError("platform_unavailable", "The platform returned a frame of the wrong size.");
  }
}

/** How old the supervisor's enumeration may be for the pre-capture check to use it. */
export const LISTING_MAX_AGE_MS = 250;

/**
 * The supervisor's enumeration that resolved the target moments ago, when it is fresh enough
 * for the pre-capture check to judge against (the checks are verify.ts's, and confirmLive
 * asks the display server either way); else undefined, and the check enumerates.
 */
function freshListing(listing: { at: number; windows: WindowInfo[] } | null): WindowInfo[] | undefined {
  if (listing === null) return undefined;
  return readRecently(listing.at, LISTING_MAX_AGE_MS, Date.now()) ? listing.windows : undefined;
}

/** This worker's frames (one per shot in flight, a few kept between shots). */
const frames = new FramePool();
/**
 * This worker's shots in flight, a few at a time (each holds a frame and a deflate stream). The
 * supervisor sends them in turns by identity; here they are one queue, in the order they came.
 */
const shots = new FairShare(SHOTS_IN_FLIGHT);
const ALL_SHOTS = "";
/** This worker's recent listings, which the supervisor names by id when it asks for pixels. */
const listings = new ListingCache(LISTING_MAX_AGE_MS);
/** The PNGs of frames answered with tiles "later", whose tiles capture.tiles hashes when asked. */
const laterTiles = new LaterTiles();
/** Keeps nothing: a one-hop shot of an instance the caller holds no grant on. */
const NO_KEEP = laterTiles.slot(null);

/** What a shot takes besides its target (capture.region's and capture.window's arguments). */
type ShotArgs = Pick<
  OpArgs<"capture.region">,
  "region" | "masks" | "grid_spacing" | "unless_hash" | "tiles" | "max_png_bytes" | "compression_level"
> & { output: OpArgs<"capture.region">["output"]; sample_points?: OpArgs<"capture.region">["sample_points"] };

/** A coordinate profile's answer: the hash of the masked RGB pixels and the sampled colours. */
function profileHash(
  raw: RawImage,
  region: Rect,
  points: ShotArgs["sample_points"],
  window_offset: [number, number],
): OpResult<"capture.region"> {
  const samples = points?.map(([x, y]) => {
    if (x < region[0] || x >= region[2] || y < region[1] || y >= region[3])
      throw uiError("invalid_argument", "A sample point lies outside the captured region.");
    return sampleColor(raw, x - region[0], y - region[1]);
  });
  return {
    png: null,
    sha256: hash(raw),
    ...(samples ? { samples } : {}),
    width: raw.width,
    height: raw.height,
    window_offset,
  };
}

/** A shot's answer, made before the check after the read has judged (nothing leaves before). */
interface Made {
  result: OpResult<"capture.region">;
  /** The PNG to keep for its tiles (tiles "later"), once the check has passed. */
  later: { frame_hash: string; png: Uint8Array } | null;
}

/** Masks → tiles → grid → PNG and its hash (or the profile's hash), in place on the frame. */
function pixelWork(raw: RawImage, frame: PngFrame, args: ShotArgs, window_offset: [number, number]): Made {
  const region = args.region;
  const width = raw.width;
  const height = raw.height;
  paintMasks(raw, args.masks, region);

  if (args.output === "sha256")
    return { result: profileHash(raw, region, args.sample_points, window_offset), later: null };

  // "later" only for a frame no grid will be drawn on: its PNG then holds exactly the pixels
  // its tiles are of (laterTiles.ts). Otherwise they are hashed now (before the grid, as a
  // visual wait's samples are), as for true.
  const later = args.tiles === "later" && args.grid_spacing === null;
  const tiles = args.tiles !== false && !later ? Array.from(tileHashes(raw)) : undefined;
  if (args.grid_spacing !== null) drawGrid(raw, args.grid_spacing, { x: region[0], y: region[1] });
  // Every frame is encoded: its hash is the PNG's (frameHash.ts), so a caller that has the
  // image already (if_changed_since, a visual wait, a stream) gets no image, only the hash.
  const png = frame.holds(raw)
    ? encodePngFrame(frame, args.compression_level)
    : encodePng(raw, args.compression_level);
  const frame_hash = frameHashOfPng(png, raw, args.grid_spacing, args.compression_level);
  const same = { frame_hash, ...(tiles ? { tiles } : {}) };
  const unchanged = args.output === "frame_hash" || frame_hash === args.unless_hash;
  if (!unchanged && png.byteLength > args.max_png_bytes) {
    throw uiError(
      "image_too_large",
      `The PNG is ${png.byteLength} bytes; the limit is ${args.max_png_bytes}.`,
    );
  }
  const kept = later ? { frame_hash, png } : null;
  if (unchanged)
    return { result: { png: null, sha256: null, width, height, window_offset, ...same }, later: kept };
  return { result: { png, sha256: null, width, height, window_offset, ...same }, later: kept };
}

/**
 * A read asked in the batch of the check before it (capture.window's listing, capture.region's
 * check against the supervisor's listing), at the rect the last listing gave the target, with
 * its check after the read queued behind it; used only when the rect the check judges is the
 * same and the desktop did not call it stale.
 */
interface ReadInBatch {
  frame: ReturnType<FramePool["acquire"]>;
  /** The window's rect in the last listing, the read's rect on the screen from it. */
  lastRect: Rect | null;
  screenRect: Rect | null;
  read: PendingRead | null;
  stale: boolean;
  /** Zeroes what was read and not taken, and gives the frame back (once). */
  release(): void;
}

/**
 * The read in the batch's frame when the window's fresh rect is the one it was read by, else
 * null (its pixels zeroed): a window moved or resized is read again.
 */
function takeReadInBatch(
  ahead: ReadInBatch | undefined,
  windowRect: Rect,
  screenRect: Rect,
): RawImage | null {
  const read = ahead?.read;
  if (!ahead || !read) return null;
  ahead.read = null;
  const same =
    ahead.lastRect !== null &&
    ahead.screenRect !== null &&
    sameRect(ahead.lastRect, windowRect) &&
    sameRect(ahead.screenRect, screenRect);
  if (ahead.stale || !same) {
    read.drop();
    return null;
  }
  return read.take();
}

/**
 * One frame of `target`: verify (against `windows` when given) → read → verify again → masks →
 * grid → PNG or hash. capture.region and capture.window both run it. `ahead`: a read asked in
 * the batch of the check before it, and its frame.
 */
async function shoot(
  ctx: HandlerContext,
  target: TargetExpectation,
  args: ShotArgs,
  windows: WindowInfo[] | undefined,
  keep: KeepSlot,
  ahead?: ReadInBatch,
): Promise<OpResult<"capture.region">> {
  const { desktop, capture } = ctx.platform;
  const region = args.region;
  const width = rectWidth(region);
  const height = rectHeight(region);
  if (width === 0 || height === 0) throw uiError("invalid_argument", "The capture region is empty.");
  throwIfAborted(ctx);
  const before = await verifyTarget(desktop, target, { region, ...(windows ? { windows } : {}) });
  throwIfAborted(ctx);
  const screenRect = toScreen(before.window.rect, region);
  const frame = ahead?.frame ?? frames.acquire(width, height);
  const release = ahead ? ahead.release : () => frames.release(frame);
  try {
    // The check after the read goes out behind the read (in its flush, where the port can);
    // the server answers it while the frame is encoded. A read in the listing's batch had its
    // check queued behind it there.
    const inBatch = takeReadInBatch(ahead, before.window.rect, screenRect);
    let asked = inBatch !== null;
    const askAfter = desktop.askCheckAfterRead
      ? () => {
          asked = true;
          desktop.askCheckAfterRead?.(target.hwnd);
        }
      : undefined;
    const raw = inBatch ?? (await capture.captureScreen(screenRect, frame.target, askAfter));
    checkFrame(raw, region);
    if (!asked) askAfter?.();
    const window_offset: [number, number] = [screenRect[0], screenRect[1]];
    let made: { shot: Made } | { error: unknown };
    try {
      made = { shot: pixelWork(raw, frame, args, window_offset) };
    } catch (e) {
      made = { error: e };
    }
    try {
      throwIfAborted(ctx);
      await verifyUnchangedAfter(desktop, target, before.window, region);
      throwIfAborted(ctx);
    } catch (e) {
      // What was read may show something else than the verified window: it never leaves,
      // nor does anything made from it.
      raw.data.fill(0);
      if ("shot" in made) made.shot.result.png?.fill(0);
      throw e;
    }
    if ("error" in made) throw made.error;
    // Its tiles are hashed from a copy of this PNG if a visual wait ever asks (capture.tiles),
    // kept for the identity it is answered to and the instance the checks verified.
    if (made.shot.later)
      keep.keep(instanceKey(target.instance), made.shot.later.frame_hash, made.shot.later.png);
    return made.shot.result;
  } finally {
    release();
  }
}

/**
 * The capture worker's ops. capture.region is the whole chain for one frame:
 * verify (identity, visible, not minimized, region inside and uncovered; foreground
 * not required; against the supervisor's enumeration when it is fresh) → read the screen rect
 * → verify again, reading only the target and what lies above it (any move, resize, cover,
 * replacement or minimize discards the pixels and fails with that code) → masks → grid → PNG
 * (or the hash for coordinate profiles). One buffer, painted in place: a frame of the pool, laid
 * out as the encoder deflates it, when the platform writes into it (X11). With a fresh listing
 * from the supervisor, a shot enumerates the desktop once in all. capture.window is the same
 * shot with the listing made here, in the same message (screenshot_window by hwnd).
 */
const ops: HandlerTable = {
  "desktop.list": async (_args, ctx) => {
    const windows = await ctx.platform.desktop.listWindows();
    return { windows, listing_id: listings.remember(windows) };
  },

  "capture.tiles": async (args) => {
    const tiles = laterTiles.get({ client: args.client, instance: args.instance }, args.frame_hash);
    return { tiles: tiles ? Array.from(tiles) : null };
  },

  "capture.forget": async (args) => ({ dropped: laterTiles.forget(args) }),

  "desktop.get": async (args, ctx) => ({ window: await ctx.platform.desktop.getWindow(args.hwnd) }),

  "portal.share": async (args, ctx) => {
    portalsOf(ctx).share(args.hwnd, args.session_id, args.streams);
    return { bound: true as const };
  },
  "portal.close": async (args, ctx) => ({ closed: await portalsOf(ctx).close(args.session_id) }),

  "desktop.alive": async (args, ctx) => ({
    alive: await ctx.platform.desktop.isInstanceAlive(args.instance),
  }),

  "desktop.shown": async (args, ctx) => ({
    hwnds: (await ctx.platform.desktop.shownTopLevels?.(args.instance.pid)) ?? [],
  }),

  "desktop.virtual_screen": async (_args, ctx) => ({ rect: await ctx.platform.desktop.virtualScreen() }),

  "desktop.health": async (_args, ctx) => ({ facts: await ctx.platform.desktop.health() }),
};

/**
 * capture.region's shot, keeping its PNG (tiles "later") through `keep`. Its read is asked in
 * the check before it's batch where both ports can: behind the check's requests against the
 * supervisor's fresh listing, else in the listing made here (as capture.window's).
 */
async function regionShot(
  args: OpParsedArgs<"capture.region">,
  ctx: HandlerContext,
  keep: KeepSlot,
): Promise<OpResult<"capture.region">> {
  throwIfAborted(ctx);
  const { desktop } = ctx.platform;
  const hwnd = args.target.hwnd;
  const fresh =
    (args.listing_id !== null ? listings.fresh(args.listing_id) : undefined) ?? freshListing(args.listing);
  const ahead = readInBatch(ctx, hwnd, args.region);
  try {
    let windows = fresh;
    const listed = windows?.find((w) => w.hwnd === hwnd);
    if (ahead && listed) desktop.askCheckBeforeRead?.(listed, ahead.readAhead);
    windows ??= await listAhead(ctx, hwnd, ahead);
    return await shoot(ctx, args.target, args, windows, keep, ahead?.state);
  } finally {
    // A refusal before shoot reached its read: what was read in the batch is zeroed here.
    ahead?.release();
  }
}

/** capture.window's listing and shot; its PNG is kept only for an instance the caller holds a grant on. */
async function windowShot(
  args: OpParsedArgs<"capture.window">,
  ctx: HandlerContext,
  keep: KeepSlot,
): Promise<OpWireResult<"capture.window">> {
  throwIfAborted(ctx);
  const ahead = readInBatch(ctx, args.hwnd, args.region);
  let windows: WindowInfo[];
  try {
    // The check before the read follows at once: its requests may go in the listing's batch,
    // and the read and the check after it behind them (`ahead`).
    windows = await listAhead(ctx, args.hwnd, ahead);
  } catch (e) {
    ahead?.release();
    throw e;
  }
  const window = windows.find((w) => w.hwnd === args.hwnd);
  // Not found, no owner, owner gone: the supervisor's own resolution from this listing says
  // which (target_not_found, target_gone, target_not_allowed), in the chain's order.
  if (!window?.instance || window.owner_exited) {
    ahead?.release();
    return { windows, shot: null, refused: null };
  }
  try {
    const own = window.instance;
    const granted = args.granted.find((g) => sameInstance(g.instance, own));
    const target = {
      hwnd: window.hwnd,
      instance: own,
      ...(granted ? { shown_before: granted.shown_before } : {}),
    };
    const shot = await shoot(ctx, target, args, windows, granted ? keep : NO_KEEP, ahead?.state);
    return { windows, shot, refused: null };
  } catch (e) {
    // A refusal before shoot reached its read: what was read in the batch is zeroed here.
    ahead?.release();
    // A check's refusal goes back as a value, so the supervisor answers it only after it has
    // resolved and authorized the target (a refused caller learns nothing about the window).
    if (!isUiError(e) || ctx.signal.aborted) throw e;
    return { windows, shot: null, refused: { code: e.code, message: e.message } };
  }
}

/**
 * The read of `region` (window-relative) asked in the listing's batch, when both ports can:
 * its frame, taken now, and what listWindows calls. `release` gives the frame back (zeroed)
 * when no shot follows; else shoot releases it.
 */
function readInBatch(ctx: HandlerContext, hwnd: string, region: Rect) {
  const { desktop, capture } = ctx.platform;
  const width = rectWidth(region);
  const height = rectHeight(region);
  if (!capture.askRead || width <= 0 || height <= 0) return null;
  let released = false;
  const state: ReadInBatch = {
    frame: frames.acquire(width, height),
    lastRect: null,
    screenRect: null,
    read: null,
    stale: false,
    release: () => {
      state.read?.drop();
      state.read = null;
      if (released) return;
      released = true;
      frames.release(state.frame);
    },
  };
  return {
    state,
    readAhead: {
      ask: (lastRect: Rect) => {
        const screenRect = toScreen(lastRect, region);
        state.lastRect = lastRect;
        state.screenRect = screenRect;
        const after = desktop.askCheckAfterRead ? () => desktop.askCheckAfterRead?.(hwnd) : undefined;
        state.read = capture.askRead?.(screenRect, state.frame.target, after) ?? null;
      },
      stale: () => {
        state.stale = true;
      },
    },
    release: state.release,
  };
}

/**
 * A listing with the region check of `hwnd` asked in its batch, and the read of `ahead`
 * behind it when there is one (the check before the read follows at once).
 */
function listAhead(ctx: HandlerContext, hwnd: string, ahead: ReturnType<typeof readInBatch>) {
  return ctx.platform.desktop.listWindows({
    regionCheckOf: hwnd,
    ...(ahead ? { readAhead: ahead.readAhead } : {}),
  });
}

/**
 * The ops as served: capture.region and capture.window wait for their turn among the shots in
 * flight (capture.window lists the desktop only once its turn has come, so the checks judge a
 * listing made just before them).
 */
export const captureHandlers: HandlerTable = {
  ...ops,
  "capture.region": (args, ctx) => inTurn(args.keep_for, ctx, (keep) => regionShot(args, ctx, keep)),
  "capture.window": (args, ctx) => inTurn(args.keep_for, ctx, (keep) => windowShot(args, ctx, keep)),
};

/**
 * A shot in its turn. Its keep slot opens as its message arrives, before the wait: a grant
 * that ends while the shot waits or works (capture.forget) then voids the copy it would keep.
 */
async function inTurn<T>(
  keepFor: string | null,
  ctx: HandlerContext,
  shot: (keep: KeepSlot) => Promise<T>,
): Promise<T> {
  const keep = laterTiles.slot(keepFor);
  try {
    return await shots.run(ALL_SHOTS, ctx.signal, () => shot(keep));
  } finally {
    keep.close();
  }
}
