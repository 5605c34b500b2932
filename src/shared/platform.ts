import { z } from "zod";
import { type Rect, RectSchema } from "./geometry.js";
import { type ProcessInstance, ProcessInstanceSchema } from "./identity.js";

/**
 * Platform ports. Shaped after Win32: a window is an HWND (decimal string), screen
 * rects are physical pixels, z-order is the top-level order (0 = topmost), and a
 * process is an exact ProcessInstance. Implementations live in src/platforms/* and
 * are loaded only inside workers (native code never runs on the supervisor thread).
 */

export const PlatformNameSchema = z.enum(["fake", "x11", "win32", "wayland"]);
export type PlatformName = z.infer<typeof PlatformNameSchema>;

export const WindowInfoSchema = z.object({
  hwnd: z.string().regex(/^\d+$/),
  title: z.string(),
  window_class: z.string(),
  pid: z.number().int().nonnegative(),
  /** null when the process cannot be resolved (such a window is never a target). */
  instance: ProcessInstanceSchema.nullable(),
  /** Screen rect of what the user sees as the window, physical pixels. */
  rect: RectSchema,
  visible: z.boolean(),
  iconic: z.boolean(),
  foreground: z.boolean(),
  on_top: z.boolean(),
  /** Position in the stacking order, 0 = topmost. */
  z: z.number().int().nonnegative(),
  /**
   * The window still exists but the process that owns it has exited (it is being torn down):
   * never a target (calls answer target_gone), yet still listed, since it still covers others.
   */
  owner_exited: z.boolean().optional(),
});
export type WindowInfo = z.infer<typeof WindowInfoSchema>;

export interface RawImage {
  width: number;
  height: number;
  /** 3 (RGB) or 4 (RGBA). */
  channels: 3 | 4;
  data: Uint8Array;
  /**
   * Bytes from the start of one row to the start of the next, at least width × channels; the
   * bytes between rows belong to whoever laid the frame out (the PNG encoder's filter bytes,
   * src/workers/capture/frames.ts). Absent: rows are packed, width × channels apart.
   */
  stride?: number;
}

/** Bytes from one row of `img` to the next. */
export function rowStride(img: RawImage): number {
  return img.stride ?? img.width * img.channels;
}

/**
 * Memory the caller owns for an RGB frame (3 bytes per pixel, rows `stride` bytes apart), which
 * a capture port may fill instead of allocating its own: the capture worker hands the same few
 * frames out shot after shot, laid out as the PNG encoder reads them, so a shot neither
 * allocates nor copies its pixels between the screen read and the encoder.
 */
export interface FrameTarget {
  width: number;
  height: number;
  data: Uint8Array;
  stride: number;
}

export type MouseButton = "left" | "right" | "middle";

/** Logical key names of docs/spec.md §6 plus modifiers; platforms map them to keysyms / VKs. */
export type LogicalKey = string;

export type TextMode = "sendinput" | "wm_char";

/**
 * What an effect is about to touch, in screen coordinates, for a platform's own last-moment
 * checks against what its display server knows (see DesktopPort.confirmLive).
 */
export interface LiveCheck {
  /** Screen points a click, scroll or drag leg lands on. */
  points: ReadonlyArray<{ x: number; y: number }>;
  /** Screen region whose pixels are read. */
  region: Rect | null;
  /** Keys follow: the input focus must be in the target. */
  focus: boolean;
  /** Refuse while another client holds an active grab of these devices. */
  grabs: { keyboard: boolean; pointer: boolean };
  /**
   * The instance's top-levels already shown when the grant began (TargetExpectation's
   * shown_before): windows of their own, never popups of the target.
   */
  shownBefore?: ReadonlySet<string>;
}

/**
 * What DesktopPort.confirmLive proved about the live desktop, handed by the input worker to the
 * input port with the event it clears. The port sends that event only while the display server
 * still shows what was proven (X11: re-read under a server grab on the connection that injects),
 * so nothing can change between the check and the event. A value, not state kept on a shared
 * connection: an event can only carry the proof of its own check.
 */
export interface LiveProof {
  /** Keys: the native focus window the check found in the target, or null (focus not checked). */
  readonly focus: string | null;
  /** Presses: the verified screen points, each with what a press there reaches. */
  readonly points: ReadonlyArray<LivePoint>;
}

