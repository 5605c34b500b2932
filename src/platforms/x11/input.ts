import koffi from "koffi";
import { dialogGate } from "../../shared/dialogGate.js";
import { uiError } from "../../shared/errors.js";
import type {
  InputPort,
  LiveProof,
  LogicalKey,
  MouseButton,
  PressReceipt,
  TextMode,
} from "../../shared/platform.js";
import { type HeldEntry, NO_LEDGER, type PressLedger } from "../../shared/pressLedger.js";
import { SETTINGS } from "../../shared/settings.js";
import { readSetting } from "../../shared/settingsReader.js";
import { keyAutoRepeats, setKeyAutoRepeat } from "./autoRepeat.js";
import { awaitButtonsProcessed } from "./buttonsProcessed.js";
import { announcedDialogOpen, presenceDir } from "./dialog/presence.js";
import { PointerDeliveries } from "./grabOwner.js";
import { keysymForChar, keysymForKey, SHIFT_KEYSYM } from "./keys.js";
import { type KeyPress, requireNoPassiveKeyGrab } from "./passiveGrabs.js";
import { checkPressUnderGrab, type PressCheck, type PressParties } from "./pressCheck.js";
import type { XConnection } from "./xconn.js";
import { requireXTestRoute } from "./xtestRoute.js";

/**
 * XTest injection. This port only emits; verification and release-in-finally belong to the
 * input worker. Characters without a key in the current keymap are typed through spare (empty)
 * keycodes remapped with XChangeKeyboardMapping and restored afterwards, in finally. Every
 * keycode a chunk may press and every remap is recorded in the ledger (the guardian) before it
 * happens, so a worker killed mid chunk leaves nothing down and nothing remapped.
 */

const BUTTONS: Record<MouseButton, number> = { left: 1, middle: 2, right: 3 };
/**
 * Time given to clients to read a remapped key before the mapping is restored; 10..5000 ms,
 * anything else is the default 300.
 */
const REMAP_SETTLE_MS = readSetting(process.env, SETTINGS.x11RemapSettleMs);
const MAX_SPARE = 16;

const GRAB_MODE_ASYNC = 1;
/** How long a press may take to reach the target after the WM replays it (see buttonDown). */
const DELIVERY_WAIT_MS = 300;
const GRAB_SUCCESS = 0;

