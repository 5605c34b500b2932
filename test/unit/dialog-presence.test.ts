import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { announcedPids, announcePid, presenceDir } from "../../src/platforms/x11/dialog/presence.js";
import { scratchDir } from "../support/scratch.js";

describe("dialog presence folder", () => {
  it("names only live processes that pass the check; a gone process's file is removed; junk is ignored", () => {
    const dir = scratchDir("presence");
    writeFileSync(join(dir, String(process.pid)), "");
    // PIDs above the kernel's pid_max are never alive.
    writeFileSync(join(dir, "4194305"), "");
    writeFileSync(join(dir, "007"), "");
    writeFileSync(join(dir, "x"), "");
    expect(announcedPids(dir, () => true)).toEqual([process.pid]);
    expect(existsSync(join(dir, "4194305"))).toBe(false);
    expect(announcedPids(dir, () => false)).toEqual([]);
    expect(readdirSync(dir).sort()).toEqual(["007", String(process.pid), "x"].sort());
  });

  it("announcePid writes the file under XDG_RUNTIME_DIR and takes it back", () => {
    const base = scratchDir("runtime");
    const env = { XDG_RUNTIME_DIR: base };
    const dir = presenceDir(env);
    expect(dir).not.toBeNull();
    const undo = announcePid(env, process.pid);
    expect(announcedPids(dir as string, (pid) => pid === process.pid)).toEqual([process.pid]);
    undo();
    expect(announcedPids(dir as string, () => true)).toEqual([]);
    expect(presenceDir({ XDG_RUNTIME_DIR: "relative" })).toBeNull();
  });
});