export interface LivePoint {
  readonly x: number;
  readonly y: number;
  /**
   * The native windows a press at the point goes through, from the top-level under it down to
   * the deepest one (X11: root child, then each child containing the point).
   */
  readonly path: readonly string[];
  /** The PID proven to hold the active pointer grab (the target's own popup grab), else null. */
  readonly grabOwner: number | null;
}

/** What the display server did with a press (InputPort.buttonDown with proveDelivery). */
export interface PressReceipt {
  /**
   * The press was delivered to the target (X11: RECORD saw the X server deliver it to the X
   * client that owns the deepest window under the point, and to no other client).
   */
  delivered: boolean;
}

/** The proof of a check that proved nothing the port re-checks (ports without confirmLive). */
export const NO_PROOF: LiveProof = { focus: null, points: [] };

/** Discovery and identity. */
export interface DesktopPort {
  readonly platform: PlatformName;
  /**
   * Top-level windows in stacking order, topmost first (hidden ones included, flagged).
   * `regionCheckOf`: the window whose region check (confirmLive, a capture's check before the
   * read) follows this listing at once; a port may ask that check's requests in the listing's
   * own batch (X11), for the check on the window object this listing returns.
   */
  listWindows(opts?: { regionCheckOf?: string; readAhead?: ReadAhead }): Promise<WindowInfo[]>;
  /** One window, or null when it does not exist any more. */
  getWindow(hwnd: string): Promise<WindowInfo | null>;
  /** Whether that exact instance still runs (pid alive with the same start time and path). */
  isInstanceAlive(instance: ProcessInstance): Promise<boolean>;
  /** Bounds of the virtual screen (all monitors), physical pixels. */
  virtualScreen(): Promise<Rect>;
  /** Facts for health_check (DPI awareness, versions); never screen content. */
  health(): Promise<Record<string, string | number | boolean | null>>;
  /** The native window to un-minimize without focusing. */
  restoreWindow(hwnd: string): Promise<void>;
  /** Bring a window forward (focus mode "activate"). */
  activateWindow(hwnd: string): Promise<void>;
  /**
   * Optional: re-checks, against the display server's own state (never client-written
   * properties), that the effect described by `check` reaches `target` (a window of the listing
   * just made) and nothing else. Throws occluded / not_foreground / input_grabbed. Returns what
   * it proved, for the input port to hold the event to.
   */
  confirmLive?(target: WindowInfo, check: LiveCheck): Promise<LiveProof>;
  /**
   * Set when confirmLive itself refuses points and regions past the virtual screen
   * (out_of_bounds), from the same request batch as its other reads (X11: the root's geometry
   * beside its QueryTree); the check then asks virtualScreen for nothing.
   */
  readonly liveCheckCoversScreen?: boolean;
  /**
   * Set when confirmLive proves on its own, from the display server's pictures, what a press at
   * each point reaches (Wayland: the shared window's stream against the monitor's): pointer
   * input then needs no foreground window and nothing is activated for it. Keys still do.
   */
  readonly pointerWithoutFocus?: boolean;
  /**
   * Optional: screen rects of the target process's other mapped top-level windows that
   * listWindows does not carry (X11: override-redirect menus, combo popups, tooltips), from the
   * display server itself. Absent where the listing carries them all (Win32, the fake desktop).
   */
  unlistedOwnWindows?(target: WindowInfo, shownBefore?: ReadonlySet<string>): Promise<Rect[]>;
  /**
   * Optional: which of `candidates` (windows of the target's process instance from the listing)
   * are popups of `target` (X11: transient for it, through the WM_TRANSIENT_FOR chain). Any other
   * top-level of the instance is a window of its own, reached only through its own grant. Absent:
   * every shown window of the instance counts as part of the target (Win32, the fake desktop).
   * A window in `shownBefore` (shown already when the grant began) is never a popup, nor is a
   * window transient for the target only through one of those. `unlistedOwnWindows` leaves those
   * out too.
   */
  popupsOf?(
    target: WindowInfo,
    candidates: readonly WindowInfo[],
    shownBefore?: ReadonlySet<string>,
  ): Promise<WindowInfo[]>;
  /**
   * Optional, where popupsOf tells popups apart: the native ids of the process's top-level
   * windows shown now (X11: listed clients that are viewable or minimized, by client window, and
   * mapped unlisted top-levels such as override-redirect ones, by their own id), from the display
   * server. Taken when a grant begins, carried with it as TargetExpectation's shown_before.
   */
  shownTopLevels?(pid: number): Promise<string[]>;
  /**
   * Optional, for a check repeated moments after a listing (the capture's check after the
   * read): only what can have changed since, as a partial listing in listWindows' order. The
   * window `hwnd` read afresh exactly as listWindows reads it (identity, rect, state), and every
   * window stacked above it now whose rect meets `region` (window-relative, placed on the fresh
   * rect) and that is visible, unless confirmLive judges region occlusion itself from the
   * display server (X11). [] when `hwnd` no longer exists. Any verdict of the last-moment
   * checks over it equals the verdict over a full listing: they only ever look at the target
   * and the windows above it that overlap.
   */
  targetAndCovers?(hwnd: string, region: Rect): Promise<WindowInfo[]>;
  /**
   * Sends targetAndCovers' requests for `hwnd` now (right after a screen read), for the next
   * targetAndCovers of that hwnd to judge, so the display server answers them while the worker
   * encodes. Sent after the read either way, so what they show is the state after it.
   */
  askCheckAfterRead?(hwnd: string): void;
  /**
   * For a check before a read judged against a listing already made (capture.region with the
   * supervisor's listing): asks the region check of exactly `target` (a window object of that
   * listing, which the next confirmLive of it judges) now, then `readAhead.ask(target.rect)`
   * behind its requests, unflushed, so the check, the read and the check after it go out in
   * one flush. `readAhead.stale()` when the check judges anything but those requests (dropped
   * by another listing or check, or a request more, sent after the read). Asks nothing where
   * the port cannot (the caller then reads the usual way).
   */
  askCheckBeforeRead?(target: WindowInfo, readAhead: ReadAhead): void;
  /** Polite close request (WM_CLOSE / WM_DELETE_WINDOW); never a kill. */
  closeWindow(hwnd: string): Promise<void>;
  dispose(): Promise<void>;
}

