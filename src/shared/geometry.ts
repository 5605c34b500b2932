import { z } from "zod";

/** [left, top, right, bottom], right/bottom exclusive, integer pixels. */
export type Rect = [number, number, number, number];
export const RectSchema = z.tuple([z.number().int(), z.number().int(), z.number().int(), z.number().int()]);

export interface Point {
  x: number;
  y: number;
}

export const rectWidth = (r: Rect): number => Math.max(0, r[2] - r[0]);
export const rectHeight = (r: Rect): number => Math.max(0, r[3] - r[1]);
export const rectArea = (r: Rect): number => rectWidth(r) * rectHeight(r);
export const isEmpty = (r: Rect): boolean => rectWidth(r) === 0 || rectHeight(r) === 0;

export function intersect(a: Rect, b: Rect): Rect | null {
  const l = Math.max(a[0], b[0]);
  const t = Math.max(a[1], b[1]);
  const r = Math.min(a[2], b[2]);
  const btm = Math.min(a[3], b[3]);
  return l < r && t < btm ? [l, t, r, btm] : null;
}

export function containsPoint(r: Rect, x: number, y: number): boolean {
  return x >= r[0] && x < r[2] && y >= r[1] && y < r[3];
}

export function containsRect(outer: Rect, inner: Rect): boolean {
  return inner[0] >= outer[0] && inner[1] >= outer[1] && inner[2] <= outer[2] && inner[3] <= outer[3];
}

export function offset(r: Rect, dx: number, dy: number): Rect {
  return [r[0] + dx, r[1] + dy, r[2] + dx, r[3] + dy];
}

export function sameRect(a: Rect, b: Rect): boolean {
  return a[0] === b[0] && a[1] === b[1] && a[2] === b[2] && a[3] === b[3];
}

/** Window-relative rect → screen rect, given the window's screen rect. */
export function toScreen(windowRect: Rect, rel: Rect): Rect {
  return offset(rel, windowRect[0], windowRect[1]);
}
