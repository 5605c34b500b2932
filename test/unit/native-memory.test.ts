import { describe, expect, it } from "vitest";
import { limitMallocArenas, trimMalloc } from "../../src/os/linux/malloc.js";
import { MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD, mallocArenaEnv } from "../../src/shared/mallocArenas.js";

describe("malloc arena cap", () => {
  it("child processes get MALLOC_ARENA_MAX and MALLOC_MMAP_THRESHOLD_ unless the operator set their own", () => {
    const threshold = { MALLOC_MMAP_THRESHOLD_: String(MALLOC_MMAP_THRESHOLD) };
    const cap = { MALLOC_ARENA_MAX: String(MALLOC_ARENA_MAX) };
    expect(mallocArenaEnv({})).toEqual({ ...cap, ...threshold });
    expect(mallocArenaEnv({ MALLOC_ARENA_MAX: "" })).toEqual({ ...cap, ...threshold });
    expect(mallocArenaEnv({ MALLOC_ARENA_MAX: "8" })).toEqual(threshold);
    expect(mallocArenaEnv({ MALLOC_ARENA_MAX: "8", MALLOC_MMAP_THRESHOLD_: "65536" })).toEqual({});
  });

  it("the in-process cap and the trim never throw, whatever the C library", () => {
    expect(() => limitMallocArenas({})).not.toThrow();
    expect(() => limitMallocArenas({})).not.toThrow();
    expect(() => trimMalloc()).not.toThrow();
  });
});
