import { uiError } from "./errors.js";
import { containsPoint, containsRect, type Rect } from "./geometry.js";

/** out_of_bounds for a point or a region not wholly on `screen`: never clamped. */
export function refuseOffScreen(
  screen: Rect,
  points: ReadonlyArray<{ x: number; y: number }>,
  region: Rect | null,
): void {
  if (points.some((p) => !containsPoint(screen, p.x, p.y)))
    throw uiError(
      "out_of_bounds",
      `A coordinate lies outside the visible screen (${screen[2] - screen[0]}×${screen[3] - screen[1]}).`,
    );
  if (region && !containsRect(screen, region))
    throw uiError(
      "out_of_bounds",
      `The region extends past the edge of the visible screen (${screen[2] - screen[0]}×${screen[3] - screen[1]}); ask for the part on screen.`,
    );
}
