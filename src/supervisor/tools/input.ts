import { z } from "zod";
import { uiError } from "../../shared/errors.js";
import { isAllowedKey, isSystemChord, MODIFIERS } from "../../shared/keys.js";
import { defineHwndTool, defineWindowTool } from "./define.js";

const Coord = z.number().int().min(0).max(65_535);

const KeyName = z
  .string()
  .transform((k) => k.toLowerCase())
  .refine(isAllowedKey, { message: "Key is not on the allow-list." });
const Modifiers = z
  .array(z.enum(MODIFIERS))
  .max(2)
  .refine((m) => new Set(m).size === m.length, { message: "Repeated modifier." });
const MAX_TEXT_UNITS = 4096;
const HoldMs = z.number().int().min(0).max(5000).default(80);

const PointerOutput = z.object({ screen_x: z.number().int(), screen_y: z.number().int() });

type Modifier = z.output<typeof Modifiers>[number];

/** A sequence's keys as steps (a bare key name has no modifiers). */
function keySteps(keys: readonly (string | { key: string; modifiers: Modifier[] })[], holdMs: number) {
  return keys.map((k) =>
    typeof k === "string"
      ? { key: k, modifiers: [] as Modifier[], hold_ms: holdMs }
      : { key: k.key, modifiers: k.modifiers, hold_ms: holdMs },
  );
}

/** Ctrl+Alt+Delete and the like go to the OS, not the window: refused before any budget is taken. */
function refuseSystemChords(steps: readonly { key: string; modifiers: readonly Modifier[] }[]): void {
  for (const s of steps)
    if (isSystemChord([...s.modifiers], s.key))
      throw uiError("invalid_argument", "System chords are refused.");
}

function pointerTool(
  name: "click_window" | "double_click_window" | "right_click_window",
  kind: "click" | "double_click" | "right_click",
  title: string,
) {
  return defineWindowTool({
    name,
    title,
    description: `${title} at window-relative (x, y), re-verified just before.`,
    capability: "click",
    budget: "action",
    args: { x: Coord, y: Coord },
    output: PointerOutput,
    effect: "destructive",
    uses: ["input"],
    handler: async (call, args) => {
      const r = await call.input.press("input.pointer", {
        target: call.target.expectation,
        kind,
        x: args.x,
        y: args.y,
        focus_mode: call.input.focusMode,
      });
      return { structured: r };
    },
  });
}

