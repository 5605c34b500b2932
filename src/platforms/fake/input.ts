import type { InputPort, LogicalKey, MouseButton, TextMode } from "../../shared/platform.js";
import { type FakeContext, requireWindow } from "./context.js";
import { topWindowAt } from "./render.js";

/**
 * Simulated SendInput/XTest: every call appends one effects line. A fault is suffered by the
 * window the event would reach: the one under the point (move) or under the cursor (buttons,
 * wheel), the foreground window (keys), the named window (text).
 */
export class FakeInput implements InputPort {
  private x: number | null = null;
  private y: number | null = null;

  constructor(private readonly ctx: FakeContext) {}

  async moveTo(x: number, y: number): Promise<void> {
    await this.ctx.touch(topWindowAt(this.ctx.scenario(), x, y));
    this.x = x;
    this.y = y;
    this.ctx.effects.append({ type: "move", x, y });
    await this.slowPath();
  }

  async buttonDown(button: MouseButton): Promise<void> {
    await this.touchCursor();
    this.ctx.effects.append({ type: "button_down", button });
    await this.slowPath();
  }

  async buttonUp(button: MouseButton): Promise<void> {
    await this.touchCursor();
    this.ctx.effects.append({ type: "button_up", button });
    await this.slowPath();
  }

  async wheel(notches: number): Promise<void> {
    await this.touchCursor();
    this.ctx.effects.append({ type: "wheel", notches });
    await this.slowPath();
  }

  async keyDown(key: LogicalKey): Promise<void> {
    await this.touchForeground();
    this.ctx.effects.append({ type: "key_down", key });
    await this.slowPath();
  }

  async keyUp(key: LogicalKey): Promise<void> {
    await this.touchForeground();
    this.ctx.effects.append({ type: "key_up", key });
    await this.slowPath();
  }

  async typeText(hwnd: string, text: string, mode: TextMode): Promise<void> {
    const w = requireWindow(this.ctx.scenario(), hwnd);
    await this.ctx.touch(w);
    this.ctx.effects.append({ type: "text", hwnd: String(w.hwnd), text, mode });
    await this.slowPath();
  }

  /** The scenario's input_delay_ms: room for a test to act between the events of a gesture. */
  private async slowPath(): Promise<void> {
    const ms = this.ctx.scenario().input_delay_ms ?? 0;
    if (ms > 0) await new Promise((r) => setTimeout(r, ms));
  }

  private async touchCursor(): Promise<void> {
    if (this.x === null || this.y === null) return;
    await this.ctx.touch(topWindowAt(this.ctx.scenario(), this.x, this.y));
  }

  private async touchForeground(): Promise<void> {
    const s = this.ctx.scenario();
    if (s.foreground === null) return;
    await this.ctx.touch(s.windows.find((w) => w.hwnd === s.foreground));
  }
}
