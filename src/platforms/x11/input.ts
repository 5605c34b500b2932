import koffi from "koffi";
import { type HeldEntry, NO_LEDGER, type PressLedger } from "../../guardian/entries.js";
import { intEnv } from "../../shared/env.js";
import { uiError } from "../../shared/errors.js";
import type { InputPort, LogicalKey, MouseButton, TextMode } from "../../shared/platform.js";
import { keysymForChar, keysymForKey, SHIFT_KEYSYM } from "./keys.js";
import type { XConnection } from "./xconn.js";

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
const REMAP_SETTLE_MS = intEnv(process.env, "UIINSPECT_X11_REMAP_SETTLE_MS", 300, 10, 5000);
const MAX_SPARE = 16;

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
  private readonly ledger: PressLedger;

  constructor(x: XConnection, ledger: PressLedger = NO_LEDGER) {
    this.x = x;
    this.ledger = ledger;
    const zero = (): number[] => [0];
    if (x.n.XTestQueryExtension(x.dpy, zero(), zero(), zero(), zero()) === 0) {
      throw uiError("platform_unavailable", "The XTest extension is not available.");
    }
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

  async buttonDown(button: MouseButton): Promise<void> {
    this.x.n.XTestFakeButtonEvent(this.x.dpy, BUTTONS[button], 1, 0);
    this.flush();
  }

  async buttonUp(button: MouseButton): Promise<void> {
    this.x.n.XTestFakeButtonEvent(this.x.dpy, BUTTONS[button], 0, 0);
    this.flush();
  }

  async wheel(notches: number): Promise<void> {
    if (!Number.isInteger(notches)) throw uiError("invalid_argument");
    const button = notches > 0 ? 4 : 5;
    for (let i = 0; i < Math.abs(notches); i++) {
      this.x.n.XTestFakeButtonEvent(this.x.dpy, button, 1, 0);
      this.x.n.XTestFakeButtonEvent(this.x.dpy, button, 0, 0);
    }
    this.flush();
  }

  private keycodeForKey(key: LogicalKey): number {
    const ks = keysymForKey(key);
    if (ks === null) throw uiError("invalid_argument", "The key is not allow-listed.");
    const kc = this.x.n.XKeysymToKeycode(this.x.dpy, ks);
    if (kc === 0) throw uiError("platform_unavailable", "The key has no keycode on this keyboard.");
    return kc;
  }

  async keyDown(key: LogicalKey): Promise<void> {
    this.x.n.XTestFakeKeyEvent(this.x.dpy, this.keycodeForKey(key), 1, 0);
    this.flush();
  }

  async keyUp(key: LogicalKey): Promise<void> {
    this.x.n.XTestFakeKeyEvent(this.x.dpy, this.keycodeForKey(key), 0, 0);
    this.flush();
  }

  private loadKeymap(): Keymap {
    if (this.keymap) return this.keymap;
    const n = this.x.n;
    const min = [0];
    const max = [0];
    n.XDisplayKeycodes(this.x.dpy, min, max);
    const count = max[0]! - min[0]! + 1;
    const per = [0];
    const p = n.XGetKeyboardMapping(this.x.dpy, min[0]!, count, per);
    if (p === null || p === 0n) throw uiError("platform_unavailable", "The keyboard mapping is unavailable.");
    let syms: bigint[];
    try {
      const raw = koffi.decode(p, "unsigned long", count * per[0]!) as ArrayLike<bigint | number>;
      syms = Array.from(raw, (v) => BigInt(v));
    } finally {
      n.XFree(p);
    }
    this.keymap = { min: min[0]!, max: max[0]!, per: per[0]!, syms };
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

  private tap(kc: number, shift: boolean, shiftKc: number): void {
    const n = this.x.n;
    if (shift) n.XTestFakeKeyEvent(this.x.dpy, shiftKc, 1, 0);
    n.XTestFakeKeyEvent(this.x.dpy, kc, 1, 0);
    n.XTestFakeKeyEvent(this.x.dpy, kc, 0, 0);
    if (shift) n.XTestFakeKeyEvent(this.x.dpy, shiftKc, 0, 0);
  }

  async typeText(_hwnd: string, text: string, _mode: TextMode): Promise<void> {
    // The mode (SendInput vs WM_CHAR) is a Win32 distinction; on X11 both inject key events.
    const n = this.x.n;
    const km = this.loadKeymap();
    const shiftKc = n.XKeysymToKeycode(this.x.dpy, SHIFT_KEYSYM);
    const spare = this.spareKeycodes(km);
    // Spare keycode → keysym currently mapped there by us (restored in finally).
    const remapped = new Map<number, number>();
    const byKeysym = new Map<number, number>();
    let next = 0;
    // Every keycode this chunk may press (its characters', the spares', Shift): recorded first.
    const pressable = new Set<number>(spare);
    if (shiftKc !== 0) pressable.add(shiftKc);
    for (const ch of text) {
      const found = this.lookup(km, keysymForChar(ch.codePointAt(0)!));
      if (found) pressable.add(found.kc);
    }
    const taps: HeldEntry[] = [...pressable].map((code) => ({ kind: "keycode", code }));
    await this.ledger.hold(taps);
    try {
      for (const ch of text) {
        const cp = ch.codePointAt(0)!;
        const ks = keysymForChar(cp);
        const found = this.lookup(km, ks);
        if (found && (!found.shift || shiftKc !== 0)) {
          this.tap(found.kc, found.shift, shiftKc);
          continue;
        }
        let kc = byKeysym.get(ks);
        if (kc === undefined) {
          if (spare.length === 0)
            throw uiError("platform_unavailable", "No spare keycode for this character.");
          kc = spare[next % spare.length]!;
          next++;
          const old = remapped.get(kc);
          if (old !== undefined) {
            // Reusing a spare: let clients read the previous character first.
            byKeysym.delete(old);
            this.flush();
            await sleep(REMAP_SETTLE_MS);
          }
          const syms = new BigUint64Array(km.per).fill(BigInt(ks));
          if (old !== undefined) this.ledger.release([{ kind: "remap", code: kc, keysym: old }]);
          await this.ledger.hold([{ kind: "remap", code: kc, keysym: ks }]);
          remapped.set(kc, ks);
          n.XChangeKeyboardMapping(this.x.dpy, kc, km.per, syms, 1);
          this.flush();
          byKeysym.set(ks, kc);
        }
        this.tap(kc, false, shiftKc);
      }
      this.flush();
    } finally {
      if (remapped.size > 0) {
        // Clients translate the key when they process it: give them a moment before restoring.
        this.flush();
        await sleep(REMAP_SETTLE_MS);
        for (const kc of remapped.keys()) {
          const syms = new BigUint64Array(km.per);
          n.XChangeKeyboardMapping(this.x.dpy, kc, km.per, syms, 1);
        }
        this.flush();
        this.ledger.release([...remapped].map(([code, keysym]) => ({ kind: "remap", code, keysym })));
      }
      this.ledger.release(taps);
    }
  }
}