export const inputTools = [
  pointerTool("click_window", "click", "Left click"),
  pointerTool("double_click_window", "double_click", "Double click"),
  pointerTool("right_click_window", "right_click", "Right click"),

  defineWindowTool({
    name: "hover_window",
    title: "Hover",
    description: "Moves the pointer to window-relative (x, y) and dwells (≤ 10 s).",
    capability: "hover",
    budget: "action",
    args: {
      x: Coord,
      y: Coord,
      dwell_ms: z.number().int().min(0).max(10_000).default(400),
    },
    output: PointerOutput,
    effect: "effect",
    uses: ["input"],
    handler: async (call, args) => {
      const r = await call.input.press(
        "input.pointer",
        {
          target: call.target.expectation,
          kind: "hover",
          x: args.x,
          y: args.y,
          dwell_ms: args.dwell_ms,
          focus_mode: call.input.focusMode,
        },
        call.input.deadlineMs + args.dwell_ms,
      );
      return { structured: r };
    },
  }),

  defineWindowTool({
    name: "scroll_window",
    title: "Scroll",
    description: "Wheel notches (±1…20, positive = up) at window-relative (x, y).",
    capability: "click",
    budget: "action",
    args: {
      x: Coord,
      y: Coord,
      notches: z
        .number()
        .int()
        .min(-20)
        .max(20)
        .refine((n) => n !== 0, { message: "notches must be ±1…20" })
        .default(1),
    },
    output: PointerOutput,
    effect: "effect",
    uses: ["input"],
    handler: async (call, args) => {
      call.counters.notches = args.notches;
      const r = await call.input.press("input.pointer", {
        target: call.target.expectation,
        kind: "scroll",
        x: args.x,
        y: args.y,
        notches: args.notches,
        focus_mode: call.input.focusMode,
      });
      return { structured: r };
    },
  }),

  defineWindowTool({
    name: "drag_window",
    title: "Drag",
    description: "Left-button drag through ≤ 16 waypoints, re-verified before each leg.",
    capability: "drag",
    budget: "action",
    args: {
      start_x: Coord,
      start_y: Coord,
      end_x: Coord,
      end_y: Coord,
      path: z
        .array(z.object({ x: Coord, y: Coord }).strict())
        .max(16)
        .optional(),
    },
    output: z.object({ legs: z.number().int() }),
    effect: "destructive",
    uses: ["input"],
    handler: async (call, args) => {
      const points = [
        { x: args.start_x, y: args.start_y },
        ...(args.path ?? []),
        { x: args.end_x, y: args.end_y },
      ];
      call.counters.waypoints = args.path?.length ?? 0;
      // The gesture's own waits (150 ms settle, 50 ms per leg) come on top of the deadline.
      const r = await call.input.press(
        "input.drag",
        { target: call.target.expectation, points, focus_mode: call.input.focusMode },
        call.input.deadlineMs + 150 + points.length * 60,
      );
      return { structured: { legs: r.legs } };
    },
  }),

  defineWindowTool({
    name: "send_text",
    title: "Type text",
    description: "Types 1–4096 UTF-16 units into the focused control of the verified foreground window.",
    capability: "text",
    budget: "action",
    args: {
      // zod 4 counts string length in code points; the limit is in UTF-16 code units (what
      // SendInput types, and what the text budget and the audit's `chars` count).
      text: z
        .string()
        .min(1)
        .refine((t) => t.length <= MAX_TEXT_UNITS, { message: "Text is limited to 4096 UTF-16 code units." })
        .refine((t) => !t.includes("\u0000"), { message: "Text must not contain NUL." }),
    },
    output: z.object({ chars: z.number().int() }),
    effect: "destructive",
    cost: (args) => ({ textChars: args.text.length }),
    uses: ["input"],
    handler: async (call, args) => {
      call.counters.chars = args.text.length;
      if (call.signal.aborted) {
        // Cancelled while the chain resolved the target: nothing reached the input worker, so
        // the characters go back.
        call.charge?.refund();
        throw uiError("cancelled");
      }
      // Once the request is sent the characters stay charged whatever fails: the worker verifies
      // before each chunk, so a refusal (not_foreground, target_gone, …) may follow chunks already
      // typed, and a deadline, cancel or crash can come mid-chunk; no error says "nothing typed".
      const r = await call.input.press(
        "input.text",
        {
          target: call.target.expectation,
          text: args.text,
          mode: call.input.textMode,
          focus_mode: call.input.focusMode,
        },
        call.input.deadlineMs + args.text.length * 5,
      );
      return { structured: { chars: r.chars } };
    },
  }),

  defineWindowTool({
    name: "send_key",
    title: "Press a key",
    description:
      "One key (arrows, space, enter, esc, tab, backspace, delete, home, end, pageup, pagedown, a–z, 0–9, f1–f12), ≤ 2 of ctrl/shift/alt.",
    capability: "key",
    budget: "action",
    args: {
      key: KeyName,
      modifiers: Modifiers.default([]),
      hold_ms: HoldMs,
    },
    output: z.object({ steps: z.number().int() }),
    effect: "destructive",
    refuse: (args) => refuseSystemChords([args]),
    uses: ["input"],
    handler: async (call, args) => {
      call.counters.modifiers = args.modifiers.length;
      const r = await call.input.press(
        "input.keys",
        {
          target: call.target.expectation,
          steps: [{ key: args.key, modifiers: args.modifiers, hold_ms: args.hold_ms }],
          focus_mode: call.input.focusMode,
        },
        call.input.deadlineMs + args.hold_ms,
      );
      return { structured: { steps: r.steps } };
    },
  }),

  defineWindowTool({
    name: "send_key_sequence",
    title: "Press a key sequence",
    description: "Up to 10 key steps (as send_key), each re-verified.",
    capability: "key",
    budget: "action",
    args: {
      keys: z
        .array(z.union([KeyName, z.strictObject({ key: KeyName, modifiers: Modifiers.default([]) })]))
        .min(1)
        .max(10),
      hold_ms: HoldMs,
    },
    output: z.object({ steps: z.number().int() }),
    effect: "destructive",
    refuse: (args) => refuseSystemChords(keySteps(args.keys, args.hold_ms)),
    uses: ["input"],
    handler: async (call, args) => {
      const steps = keySteps(args.keys, args.hold_ms);
      call.counters.steps = steps.length;
      const r = await call.input.press(
        "input.keys",
        { target: call.target.expectation, steps, focus_mode: call.input.focusMode },
        call.input.deadlineMs + steps.length * (args.hold_ms + 100),
      );
      return { structured: { steps: r.steps } };
    },
  }),

  defineWindowTool({
    name: "close_window",
    title: "Close window",
    description: "Asks the window to close (never kills).",
    capability: "close",
    budget: "action",
    args: {},
    output: z.object({}),
    effect: "destructive",
    uses: ["input"],
    handler: async (call) => {
      await call.input.press("input.close", { target: call.target.expectation });
      return { structured: {} };
    },
  }),

  defineHwndTool({
    name: "restore_window",
    title: "Restore window",
    description: "Un-minimizes the window without focusing it.",
    capability: "observe",
    budget: "action",
    // By hwnd only (docs/spec.md §6): a minimized window is not in list_windows, so no title finds it.
    args: {},
    output: z.object({ was_minimized: z.boolean() }),
    effect: "idempotent_effect",
    uses: ["input"],
    handler: async (call) => {
      const r = await call.input.press("input.restore", { target: call.target.expectation });
      return { structured: { was_minimized: r.was_iconic } };
    },
  }),
];