/** Whether `into` can hold a width × height RGB frame (what a port checks before writing it). */
export function frameFits(into: FrameTarget, width: number, height: number): boolean {
  return (
    into.width === width &&
    into.height === height &&
    Number.isInteger(into.stride) &&
    into.stride >= width * 3 &&
    into.data.byteLength >= (height - 1) * into.stride + width * 3
  );
}

/**
 * A screen read asked inside a listing's batch (listWindows' `readAhead`, with
 * `regionCheckOf`), or behind a check's (DesktopPort.askCheckBeforeRead): `ask(lastRect)` is
 * called at most once, after the listing's requests and the region check's requests for that
 * window were queued and before anything waits for a reply, with the window's rect as the
 * last listing found it. `stale()` is called when the fresh listing does not vouch for what
 * was asked before the read (the window's frame changed) or the check before the read judged
 * anything but the requests asked before it: its pixels are then never used. The caller also
 * drops them when the fresh rect differs from `lastRect`.
 */
export interface ReadAhead {
  ask(lastRect: Rect): void;
  stale(): void;
}

/** A read queued in someone else's batch (CapturePort.askRead). */
export interface PendingRead {
  /** The frame, once the server wrote it; null when the server refused the read (zeroed). */
  take(): RawImage | null;
  /** Waits for the read and zeroes what it wrote: its pixels are never used. */
  drop(): void;
}

/** Pixels of a screen rect exactly as the user sees them. */
export interface CapturePort {
  /**
   * Optional: queues a read of `rect` into `into` without sending it (the next flush or wait
   * on the display connection sends it), then calls `afterRead` so that its requests are
   * ordered behind the read; null when the port cannot queue one now without a round trip of
   * its own (the caller then reads with captureScreen).
   */
  askRead?(rect: Rect, into: FrameTarget, afterRead?: () => void): PendingRead | null;
  /**
   * `into` (of the rect's size), when given, may be where the pixels go: a port that fills it
   * writes every pixel byte (black where the screen has none), leaves the bytes between rows
   * alone and returns an image over `into.data` with `into.stride`. A port may also ignore it
   * and return a frame of its own.
   *
   * `afterRead`, when the port takes it, is called once the read is ordered before whatever
   * it sends to the display server (X11: queued right behind the read on the same connection
   * and sent in its flush), again for a later read if an earlier one failed; a port that does
   * not take it leaves the caller to ask after the read returned.
   */
  captureScreen(rect: Rect, into?: FrameTarget, afterRead?: () => void): Promise<RawImage>;
}

