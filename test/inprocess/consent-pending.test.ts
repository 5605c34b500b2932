import { describe, expect, it } from "vitest";
import { closeServersAfterEach, Desk, serve, until, win } from "../support/consent.js";

// Input while our dialog is open, on the simulated desktop (in process, test/support/inProcess.ts): while one of our consent dialogs is
// open, no input effect of ours is emitted (consent_pending), checked before every key and button
// event; one client's input effects never interleave.

closeServersAfterEach();

type Harness = Awaited<ReturnType<typeof serve>>;
/** "text" is a protected class: each send_text needs its own confirmation token. */
async function textToken(h: Harness, hwnd: number): Promise<string> {
  return String((await h.ok("request_confirmation", { hwnd, action_class: "text" })).token_id);
}

type Effect = Record<string, unknown>;
const inputTypes = new Set(["move", "button_down", "button_up", "wheel", "key_down", "key_up", "text"]);
const inputOnly = (fx: Effect[]) => fx.filter((e) => inputTypes.has(String(e.type)));

/** Every pressed key was released, in the effects from `from`. */
function allReleased(fx: Effect[]): boolean {
  const down = new Map<string, number>();
  for (const e of fx) {
    if (e.type === "key_down") down.set(String(e.key), (down.get(String(e.key)) ?? 0) + 1);
    if (e.type === "key_up") down.set(String(e.key), (down.get(String(e.key)) ?? 0) - 1);
  }
  return [...down.values()].every((n) => n === 0);
}

describe("no input of ours while a consent dialog is open", () => {
  it("send_text, send_key, send_key_sequence and click are refused with consent_pending, nothing emitted", async () => {
    const desk = new Desk([win(1), win(2)], { answer: "approve", delay_ms: 0 });
    const h = await serve(desk);
    await h.ok("request_access", { hwnd: 1001 });
    desk.set({ consent: { answer: "approve", delay_ms: 4000 } });
    const pendingAccess = h.call("request_access", { hwnd: 1002, capabilities: ["observe"] });
    await until(() => desk.prompts().length === 2, "the second dialog");
    const token = await textToken(h, 1001);
    const from = desk.effects().length;
    const calls = await Promise.all([
      h.call("send_text", { hwnd: 1001, text: "\tab c\n", confirmation_token: token }),
      h.call("send_key", { hwnd: 1001, key: "enter" }),
      h.call("send_key_sequence", { hwnd: 1001, keys: ["tab", "space"] }),
      h.call("click_window", { hwnd: 1001, x: 40, y: 80 }),
    ]);
    for (const r of calls) expect(r.code, JSON.stringify(r.structured)).toBe("consent_pending");
    expect(inputOnly(desk.effects().slice(from))).toEqual([]);
    expect((await pendingAccess).structured.decision).toBe("approved");
    // The dialog is gone: input works again.
    const after = await h.call("send_key", { hwnd: 1001, key: "enter" });
    expect(after.isError, JSON.stringify(after.structured)).toBe(false);
  });

  it.each([
    ["thread", "shared memory"],
    ["process", "dialog_state messages"],
  ])(
    "a key sequence in flight stops before its next key once a dialog opens, every key released (%s workers: %s)",
    async (isolation) => {
      const desk = new Desk([win(1), win(2)], { answer: "approve", delay_ms: 0 });
      const h = await serve(desk, { env: { UIINSPECT_WORKER_ISOLATION: isolation } });
      await h.ok("request_access", { hwnd: 1001 });
      desk.set({ consent: { answer: "deny", delay_ms: 3000 } });
      const from = desk.effects().length;
      const keys = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"];
      const sequence = h.call("send_key_sequence", { hwnd: 1001, keys, hold_ms: 400 });
      // The dialog opens while the sequence holds its first keys.
      await until(
        () =>
          desk
            .effects()
            .slice(from)
            .some((e) => e.type === "key_down"),
        "the first key",
      );
      const access = h.call("request_access", { hwnd: 1002, capabilities: ["observe"] });
      await until(() => desk.prompts().length === 2, "the dialog");
      const r = await sequence;
      expect(r.code, JSON.stringify(r.structured)).toBe("consent_pending");
      const fx = desk.effects().slice(from);
      expect(fx.filter((e) => e.type === "key_down").length).toBeLessThan(keys.length);
      expect(allReleased(fx)).toBe(true);
      expect((await access).structured.decision).toBe("denied");
    },
  );

  it("one client's concurrent gestures run one after the other, never interleaved", async () => {
    const desk = new Desk([win(1)], { answer: "approve", delay_ms: 0 });
    const h = await serve(desk);
    await h.ok("request_access", { hwnd: 1001 });
    const text = "x".repeat(32 * 4);
    const t1 = await textToken(h, 1001);
    const from = desk.effects().length;
    // Two key sequences (each several presses, with holds) and a text, all at once: without
    // serialization the sequences' key events interleave.
    const results = await Promise.all([
      h.call("send_key_sequence", { hwnd: 1001, keys: ["a", "b", "c"], hold_ms: 30 }),
      h.call("send_text", { hwnd: 1001, text, confirmation_token: t1 }),
      h.call("send_key_sequence", { hwnd: 1001, keys: ["x", "y", "z"], hold_ms: 30 }),
    ]);
    for (const r of results) expect(r.isError, JSON.stringify(r.structured)).toBe(false);
    const gestureOf = (e: Effect) =>
      e.type === "text" ? "t" : ["a", "b", "c"].includes(String(e.key)) ? "A" : "X";
    const kinds = inputOnly(desk.effects().slice(from)).map(gestureOf);
    // Each gesture's effects are one contiguous run: A… | t | X… in some order.
    const runs = kinds.join("").match(/(t+|A+|X+)/g) ?? [];
    expect(runs).toHaveLength(3);
    expect(kinds.filter((k) => k === "A")).toHaveLength(6);
    expect(kinds.filter((k) => k === "X")).toHaveLength(6);
  });
});

describe("desktop-shell chords are refused like system chords", () => {
  it.each([
    [["alt"], "f1"],
    [["alt"], "f2"],
    [["alt"], "f3"],
    [["alt", "shift"], "left"],
    [["alt", "shift"], "up"],
    [["alt"], "f7"],
  ])("%j+%s", async (modifiers, key) => {
    const desk = new Desk([win(1)], { answer: "approve", delay_ms: 0 });
    const h = await serve(desk);
    await h.ok("request_access", { hwnd: 1001 });
    const from = desk.effects().length;
    const r = await h.call("send_key", { hwnd: 1001, key, modifiers });
    expect(r.code).toBe("invalid_argument");
    expect(inputOnly(desk.effects().slice(from))).toEqual([]);
  });
});