interface Keymap {
  min: number;
  max: number;
  per: number;
  syms: bigint[];
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class X11Input implements InputPort {
  private readonly x: XConnection;
  private keymap: Keymap | null = null;
  /** Keycodes whose auto-repeat we turned off while held, to turn back on at release. */
  private readonly repeatRestore = new Set<number>();
  private readonly ledger: PressLedger;

  constructor(x: XConnection, ledger: PressLedger = NO_LEDGER) {
    this.x = x;
    this.ledger = ledger;
    const zero = (): number[] => [0];
    if (x.n.XTestQueryExtension(x.dpy, zero(), zero(), zero(), zero()) === 0) {
      throw uiError("platform_unavailable", "The XTest extension is not available.");
    }
    // Dialogs of ours this supervisor did not open (the lease broker's, another server's).
    const dir = presenceDir(process.env);
    if (dir) dialogGate.addSource(() => announcedDialogOpen(dir));
  }

  private flush(): void {
    this.x.n.XSync(this.x.dpy, 0);
    this.x.checkAlive();
  }

  async moveTo(x: number, y: number): Promise<void> {
    if (!Number.isInteger(x) || !Number.isInteger(y)) throw uiError("invalid_argument");
    this.x.n.XTestFakeMotionEvent(this.x.dpy, -1, x, y, 0);
    this.flush();
  }

  /**
   * The press happens under a server grab after a last look on the same connection as XTest,
   * against what the check before it proved (`proof`): see pressCheck.ts (the pointer at a
   * verified point, the proven windows under it, our XTest route, no other client's pointer grab
   * and no passive grab of another client that the press would activate). Without a proof (raw
   * use of the port, tests) the press is sent unchecked.
   */
  async buttonDown(
    button: MouseButton,
    proof?: LiveProof | null,
    proveDelivery = false,
  ): Promise<PressReceipt | null> {
    const n = this.x.n;
    const dpy = this.x.dpy;
    const b = BUTTONS[button];
    if (!proof) {
      n.XTestFakeButtonEvent(dpy, b, 1, 0);
      this.flush();
      return null;
    }
    const done = await this.pressUnderGrab(
      proof,
      b,
      () => n.XTestFakeButtonEvent(dpy, b, 1, 0),
      proveDelivery,
    );
    const onlyParties = await this.deliveredOnlyToParties(done, b, true);
    return proveDelivery && onlyParties !== null ? { delivered: onlyParties } : null;
  }

  /**
   * Sends `send` (a press, or a scroll's presses and releases) under the server grab after the
   * last look (pressCheck.ts). Where a passive grab on the way may be the WM's binding or another
   * client's ("ambiguous"), the delivery of the presses is recorded: the recording starts outside
   * the server grab, then the look runs again. `record`: record in any case (prove_delivery).
   */
  private async pressUnderGrab(
    proof: LiveProof,
    button: number,
    send: () => void,
    record: boolean,
  ): Promise<SentPress> {
    const n = this.x.n;
    const dpy = this.x.dpy;
    const deliveries = await this.recordOwnPopupGrab(proof);
    let presses: PointerDeliveries | null = null;
    try {
      let ambiguous = false;
      if (record || ambiguous) presses = await PointerDeliveries.presses(this.x);
      for (;;) {
        let sent: PressCheck | null = null;
        n.XGrabServer(dpy);
        try {
          const checked = await checkPressUnderGrab(this.x, proof, deliveries, button);
          if (checked.verdict === "ambiguous") ambiguous = true;
          if (!ambiguous || presses !== null) {
            send();
            sent = checked;
          }
        } finally {
          n.XUngrabServer(dpy);
          this.flush();
        }
        if (sent !== null) return { parties: sent, presses, ambiguous };
        presses = await PointerDeliveries.presses(this.x);
      }
    } catch (e) {
      // Recordings close only once the server is ours no more (closing waits for its answer).
      presses?.close();
      throw e;
    } finally {
      deliveries?.close();
    }
  }

  /**
   * After a recorded press: whether the presses went only to the target's client and the WM and
   * reached the target's (null when nothing was recorded). Where the way was ambiguous and
   * another client got one, that client's grab took it: input_grabbed, the button let go first.
   */
  private async deliveredOnlyToParties(
    done: SentPress,
    button: number,
    held: boolean,
  ): Promise<boolean | null> {
    const { presses, parties, ambiguous } = done;
    if (presses === null) return null;
    try {
      // A press the WM's binding took first reaches the target only once the WM replayed it.
      await presses.awaitDeliveryTo(parties.owner, DELIVERY_WAIT_MS);
      const got = (await presses.finish().catch(() => null)) ?? [];
      const only = got.every((id) => id === parties.owner || id === parties.wm);
      if (ambiguous && !only) {
        if (held) {
          this.x.n.XTestFakeButtonEvent(this.x.dpy, button, 0, 0);
          this.flush();
        }
        throw uiError("input_grabbed", "Another client's passive grab took the press.");
      }
      return only && got.includes(parties.owner);
    } finally {
      presses.close();
    }
  }

  /**
   * The check proved the target's own popup grab: its owner is told again under the server
   * grab, so the recording starts now (the server must still run the recording's enable).
   */
  private async recordOwnPopupGrab(proof: LiveProof): Promise<PointerDeliveries | null> {
    const grabOwner = proof.points.find((v) => v.grabOwner !== null)?.grabOwner ?? null;
    return grabOwner === null ? null : await PointerDeliveries.start(this.x);
  }

  async buttonUp(button: MouseButton): Promise<void> {
    this.x.n.XTestFakeButtonEvent(this.x.dpy, BUTTONS[button], 0, 0);
    this.flush();
    // A click is done once delivered: keys sent next must not overtake a press the WM holds.
    await awaitButtonsProcessed(this.x, [BUTTONS[button]]);
  }

  /**
   * Each notch is a press and release of button 4 (up) or 5 (down). With a proof, all of them
   * go under one server grab after the same last look as a click (pressCheck.ts, with the
   * wheel's button), each release right behind its press, so none is left down.
   */
  async wheel(notches: number, proof?: LiveProof | null): Promise<void> {
    if (!Number.isInteger(notches)) throw uiError("invalid_argument");
    const n = this.x.n;
    const dpy = this.x.dpy;
    const button = notches > 0 ? 4 : 5;
    const send = () => {
      for (let i = 0; i < Math.abs(notches); i++) {
        n.XTestFakeButtonEvent(dpy, button, 1, 0);
        n.XTestFakeButtonEvent(dpy, button, 0, 0);
      }
    };
    if (!proof) {
      send();
      this.flush();
    } else {
      await this.deliveredOnlyToParties(await this.pressUnderGrab(proof, button, send, false), button, false);
    }
    // As for a click: what is sent next must not overtake a notch the WM holds.
    await awaitButtonsProcessed(this.x, [button]);
  }

  private keycodeForKey(key: LogicalKey): number {
    const ks = keysymForKey(key);
    if (ks === null) throw uiError("invalid_argument", "The key is not allow-listed.");
    const kc = this.x.n.XKeysymToKeycode(this.x.dpy, ks);
    if (kc === 0) throw uiError("platform_unavailable", "The key has no keycode on this keyboard.");
    return kc;
  }

  /**
   * A key we hold never auto-repeats: the X server would repeat it (about 25/s) into whichever
   * window has the focus by then. Per-key auto-repeat goes off before the press and back on
   * after the release (only where it was on).
   */
  async keyDown(key: LogicalKey, proof?: LiveProof | null): Promise<void> {
    const kc = this.keycodeForKey(key);
    await this.autoRepeatOff(kc);
    this.whileFocusHolds(() => this.x.n.XTestFakeKeyEvent(this.x.dpy, kc, 1, 0), proof, [
      { kc, shifted: false },
    ]);
  }

  /**
   * Emits key events atomically with a last focus check: the server is grabbed (no other
   * client's request runs, so nobody can move the focus or grab the keyboard), the focus must
   * still be the window the check before proved (`proof.focus`), our XTest events must still
   * reach the virtual core keyboard (xtestRoute.ts), no other client may hold the keyboard nor a
   * passive grab of one of `presses` on the focus path (passiveGrabs.ts), then the events, then
   * the release of the server. On the same Xlib connection as XTest. Without a proof (raw use of
   * the port, tests) the events are sent unchecked.
   */
  private whileFocusHolds(
    send: () => void,
    proof: LiveProof | null | undefined,
    presses: readonly KeyPress[],
  ): void {
    const n = this.x.n;
    const dpy = this.x.dpy;
    const expected = proof?.focus ?? null;
    if (expected === null) {
      send();
      this.flush();
      return;
    }
    n.XGrabServer(dpy);
    try {
      const focus: Array<bigint | number> = [0];
      n.XGetInputFocus(dpy, focus, [0]);
      if (String(focus[0] ?? 0) !== expected)
        throw uiError("not_foreground", "The keyboard focus left the target window.");
      requireXTestRoute(this.x);
      if (n.XGrabKeyboard(dpy, this.x.root, 0, GRAB_MODE_ASYNC, GRAB_MODE_ASYNC, 0) !== GRAB_SUCCESS)
        throw uiError("input_grabbed");
      n.XUngrabKeyboard(dpy, 0);
      requireNoPassiveKeyGrab(this.x, Number(expected), presses);
      send();
    } finally {
      n.XUngrabServer(dpy);
      this.flush();
    }
  }

  async keyUp(key: LogicalKey): Promise<void> {
    const kc = this.keycodeForKey(key);
    try {
      this.x.n.XTestFakeKeyEvent(this.x.dpy, kc, 0, 0);
      this.flush();
    } finally {
      this.autoRepeatRestore(kc);
    }
  }

  /**
   * Recorded in the ledger before it happens (like a press): a worker killed mid hold leaves the
   * key without auto-repeat, and the guardian turns it back on (x11Releaser.ts).
   */
  private async autoRepeatOff(kc: number): Promise<void> {
    if (this.repeatRestore.has(kc) || !keyAutoRepeats(this.x.n, this.x.dpy, kc)) return;
    await this.ledger.hold([{ kind: "repeat", code: kc }]);
    this.setAutoRepeat(kc, false);
    this.repeatRestore.add(kc);
  }

  private autoRepeatRestore(kc: number): void {
    if (!this.repeatRestore.delete(kc)) return;
    this.setAutoRepeat(kc, true);
    this.ledger.release([{ kind: "repeat", code: kc }]);
  }

  private setAutoRepeat(kc: number, on: boolean): void {
    setKeyAutoRepeat(this.x.n, this.x.dpy, kc, on);
    this.flush();
  }

  private loadKeymap(): Keymap {
    if (this.keymap) return this.keymap;
    const n = this.x.n;
    const min = [0];
    const max = [0];
    n.XDisplayKeycodes(this.x.dpy, min, max);
    const [minKc = 0] = min;
    const [maxKc = 0] = max;
    const count = maxKc - minKc + 1;
    const per = [0];
    const p = n.XGetKeyboardMapping(this.x.dpy, minKc, count, per);
    if (p === null || p === 0n) throw uiError("platform_unavailable", "The keyboard mapping is unavailable.");
    let syms: bigint[];
    try {
      const raw = koffi.decode(p, "unsigned long", count * (per[0] ?? 0)) as ArrayLike<bigint | number>;
      syms = Array.from(raw, (v) => BigInt(v));
    } finally {
      n.XFree(p);
    }
    this.keymap = { min: minKc, max: maxKc, per: per[0] ?? 0, syms };
    return this.keymap;
  }

  /** Keycode and whether Shift is needed for a keysym in the current keymap, or null. */
  private lookup(km: Keymap, ks: number): { kc: number; shift: boolean } | null {
    const want = BigInt(ks);
    for (let kc = km.min; kc <= km.max; kc++) {
      const base = (kc - km.min) * km.per;
      if (km.syms[base] === want) return { kc, shift: false };
      if (km.per > 1 && km.syms[base + 1] === want) return { kc, shift: true };
    }
    return null;
  }

  /**
   * The key presses typing `text` makes: each mapped character's keycode (after Shift where it
   * needs it), and every spare keycode when some character needs a remap.
   */
  private pressesOf(km: Keymap, text: string, shiftKc: number, spare: readonly number[]): KeyPress[] {
    const out: KeyPress[] = [];
    let remaps = false;
    for (const ch of text) {
      const found = this.lookup(km, keysymForChar(ch.codePointAt(0) ?? 0));
      if (found && (!found.shift || shiftKc !== 0)) {
        if (found.shift) out.push({ kc: shiftKc, shifted: false });
        out.push({ kc: found.kc, shifted: found.shift });
      } else remaps = true;
    }
    if (remaps) for (const kc of spare) out.push({ kc, shifted: false });
    return out;
  }

  private spareKeycodes(km: Keymap): number[] {
    const out: number[] = [];
    for (let kc = km.max; kc >= km.min && out.length < MAX_SPARE; kc--) {
      const base = (kc - km.min) * km.per;
      let empty = true;
      for (let i = 0; i < km.per; i++) if (km.syms[base + i] !== 0n) empty = false;
      if (empty) out.push(kc);
    }
    return out;
  }

  /**
   * One character's key events, sent at once under the last focus check (whileFocusHolds).
   * `ahead`: further presses of the text the passive-grab probe covers now as well (the first
   * character's check covers the whole text, so a grabbed key refuses it before anything is typed).
   */
  private tap(
    kc: number,
    shift: boolean,
    shiftKc: number,
    proof: LiveProof | null | undefined,
    ahead: readonly KeyPress[] = [],
  ): void {
    // Before each character: a dialog of ours that opened mid-text gets none of it.
    dialogGate.assertNoDialog();
    const n = this.x.n;
    const presses: KeyPress[] = [
      ...(shift
        ? [
            { kc: shiftKc, shifted: false },
            { kc, shifted: true },
          ]
        : [{ kc, shifted: false }]),
      ...ahead,
    ];
    this.whileFocusHolds(
      () => {
        if (shift) n.XTestFakeKeyEvent(this.x.dpy, shiftKc, 1, 0);
        n.XTestFakeKeyEvent(this.x.dpy, kc, 1, 0);
        n.XTestFakeKeyEvent(this.x.dpy, kc, 0, 0);
        if (shift) n.XTestFakeKeyEvent(this.x.dpy, shiftKc, 0, 0);
      },
      proof,
      presses,
    );
  }

  async typeText(
    _hwnd: string,
    text: string,
    _mode: TextMode,
    beforeEachKey?: () => Promise<LiveProof | null | undefined>,
  ): Promise<void> {
    // The mode (SendInput vs WM_CHAR) is a Win32 distinction; on X11 both inject key events.
    const km = this.loadKeymap();
    const shiftKc = this.x.n.XKeysymToKeycode(this.x.dpy, SHIFT_KEYSYM);
    const spare = this.spareKeycodes(km);
    const remaps: Remaps = { spare, next: 0, remapped: new Map(), byKeysym: new Map() };
    const taps = this.pressableKeycodes(km, text, shiftKc, spare);
    // Every press of the text, for the first character's passive-grab probe.
    let ahead: KeyPress[] | null = this.pressesOf(km, text, shiftKc, spare);
    const takeAhead = (): KeyPress[] => {
      const all = ahead ?? [];
      ahead = null;
      return all;
    };
    await this.ledger.hold(taps);
    try {
      for (const ch of text) {
        const ks = keysymForChar(ch.codePointAt(0) ?? 0);
        const found = this.lookup(km, ks);
        if (found && (!found.shift || shiftKc !== 0)) {
          const proof = await beforeEachKey?.();
          this.tap(found.kc, found.shift, shiftKc, proof, takeAhead());
          continue;
        }
        const kc = remaps.byKeysym.get(ks) ?? (await this.remapSpare(km, remaps, ks));
        const proof = await beforeEachKey?.();
        this.tap(kc, false, shiftKc, proof, takeAhead());
      }
      this.flush();
    } finally {
      await this.restoreRemaps(km, remaps.remapped);
      this.ledger.release(taps);
    }
  }

  /** Every keycode typing `text` may press (its characters', the spares', Shift): recorded first. */
  private pressableKeycodes(
    km: Keymap,
    text: string,
    shiftKc: number,
    spare: readonly number[],
  ): HeldEntry[] {
    const pressable = new Set<number>(spare);
    if (shiftKc !== 0) pressable.add(shiftKc);
    for (const ch of text) {
      const found = this.lookup(km, keysymForChar(ch.codePointAt(0) ?? 0));
      if (found) pressable.add(found.kc);
    }
    return [...pressable].map((code) => ({ kind: "keycode", code }));
  }

  /**
   * Maps keysym `ks` onto the next spare keycode (round robin), recorded in the guardian's ledger
   * before the keymap changes; a spare that held an earlier character is emptied first.
   */
  private async remapSpare(km: Keymap, remaps: Remaps, ks: number): Promise<number> {
    const n = this.x.n;
    const { spare, remapped, byKeysym } = remaps;
    if (spare.length === 0) throw uiError("platform_unavailable", "No spare keycode for this character.");
    const kc = spare[remaps.next % spare.length] ?? 0;
    remaps.next++;
    const old = remapped.get(kc);
    if (old !== undefined) {
      // Reusing a spare: let clients read the previous character first.
      byKeysym.delete(old);
      this.flush();
      await sleep(REMAP_SETTLE_MS);
      // Back to empty before the guardian's record changes: at every moment the keycode
      // holds the keysym the record names, or nothing, so a death in between leaves no
      // remap the guardian would not recognise as ours.
      n.XChangeKeyboardMapping(this.x.dpy, kc, km.per, new BigUint64Array(km.per), 1);
      this.flush();
      remapped.delete(kc);
      this.ledger.release([{ kind: "remap", code: kc, keysym: old }]);
    }
    const syms = new BigUint64Array(km.per).fill(BigInt(ks));
    await this.ledger.hold([{ kind: "remap", code: kc, keysym: ks }]);
    remapped.set(kc, ks);
    n.XChangeKeyboardMapping(this.x.dpy, kc, km.per, syms, 1);
    this.flush();
    byKeysym.set(ks, kc);
    return kc;
  }

  /** Empties every spare keycode typing remapped, then releases their ledger records. */
  private async restoreRemaps(km: Keymap, remapped: ReadonlyMap<number, number>): Promise<void> {
    if (remapped.size === 0) return;
    // Clients translate the key when they process it: give them a moment before restoring.
    this.flush();
    await sleep(REMAP_SETTLE_MS);
    for (const kc of remapped.keys()) {
      const syms = new BigUint64Array(km.per);
      this.x.n.XChangeKeyboardMapping(this.x.dpy, kc, km.per, syms, 1);
    }
    this.flush();
    this.ledger.release([...remapped].map(([code, keysym]) => ({ kind: "remap", code, keysym })));
  }
}

/** A press sent under the last look: whom it was meant for, and its recording, if any. */
interface SentPress {
  parties: PressParties;
  presses: PointerDeliveries | null;
  /** A passive grab on the WM's frame or the client's top-level could be another client's. */
  ambiguous: boolean;
}

/** Typing's remaps: the spare keycodes, the next to use, and what each holds now (both ways). */
interface Remaps {
  readonly spare: readonly number[];
  next: number;
  /** Spare keycode → keysym currently mapped there by us (restored in finally). */
  readonly remapped: Map<number, number>;
  readonly byKeysym: Map<number, number>;
}
