import { describe, expect, it } from "vitest";
import { onPopup } from "../../src/platforms/x11/atspiSession.js";

/**
 * AT-SPI lists every frame of an application side by side; a root counts as a popup of the
 * granted window only where its extents lie on a popup the X server shows (override-redirect or
 * transient for it), more than on another top-level of the process.
 */
describe("onPopup", () => {
  const popups: Array<[number, number, number, number]> = [[100, 100, 200, 300]];
  const others: Array<[number, number, number, number]> = [[400, 100, 700, 400]];

  it("a root on a popup counts", () => {
    expect(onPopup([100, 100, 200, 300], { popups, others })).toBe(true);
  });

  it("a root on the process's other top-level does not, even when it touches a popup", () => {
    expect(onPopup([400, 100, 700, 400], { popups, others })).toBe(false);
    expect(onPopup([150, 100, 700, 400], { popups, others })).toBe(false);
  });

  it("no extents, or extents on nothing the server shows: not a popup", () => {
    expect(onPopup(null, { popups, others })).toBe(false);
    expect(onPopup([900, 900, 950, 950], { popups, others })).toBe(false);
    expect(onPopup([100, 100, 200, 300], { popups: [], others: [] })).toBe(false);
  });
});
