import { dialogGate } from "../../shared/dialogGate.js";
import { uiError } from "../../shared/errors.js";
import { sameRect } from "../../shared/geometry.js";
import { sameInstance } from "../../shared/identity.js";
import { isAllowedKey, isSystemChord, type Modifier } from "../../shared/keys.js";
import type { DesktopPort, InputPort, LiveProof, MouseButton, PressReceipt } from "../../shared/platform.js";
import type { TargetExpectation } from "../../shared/protocol.js";
import { sleep } from "../../shared/sleep.js";
import type { Handler, HandlerContext, HandlerTable } from "../handlers.js";
import { pointsInside, type VerifiedTarget, verifyTarget } from "../verify.js";

/** docs/spec.md §6 timing: move, 150 ms, verify, down, 50 ms, up. */
const SETTLE_MS = 150;
const PRESS_MS = 50;
/** Gap between the two clicks of a double click (well under any double-click time). */
const DOUBLE_CLICK_GAP_MS = 40;
/** How long "activate" focus mode tries to bring the window forward. */
const ACTIVATE_TIMEOUT_MS = 2000;
/** A held key is re-verified this often, so a focus change cuts the hold short. */
const HOLD_POLL_MS = 50;

type FocusMode = "passive" | "activate";

async function ensureForeground(
  desktop: DesktopPort,
  target: TargetExpectation,
  mode: FocusMode,
  signal: AbortSignal,
  points: ReadonlyArray<{ x: number; y: number }> = [],
): Promise<void> {
  // A dialog of ours that took the focus is the reason, not the lost focus.
  dialogGate.assertNoDialog();
  const w = await desktop.getWindow(target.hwnd);
  if (!w) throw uiError("target_gone");
  if (w.foreground || mode === "passive" || desktop.pointerWithoutFocus) return;
  // Identity first: never raise a window that is not the consented instance. A call that
  // will be refused anyway (a point outside the window) must not raise it either: nothing
  // is emitted for a rejected call. Occlusion is judged after activation.
  const { window, all } = await verifyTarget(desktop, target);
  await pointsInside(desktop, window, all, points, new Set(target.shown_before ?? []));
  await desktop.activateWindow(target.hwnd);
  const until = Date.now() + ACTIVATE_TIMEOUT_MS;
  while (Date.now() < until) {
    const now = await desktop.getWindow(target.hwnd);
    if (now?.foreground) return;
    await sleep(50, signal);
  }
}

/**
 * Before a press or a pointer move: identity, focus, points inside and uncovered, and no other
 * client's grab. While our own button is down the pointer is implicitly grabbed for the target,
 * so drag legs probe the keyboard only (another client cannot grab the pointer meanwhile).
 */
function check(
  ctx: HandlerContext,
  target: TargetExpectation,
  points: ReadonlyArray<{ x: number; y: number }>,
  pointerGrabProbe = true,
): Promise<VerifiedTarget> {
  return verifyTarget(ctx.platform.desktop, target, {
    requireForeground: !ctx.platform.desktop.pointerWithoutFocus,
    points,
    grabs: { keyboard: true, pointer: pointerGrabProbe },
  });
}

/**
 * Before every single key event: the window is still the consented instance, the input focus
 * is in it and nobody holds the keyboard. One call, so other per-event gates sit next to it.
 */
async function verifyKeyTarget(ctx: HandlerContext, target: TargetExpectation): Promise<LiveProof | null> {
  if (ctx.signal.aborted) throw ctx.signal.reason;
  const v = await verifyTarget(ctx.platform.desktop, target, {
    requireForeground: true,
    grabs: { keyboard: true },
  });
  return v.proof;
}

/** Keeps keys down for `ms`, re-verifying as it goes: a focus change ends the hold with its code. */
async function holdKeys(ms: number, ctx: HandlerContext, target: TargetExpectation): Promise<void> {
  const until = Date.now() + ms;
  for (let left = ms; left > 0; left = until - Date.now()) {
    await sleep(Math.min(HOLD_POLL_MS, left), ctx.signal);
    await verifyKeyTarget(ctx, target);
  }
}

const screenOf = (v: VerifiedTarget, x: number, y: number) => ({
  sx: v.window.rect[0] + x,
  sy: v.window.rect[1] + y,
});

