import { closeSync, fstatSync, openSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { adoptNativeFds, closeNativeFds } from "../../src/supervisor/hosting/nativeFds.js";
import { scratchDir } from "../support/scratch.js";

const isOpen = (fd: number) => {
  try {
    fstatSync(fd);
    return true;
  } catch {
    return false;
  }
};

describe("native descriptors of an ended worker thread", () => {
  const dir = scratchDir("fds");
  const opened: number[] = [];
  const open = (name: string) => {
    const fd = openSync(join(dir, name), "w");
    opened.push(fd);
    return fd;
  };
  afterEach(() => {
    for (const fd of opened.splice(0)) if (isOpen(fd)) closeSync(fd);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("closes what is still the file it was when reported", () => {
    const a = open("a");
    const b = open("b");
    const adopted = adoptNativeFds([a, b]);
    expect(closeNativeFds(adopted)).toBe(2);
    expect([isOpen(a), isOpen(b)]).toEqual([false, false]);
  });

  it("leaves a reused number alone: closed meanwhile and given to another file", () => {
    const a = open("c");
    const adopted = adoptNativeFds([a]);
    closeSync(a);
    // The lowest free number: the one just closed.
    const other = open("d");
    expect(other).toBe(a);
    expect(closeNativeFds(adopted)).toBe(0);
    expect(isOpen(other)).toBe(true);
  });

  it("drops numbers that are not open when reported, and never throws", () => {
    const adopted = adoptNativeFds([1_000_000, 999_999]);
    expect(adopted).toEqual([]);
    expect(closeNativeFds([{ fd: 999_998, dev: 1n, ino: 2n }])).toBe(0);
  });
});