/** Raw injection; every verification happens before these are called, in the same worker. */
export interface InputPort {
  moveTo(x: number, y: number): Promise<void>;
  /**
   * `proof`: what the check before it proved (absent: raw use, the event is sent unchecked).
   * `proveDelivery`: also find out whether the display server delivered the press to the window
   * the proof names; the answer is null when not asked or the platform cannot tell.
   */
  buttonDown(
    button: MouseButton,
    proof?: LiveProof | null,
    proveDelivery?: boolean,
  ): Promise<PressReceipt | null>;
  buttonUp(button: MouseButton): Promise<void>;
  /**
   * Positive = away from the user (up), one notch = one wheel click. `proof`: as for
   * buttonDown (a notch is a button press on X11, taken by grabs like a click).
   */
  wheel(notches: number, proof?: LiveProof | null): Promise<void>;
  keyDown(key: LogicalKey, proof?: LiveProof | null): Promise<void>;
  keyUp(key: LogicalKey): Promise<void>;
  /**
   * Types text (UTF-16 aware, astral characters included), awaiting `beforeEachKey` before each
   * character's key events: when it throws, nothing more is typed (and nothing stays pressed);
   * what it returns is the proof that character's events are held to.
   */
  typeText(
    hwnd: string,
    text: string,
    mode: TextMode,
    beforeEachKey?: () => Promise<LiveProof | null | undefined>,
  ): Promise<void>;
}

/** A node of an accessibility tree as the provider reports it (before our redaction). */
export interface A11yNodeFacts {
  role: string;
  name: string | null;
  automation_id: string | null;
  class_name: string | null;
  /** Screen rect. */
  rect: Rect | null;
  enabled: boolean;
  offscreen: boolean;
  focused: boolean;
  is_password: boolean;
  patterns: string[];
  /**
   * States beyond enabled/focused/offscreen in the vocabulary of src/shared/states.ts (checked,
   * expanded, selected, …); anything outside it is dropped by the worker. Never values.
   */
  states?: string[];
}

/**
 * Semantic actions. scroll_into_view brings the element into its scrolling container's view;
 * select_option selects the child option whose accessible name is the value (lists, combo boxes).
 */
export type SemanticAction =
  | "invoke"
  | "toggle"
  | "select"
  | "expand"
  | "collapse"
  | "set_value"
  | "scroll_into_view"
  | "select_option";

/** Opaque provider handle for a node inside one session. */
export type A11yHandle = unknown;

/** What a walk reads of a node: its facts and its children. */
export interface A11yNodeSource {
  facts(node: A11yHandle): Promise<A11yNodeFacts>;
  children(node: A11yHandle): Promise<A11yHandle[]>;
  /** Called once when the walk it served ends (a source that asks ahead stops asking). */
  release?(): void;
  /**
   * Calls a walk may have in flight at once with this source, when more than the walk's own
   * concurrency (a source that answers mostly from what it asked ahead, within its own bound).
   */
  inFlight?: number;
}

/** The bounds of one walk, told to a walk source so it never asks ahead past them. */
export interface WalkLimits {
  maxNodes: number;
  maxDepth: number;
  /**
   * false: the walk's facts need no patterns (the caller drops them), so a source may skip what
   * only patterns need (AT-SPI's GetActions). Absent: true.
   */
  patterns?: boolean;
  /**
   * false: nobody is shown the walk's rects (they are null in its nodes), so a source may skip
   * the calls that only rects need, as long as every other fact, `offscreen` included, stays
   * what it would be. Absent: true.
   */
  bounds?: boolean;
}

/** WalkLimits' `patterns` and `bounds`, decided (absent there means true). */
export type WalkShown = Required<Pick<WalkLimits, "patterns" | "bounds">>;