/** A window that moved or resized between two steps of one gesture ends the gesture. */
function requireSameRect(before: VerifiedTarget, now: VerifiedTarget): void {
  if (!sameRect(before.window.rect, now.window.rect))
    throw uiError("target_changed", "The target window moved.");
}

/**
 * Presses and always releases a mouse button, even when the wait in between is cancelled. The
 * press is held to the proof of the check just before it.
 */
async function pressButton(
  input: InputPort,
  button: MouseButton,
  signal: AbortSignal,
  proof: LiveProof | null,
  proveDelivery = false,
): Promise<PressReceipt | null> {
  dialogGate.assertNoDialog();
  const receipt = await input.buttonDown(button, proof, proveDelivery);
  try {
    await sleep(PRESS_MS, signal);
  } finally {
    await input.buttonUp(button);
  }
  return receipt;
}

const pointer: Handler<"input.pointer"> = async (args, ctx) => {
  const { input, desktop } = ctx.platform;
  const p = [{ x: args.x, y: args.y }];
  if (args.kind === "scroll" && args.notches === 0)
    throw uiError("invalid_argument", "notches must be ±1…20.");
  await ensureForeground(desktop, args.target, args.focus_mode, ctx.signal, p);
  const first = await check(ctx, args.target, p);
  const { sx, sy } = screenOf(first, args.x, args.y);
  await input.moveTo(sx, sy);
  if (args.kind === "hover") {
    await sleep(args.dwell_ms, ctx.signal);
    return { screen_x: sx, screen_y: sy };
  }
  await sleep(SETTLE_MS, ctx.signal);
  const last = await check(ctx, args.target, p);
  requireSameRect(first, last);
  const prove = args.prove_delivery;
  const receipts: Array<PressReceipt | null> = [];
  switch (args.kind) {
    case "scroll":
      dialogGate.assertNoDialog();
      await input.wheel(args.notches, last.proof);
      break;
    case "click":
      receipts.push(await pressButton(input, "left", ctx.signal, last.proof, prove));
      break;
    case "right_click":
      receipts.push(await pressButton(input, "right", ctx.signal, last.proof, prove));
      break;
    case "double_click": {
      receipts.push(await pressButton(input, "left", ctx.signal, last.proof, prove));
      await sleep(DOUBLE_CLICK_GAP_MS, ctx.signal);
      const again = await check(ctx, args.target, p);
      requireSameRect(first, again);
      receipts.push(await pressButton(input, "left", ctx.signal, again.proof, prove));
      break;
    }
  }
  // Where the platform could not tell (null), nothing is claimed either way.
  const known = receipts.filter((r): r is PressReceipt => r !== null);
  return {
    screen_x: sx,
    screen_y: sy,
    ...(prove && known.length > 0 && known.length === receipts.length
      ? { delivered: known.every((r) => r.delivered) }
      : {}),
  };
};

const drag: Handler<"input.drag"> = async (args, ctx) => {
  const { input, desktop } = ctx.platform;
  await ensureForeground(desktop, args.target, args.focus_mode, ctx.signal, args.points);
  // Every waypoint must be inside and uncovered before anything moves.
  const first = await check(ctx, args.target, args.points);
  const [start, ...rest] = args.points;
  const s = screenOf(first, start.x, start.y);
  await input.moveTo(s.sx, s.sy);
  await sleep(SETTLE_MS, ctx.signal);
  const atStart = await check(ctx, args.target, args.points);
  requireSameRect(first, atStart);
  dialogGate.assertNoDialog();
  await input.buttonDown("left", atStart.proof);
  let legs = 0;
  try {
    for (const p of rest) {
      // Re-verify before each leg: a window that moved, lost focus, got covered, was replaced
      // or another client grabbed the keyboard stops the drag (the button is released below).
      const v = await check(ctx, args.target, [p], false);
      requireSameRect(first, v);
      const leg = screenOf(v, p.x, p.y);
      dialogGate.assertNoDialog();
      await input.moveTo(leg.sx, leg.sy);
      legs += 1;
      await sleep(PRESS_MS, ctx.signal);
    }
  } finally {
    await input.buttonUp("left");
  }
  return { legs };
};

