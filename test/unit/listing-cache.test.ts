import { describe, expect, it } from "vitest";
import type { WindowInfo } from "../../src/shared/platform.js";
import { ListingCache } from "../../src/workers/capture/listings.js";

const listing = (n: number) => [{ hwnd: String(n) }] as unknown as WindowInfo[];

describe("ListingCache (the capture worker's recent listings by id)", () => {
  it("answers an id while its listing is fresh, and never after", () => {
    let now = 1_000;
    const cache = new ListingCache(250, () => now);
    const id = cache.remember(listing(1));
    expect(cache.fresh(id)).toEqual(listing(1));
    now += 250;
    expect(cache.fresh(id)).toEqual(listing(1));
    now += 1;
    expect(cache.fresh(id)).toBeUndefined();
    now = 500; // a clock that went back: not trusted
    expect(cache.fresh(id)).toBeUndefined();
  });

  it("gives every listing its own random id and keeps only the newest few", () => {
    const cache = new ListingCache(10_000, () => 0, 3);
    const ids = [1, 2, 3, 4].map((n) => cache.remember(listing(n)));
    expect(new Set(ids).size).toBe(4);
    expect(cache.fresh(ids[0] ?? "")).toBeUndefined();
    expect(cache.fresh(ids[3] ?? "")).toEqual(listing(4));
    expect(cache.fresh(ids[1] ?? "")).toEqual(listing(2));
    expect(cache.fresh("not an id")).toBeUndefined();
  });
});
