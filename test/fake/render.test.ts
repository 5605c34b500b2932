import { afterEach, describe, expect, it } from "vitest";
import { renderDesktop, topWindowAt } from "../../src/platforms/fake/render.js";
import { parseScenario, type ScenarioInput } from "../../src/platforms/fake/scenario.js";
import type { RawImage } from "../../src/shared/platform.js";
import { clone, type Fixture, fixture, platform } from "./helpers.js";

let f: Fixture | null = null;
afterEach(() => {
  f?.cleanup();
  f = null;
});

function px(img: RawImage, x: number, y: number): string {
  const i = (y * img.width + x) * img.channels;
  const h = (n: number) => n.toString(16).padStart(2, "0");
  return `#${h(img.data[i])}${h(img.data[i + 1])}${h(img.data[i + 2])}/${img.data[i + 3]}`;
}

function win(
  hwnd: number,
  rect: [number, number, number, number],
  z: number,
  fill: string,
  extra: object = {},
) {
  return {
    hwnd,
    title: `w${hwnd}`,
    class: "C",
    pid: hwnd,
    process_start: "2026-11-30T08:00:00Z",
    process_path: "/usr/bin/x",
    rect,
    visible: true,
    iconic: false,
    z,
    fill,
    ...extra,
  };
}

function scene(windows: object[], extra: object = {}): ScenarioInput {
  return {
    session: 1,
    foreground: null,
    background: "#102030",
    virtual_screen: [0, 0, 100, 100],
    windows,
    ...extra,
  } as ScenarioInput;
}

describe("renderDesktop", () => {
  it("draws background, fill, paint (clipped to the window) and overlap by z", () => {
    const s = parseScenario(
      JSON.stringify(
        scene([
          win(1, [10, 10, 50, 50], 1, "#ff0000", {
            paint: [
              { rect: [5, 5, 15, 15], fill: "#00ff00" },
              { rect: [30, 30, 60, 60], fill: "#0000ff" },
            ],
          }),
          win(2, [45, 45, 80, 80], 0, "#ffffff"),
          win(3, [0, 0, 100, 100], 2, "#abcdef", { visible: false }),
          win(4, [0, 0, 100, 100], 3, "#fedcba", { iconic: true }),
        ]),
      ),
    );
    const img = renderDesktop(s, [0, 0, 100, 100]);
    expect([img.width, img.height, img.channels, img.data.length]).toEqual([100, 100, 4, 40000]);
    expect(px(img, 0, 0)).toBe("#102030/255"); // background; hidden and minimized windows not drawn
    expect(px(img, 10, 10)).toBe("#ff0000/255"); // window 1's fill, top-left pixel inclusive
    expect(px(img, 9, 10)).toBe("#102030/255");
    expect(px(img, 15, 15)).toBe("#00ff00/255"); // paint at window-relative [5,5)
    expect(px(img, 24, 24)).toBe("#00ff00/255");
    expect(px(img, 25, 25)).toBe("#ff0000/255"); // paint right/bottom exclusive
    expect(px(img, 39, 39)).toBe("#ff0000/255");
    expect(px(img, 40, 39)).toBe("#ff0000/255");
    expect(px(img, 40, 40)).toBe("#0000ff/255"); // second paint, relative [30,30) = screen (40,40)
    expect(px(img, 44, 44)).toBe("#0000ff/255");
    expect(px(img, 45, 45)).toBe("#ffffff/255"); // window 2 above window 1
    expect(px(img, 49, 44)).toBe("#0000ff/255");
    expect(px(img, 50, 44)).toBe("#102030/255"); // paint clipped at window 1's right edge
    expect(px(img, 44, 49)).toBe("#0000ff/255");
    expect(px(img, 44, 50)).toBe("#102030/255"); // and at its bottom edge
    expect(px(img, 79, 79)).toBe("#ffffff/255");
    expect(px(img, 80, 80)).toBe("#102030/255");
  });

  it("returns exactly the requested rect; outside the virtual screen is background", () => {
    const s = parseScenario(JSON.stringify(scene([win(1, [-20, 90, 30, 130], 0, "#ff0000")])));
    const img = renderDesktop(s, [-10, 80, 20, 110]);
    expect([img.width, img.height]).toEqual([30, 30]);
    expect(px(img, 0, 15)).toBe("#102030/255"); // screen (-10, 95): off the virtual screen
    expect(px(img, 10, 15)).toBe("#ff0000/255"); // (0, 95)
    expect(px(img, 10, 9)).toBe("#102030/255"); // (0, 89): above the window
    expect(px(img, 10, 25)).toBe("#102030/255"); // (0, 105): below the virtual screen
    const far = renderDesktop(s, [500, 500, 510, 505]);
    expect([far.width, far.height]).toEqual([10, 5]);
    expect(px(far, 9, 4)).toBe("#102030/255");
    expect(() => renderDesktop(s, [5, 5, 5, 10])).toThrow();
  });

  it("topWindowAt picks the topmost drawn window", () => {
    const s = parseScenario(
      JSON.stringify(scene([win(1, [0, 0, 50, 50], 1, "#ff0000"), win(2, [20, 20, 60, 60], 0, "#00ff00")])),
    );
    expect(topWindowAt(s, 10, 10)?.hwnd).toBe(1);
    expect(topWindowAt(s, 30, 30)?.hwnd).toBe(2);
    expect(topWindowAt(s, 70, 70)).toBeNull();
    expect(topWindowAt(s, 60, 60)).toBeNull();
  });
});

describe("capture port", () => {
  it("captures the sample desktop and follows changes of the file", async () => {
    f = fixture();
    const p = platform(f, "capture");
    let img = await p.capture.captureScreen([100, 100, 924, 740]);
    expect([img.width, img.height]).toEqual([824, 640]);
    expect(px(img, 500, 500)).toBe("#3366cc/255");
    expect(px(img, 30, 70)).toBe("#33aa33/255"); // the Play button's paint
    expect(px(img, 820, 300)).toBe("#3366cc/255"); // Ruffle above Notepad at screen (920, 400)
    const s = clone(f.scenario);
    s.windows[1].z = 0;
    s.windows[0].z = 1;
    f.write(s);
    img = await p.capture.captureScreen([100, 100, 924, 740]);
    expect(px(img, 820, 300)).toBe("#ffffff/255"); // Notepad now covers Ruffle's right edge
    s.windows[0].iconic = true;
    f.write(s);
    img = await p.capture.captureScreen([100, 100, 924, 740]);
    expect(px(img, 30, 70)).toBe("#204060/255");
  });
});