const text: Handler<"input.text"> = async (args, ctx) => {
  if (args.text.includes("\u0000")) throw uiError("invalid_argument", "Text must not contain NUL.");
  const { input, desktop } = ctx.platform;
  await ensureForeground(desktop, args.target, args.focus_mode, ctx.signal);
  // Verified before every character, not per chunk: the first key after a focus change (or a
  // dialog of ours appearing) is refused. The platform port checks the dialog gate again per key.
  await input.typeText(args.target.hwnd, args.text, args.mode, async () => {
    dialogGate.assertNoDialog();
    return verifyKeyTarget(ctx, args.target);
  });
  return { chars: args.text.length };
};

/** Releases in reverse order of pressing, whatever failed; one failed release does not stop the rest. */
async function releaseKeys(input: InputPort, pressed: readonly string[]): Promise<void> {
  let failure: unknown = null;
  for (const k of [...pressed].reverse()) {
    try {
      await input.keyUp(k);
    } catch (e) {
      failure ??= e;
    }
  }
  if (failure !== null) throw failure;
}

const keys: Handler<"input.keys"> = async (args, ctx) => {
  // Resolve every step before anything is emitted.
  for (const step of args.steps) {
    if (!isAllowedKey(step.key)) throw uiError("invalid_argument", "A key is not on the allow-list.");
    if (new Set(step.modifiers).size !== step.modifiers.length)
      throw uiError("invalid_argument", "Repeated modifier.");
    if (isSystemChord(step.modifiers as Modifier[], step.key))
      throw uiError("invalid_argument", "System chords are refused.");
  }
  const { input, desktop } = ctx.platform;
  await ensureForeground(desktop, args.target, args.focus_mode, ctx.signal);
  let done = 0;
  for (const step of args.steps) {
    const pressed: string[] = [];
    try {
      for (const k of [...step.modifiers, step.key]) {
        const proof = await verifyKeyTarget(ctx, args.target);
        dialogGate.assertNoDialog();
        await input.keyDown(k, proof);
        pressed.push(k);
      }
      await holdKeys(step.hold_ms, ctx, args.target);
    } finally {
      await releaseKeys(input, pressed);
    }
    done += 1;
  }
  return { steps: done };
};

const close: Handler<"input.close"> = async (args, ctx) => {
  await verifyTarget(ctx.platform.desktop, args.target);
  await ctx.platform.desktop.closeWindow(args.target.hwnd);
  return {};
};

const restore: Handler<"input.restore"> = async (args, ctx) => {
  const { desktop } = ctx.platform;
  const all = await desktop.listWindows();
  const w = all.find((x) => x.hwnd === args.target.hwnd);
  if (!w) throw uiError("target_gone");
  // Identity only: a minimized window is exactly what this is for.
  if (!w.instance || !sameInstance(w.instance, args.target.instance)) throw uiError("target_changed");
  if (w.iconic) await desktop.restoreWindow(args.target.hwnd);
  return { was_iconic: w.iconic };
};

/** The platform's portal sessions, where its compositor's portal is the second consent gate. */
export function portalsOf(ctx: HandlerContext): NonNullable<HandlerContext["platform"]["portals"]> {
  if (!ctx.platform.portals) throw uiError("platform_unavailable", "This platform has no portal dialog.");
  return ctx.platform.portals;
}

export const inputHandlers: HandlerTable = {
  "input.pointer": pointer,
  "input.drag": drag,
  "input.text": text,
  "input.keys": keys,
  "input.close": close,
  "input.restore": restore,
  "portal.open": async (args, ctx) => portalsOf(ctx).open(args.hwnd, args.timeout_ms, ctx.signal),
  "portal.wait_end": async (args, ctx) => ({
    why: await portalsOf(ctx).waitEnd(args.session_id, ctx.signal),
  }),
  "portal.close": async (args, ctx) => ({ closed: await portalsOf(ctx).close(args.session_id) }),

  "dialog.consent": async (args, ctx) => {
    if (!ctx.platform.dialog)
      throw uiError("platform_unavailable", "This platform has no native consent dialog.");
    return { answer: await ctx.platform.dialog.consent(args.text, ctx.signal) };
  },
};
