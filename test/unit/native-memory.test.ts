import { describe, expect, it } from "vitest";
import { limitMallocArenas, trimMalloc } from "../../src/os/linux/malloc.js";
import { MALLOC_ARENA_MAX, mallocArenaEnv } from "../../src/shared/mallocArenas.js";

describe("malloc arena cap", () => {
  it("child processes get MALLOC_ARENA_MAX unless the operator set their own", () => {
    expect(mallocArenaEnv({})).toEqual({ MALLOC_ARENA_MAX: String(MALLOC_ARENA_MAX) });
    expect(mallocArenaEnv({ MALLOC_ARENA_MAX: "" })).toEqual({ MALLOC_ARENA_MAX: String(MALLOC_ARENA_MAX) });
    expect(mallocArenaEnv({ MALLOC_ARENA_MAX: "8" })).toEqual({});
  });

  it("the in-process cap and the trim never throw, whatever the C library", () => {
    expect(() => limitMallocArenas({})).not.toThrow();
    expect(() => limitMallocArenas({})).not.toThrow();
    expect(() => trimMalloc()).not.toThrow();
  });
});
