import { uiError } from "../../shared/errors.js";
import { intersect, offset, type Rect } from "../../shared/geometry.js";
import { type ProcessInstance, sameInstance } from "../../shared/identity.js";
import { pointOccluded, rectOccluded } from "../../shared/occlusion.js";
import {
  type CapturePort,
  type DesktopPort,
  type FrameTarget,
  frameFits,
  type LiveCheck,
  type LiveProof,
  NO_PROOF,
  type RawImage,
  type WindowInfo,
} from "../../shared/platform.js";
import { sleep } from "../../shared/sleep.js";
import { type FakeContext, findWindow, instanceOf, requireWindow, windowInfos } from "./context.js";
import { renderDesktop, windowsMeeting } from "./render.js";

export class FakeDesktop implements DesktopPort {
  readonly platform = "fake" as const;

  constructor(private readonly ctx: FakeContext) {}

  async listWindows(): Promise<WindowInfo[]> {
    const s = this.ctx.scenario();
    // Enumeration touches every window (a faulty one takes this worker down, as a hung or
    // crashing EnumWindows/GetWindowText would).
    await this.ctx.touchAll(s.windows);
    // After the touch: a fault fires at once, the answer comes late (a slow enumeration).
    if (s.listing_delay_ms) await sleep(s.listing_delay_ms);
    return windowInfos(s);
  }

  async getWindow(hwnd: string): Promise<WindowInfo | null> {
    const s = this.ctx.scenario();
    const w = findWindow(s, hwnd);
    if (w === null) return null;
    await this.ctx.touch(w);
    return windowInfos(s).find((i) => i.hwnd === String(w.hwnd)) ?? null;
  }

  /** The target and the visible windows above it that meet the region; only those are touched. */
  async targetAndCovers(hwnd: string, region: Rect): Promise<WindowInfo[]> {
    const s = this.ctx.scenario();
    const all = windowInfos(s);
    const target = all.find((w) => w.hwnd === hwnd);
    if (!target) return [];
    const onScreen = offset(region, target.rect[0], target.rect[1]);
    const shown = all.filter(
      (w) =>
        w === target || (w.z < target.z && w.visible && !w.iconic && intersect(w.rect, onScreen) !== null),
    );
    await this.ctx.touchAll(s.windows.filter((w) => shown.some((i) => i.hwnd === String(w.hwnd))));
    return shown;
  }

  async isInstanceAlive(instance: ProcessInstance): Promise<boolean> {
    const s = this.ctx.scenario();
    await this.ctx.touchAll(s.windows.filter((w) => w.pid === instance.pid));
    return s.windows.some((w) => sameInstance(instanceOf(s, w), instance));
  }

  async virtualScreen(): Promise<Rect> {
    const v = this.ctx.scenario().virtual_screen;
    return [v[0], v[1], v[2], v[3]];
  }

  async health(): Promise<Record<string, string | number | boolean | null>> {
    const ok = this.ctx.reader.loaded();
    return {
      platform: "fake",
      dpi_awareness: "per_monitor_v2 (simulated)",
      simulated: true,
      scenario_loaded: ok,
      windows: ok ? this.ctx.scenario().windows.length : null,
    };
  }

  /**
   * The simulated display server's own answer: the scenario as it is now (read again, not the
   * listing the caller judged), like the real ports ask their server right before an effect.
   */
  async confirmLive(target: WindowInfo, check: LiveCheck): Promise<LiveProof> {
    const s = this.ctx.scenario();
    const all = windowInfos(s);
    const now = all.find((w) => w.hwnd === target.hwnd);
    if (!now) throw uiError("target_gone");
    const grabs = s.grabs ?? {};
    if ((check.grabs.keyboard && grabs.keyboard) || (check.grabs.pointer && grabs.pointer))
      throw uiError("input_grabbed");
    for (const p of check.points) if (pointOccluded(all, now, p.x, p.y)) throw uiError("occluded");
    if (check.region && rectOccluded(all, now, check.region)) throw uiError("occluded");
    if (check.focus) {
      const front = all.find((w) => w.foreground);
      if (!front || front.pid !== now.pid) throw uiError("not_foreground");
    }
    return NO_PROOF;
  }

  async restoreWindow(hwnd: string): Promise<void> {
    await this.effect("restore", hwnd);
  }

  async activateWindow(hwnd: string): Promise<void> {
    await this.effect("activate", hwnd);
  }

  async closeWindow(hwnd: string): Promise<void> {
    await this.effect("close", hwnd);
  }

  async dispose(): Promise<void> {}

  /** Records the request; the scenario file belongs to the test, which decides what follows. */
  private async effect(type: "restore" | "activate" | "close", hwnd: string): Promise<void> {
    const w = requireWindow(this.ctx.scenario(), hwnd);
    await this.ctx.touch(w);
    this.ctx.effects.append({ type, hwnd: String(w.hwnd) });
  }
}

export class FakeCapture implements CapturePort {
  constructor(private readonly ctx: FakeContext) {}

  /** Into the caller's frame when it fits, as the X11 and Win32 ports write (RGB rows). */
  async captureScreen(rect: Rect, into?: FrameTarget): Promise<RawImage> {
    const s = this.ctx.scenario();
    await this.ctx.touchAll(windowsMeeting(s, rect));
    const img = renderDesktop(s, rect);
    if (!into || !frameFits(into, img.width, img.height)) return img;
    const d = img.data;
    const o = into.data;
    for (let y = 0, i = 0; y < img.height; y++) {
      for (let x = 0, j = y * into.stride; x < img.width; x++, i += img.channels, j += 3) {
        o[j] = d[i] as number;
        o[j + 1] = d[i + 1] as number;
        o[j + 2] = d[i + 2] as number;
      }
    }
    return { width: img.width, height: img.height, channels: 3, data: into.data, stride: into.stride };
  }
}