export interface A11ySession extends A11yNodeSource {
  root(): Promise<A11yHandle>;
  /**
   * Optional: a source for one walk from `root` that answers from a bulk snapshot where the
   * provider has one (AT-SPI's Cache.GetItems) and asks per node only for what it lacks. The
   * facts must equal facts()/children() of the same nodes. Without it a walk asks node by node.
   */
  walkSource?(root: A11yHandle, limits: WalkLimits): Promise<A11yNodeSource>;
  /** Runs a semantic action; throws UiError("pattern_not_supported") when absent. */
  act(node: A11yHandle, action: SemanticAction, value?: string): Promise<void>;
  /** Whether the node still exists in the live tree. */
  alive(node: A11yHandle): Promise<boolean>;
  /**
   * Roots of the process instance's other showing top-level windows (menus, combo-box popups,
   * tooltips, its own dialogs): part of the granted window for inspection and actions. Absent
   * when the provider cannot tell them apart.
   */
  popupRoots?(shownBefore?: ReadonlySet<string>): Promise<A11yHandle[]>;
  /**
   * A stable identity of the node the handle names (the same for every handle of that node), so
   * the node keeps its ref across walks; absent when the provider has none (refs then follow
   * handle objects).
   */
  identity?(node: A11yHandle): string | null;
  dispose(): Promise<void>;
}

export interface AccessibilityPort {
  openSession(window: WindowInfo): Promise<A11ySession>;
}

/** A trusted dialog that must run as native code inside a worker (Win32). */
export interface DialogPort {
  /** Shows the server-built text, Deny as default; resolves when answered, rejects on abort. */
  consent(text: string, signal: AbortSignal): Promise<"approve" | "deny">;
}

/** A stream of a portal session, as it crosses between workers (a PipeWire node is read by id). */
export interface SharedStream {
  node: number;
  source_type: "monitor" | "window" | "virtual";
  size: [number, number] | null;
  position: [number, number] | null;
}

/**
 * Where the compositor's portal is the second consent gate (Wayland): the worker's side of the
 * sessions the person allowed. The input worker opens and holds them; the capture worker is
 * handed their streams.
 */
export interface PortalSharing {
  /** Shows the portal's dialog; binds an allowed session to `hwnd`. */
  open(
    hwnd: string,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<{ answer: "declined" } | { answer: "allowed"; session_id: string; streams: SharedStream[] }>;
  /** Resolves when the session ends, with why. */
  waitEnd(
    sessionId: string,
    signal: AbortSignal,
  ): Promise<"closed_by_us" | "closed_by_compositor" | "bus_lost">;
  /** Binds streams of a session another worker holds to `hwnd`, until close. */
  share(hwnd: string, sessionId: string, streams: SharedStream[]): void;
  /** Ends the session (or drops the handed-over streams); false when it was not held. */
  close(sessionId: string): Promise<boolean>;
  dispose(): Promise<void>;
}

export interface Platform {
  desktop: DesktopPort;
  capture: CapturePort;
  input: InputPort;
  accessibility: AccessibilityPort;
  /** Only where the consent dialog is native code (Win32). */
  dialog?: DialogPort;
  /** Only where the compositor's portal dialog is the second consent gate (Wayland). */
  portals?: PortalSharing;
  /**
   * Releases every port and what they share (the X connection and the a11y bus; COM and GDI
   * objects), once: a second call does nothing, and a port used afterwards fails with
   * platform_unavailable where it would touch a released resource.
   */
  dispose(): Promise<void>;
  /**
   * Optional: file descriptors of the display connections this platform opened in native code
   * (X11: its Xlib and xcb connections). Node closes what a terminated worker thread opened
   * through Node, not these: the host closes them once the thread has ended (src/supervisor/
   * nativeFds.ts), so a stopped worker leaves no X client behind, nor a grab it held.
   */
  nativeFds?(): number[];
  /**
   * Optional: the shared-memory segments this platform keeps attached (X11: the MIT-SHM
   * segment of the screen read), told to `listener` whenever they change. A terminated worker
   * thread leaves them mapped in the process; the host hands them to the next worker of the
   * kind, which detaches each that is still mapped where it was (src/platforms/x11/shmOrphans.ts).
   */
  onSharedSegments?(listener: (segments: SharedSegment[]) => void): void;
}

/** A System V shared-memory segment attached in this process: its id and where it is mapped. */
export interface SharedSegment {
  shmid: number;
  /** The mapping's start address, in decimal. */
  addr: string;
}
