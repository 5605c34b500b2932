import { describe, expect, it } from "vitest";
import { completePng, decodePng } from "../../src/platforms/wayland/pipewireFrames.js";
import { matchAround, opaqueBox, type RgbaFrame } from "../../src/platforms/wayland/streamMatch.js";
import { encodePng } from "../../src/workers/capture/png.js";

/**
 * The pixel proof of the Wayland backend on synthetic pictures: a window stream (with a
 * transparent shadow margin) placed inside a monitor picture, then covered, moved or plain; and
 * the PNG framing the frame reader parses.
 */

function frame(
  width: number,
  height: number,
  fill: (x: number, y: number) => [number, number, number, number],
): RgbaFrame {
  const rgba = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) rgba.set(fill(x, y), (y * width + x) * 4);
  return { width, height, rgba };
}

/** A textured window of 120×90 with a 10-pixel transparent margin (a client-side shadow). */
const WIN = frame(140, 110, (x, y) => {
  if (x < 10 || y < 10 || x >= 130 || y >= 100) return [0, 0, 0, 40];
  return [(x * 7) & 255, (y * 13) & 255, ((x ^ y) * 3) & 255, 255];
});

/** The monitor: a grey desktop with the window's opaque pixels at (dx, dy) + its own coordinates. */
function monitorWith(dx: number, dy: number, cover?: [number, number, number, number]): RgbaFrame {
  return frame(400, 300, (mx, my) => {
    if (cover && mx >= cover[0] && my >= cover[1] && mx < cover[2] && my < cover[3])
      return [200, 30, 30, 255];
    const x = mx - dx;
    const y = my - dy;
    if (x >= 10 && y >= 10 && x < 130 && y < 100) {
      const i = (y * WIN.width + x) * 4;
      return [WIN.rgba[i], WIN.rgba[i + 1], WIN.rgba[i + 2], 255];
    }
    return [90, 90, 90, 255];
  });
}

describe("wayland stream match", () => {
  it("finds the window's one offset on the monitor around a point", () => {
    expect(opaqueBox(WIN)).toEqual([10, 10, 130, 100]);
    const r = matchAround(WIN, monitorWith(50, 40), 60, 50);
    expect(r).toMatchObject({ kind: "found", dx: 50, dy: 40 });
  });

  it("a window covering the point: not shown (the click is refused)", () => {
    expect(matchAround(WIN, monitorWith(50, 40, [100, 80, 130, 110]), 60, 50).kind).toBe("not_shown");
    // Covering elsewhere does not matter.
    expect(matchAround(WIN, monitorWith(50, 40, [0, 0, 30, 30]), 60, 50).kind).toBe("found");
  });

  it("a point on the shadow or off the window is transparent (out of bounds)", () => {
    expect(matchAround(WIN, monitorWith(50, 40), 5, 5).kind).toBe("transparent");
    expect(matchAround(WIN, monitorWith(50, 40), 500, 5).kind).toBe("transparent");
  });

  it("a moved window is found at its new offset", () => {
    expect(matchAround(WIN, monitorWith(200, 150), 60, 50)).toMatchObject({
      kind: "found",
      dx: 200,
      dy: 150,
    });
  });

  it("a plain window on a plain desktop of the same colour proves nothing (ambiguous)", () => {
    const plainWin = frame(140, 110, () => [90, 90, 90, 255]);
    expect(matchAround(plainWin, monitorWith(50, 40), 70, 55).kind).toBe("ambiguous");
  });

  it("a window shown twice (a copy drawn by someone else) proves nothing either", () => {
    const twice = frame(400, 300, (mx, my) => {
      for (const [dx, dy] of [
        [0, 0],
        [200, 150],
      ]) {
        const x = mx - dx;
        const y = my - dy;
        if (x >= 10 && y >= 10 && x < 130 && y < 100) {
          const i = (y * WIN.width + x) * 4;
          return [WIN.rgba[i], WIN.rgba[i + 1], WIN.rgba[i + 2], 255];
        }
      }
      return [90, 90, 90, 255];
    });
    expect(matchAround(WIN, twice, 60, 50).kind).toBe("ambiguous");
  });
});

describe("wayland frame reader's PNG framing", () => {
  it("splits a stream of PNGs and decodes each (filtered rows included)", () => {
    const rgb = new Uint8Array(7 * 5 * 3).map((_, i) => (i * 31) & 255);
    const png = Buffer.from(encodePng({ width: 7, height: 5, channels: 3, data: rgb }, 6));
    const stream = Buffer.concat([png, png.subarray(0, 20)]);
    expect(completePng(stream)).toBe(png.length);
    expect(completePng(png.subarray(0, 20))).toBe(0);
    expect(completePng(Buffer.from("not a png at all"))).toBe(-1);
    const d = decodePng(png);
    expect([d.width, d.height]).toEqual([7, 5]);
    for (let i = 0; i < 35; i++) {
      expect([d.rgba[i * 4], d.rgba[i * 4 + 1], d.rgba[i * 4 + 2], d.rgba[i * 4 + 3]]).toEqual([
        rgb[i * 3],
        rgb[i * 3 + 1],
        rgb[i * 3 + 2],
        255,
      ]);
    }
  });
});
