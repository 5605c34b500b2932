import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { decodeEntry, encodeEntry } from "../../src/guardian/entries.js";
import { Guardian, type Releaser } from "../../src/guardian/guardian.js";
import { FileRemapJournal } from "../../src/guardian/journal.js";
import type { HeldEntry } from "../../src/shared/pressLedger.js";
import { scratchDir } from "../support/scratch.js";

class RecordingReleaser implements Releaser {
  readonly released: HeldEntry[][] = [];
  async release(entries: readonly HeldEntry[]): Promise<void> {
    this.released.push([...entries]);
  }
  close(): void {}
}

describe("guardian record", () => {
  it("releases a source's entries newest first, once, and refuses its later records", async () => {
    const r = new RecordingReleaser();
    const g = new Guardian(r);
    expect(g.hold("input-1-1", [{ kind: "key", key: "ctrl" }])).toBe(true);
    g.hold("input-1-1", [{ kind: "key", key: "shift" }]);
    g.hold("input-1-1", [{ kind: "key", key: "a" }]);
    g.released("input-1-1", [{ kind: "key", key: "a" }]);
    g.hold("input-1-2", [{ kind: "button", button: "left" }]);
    await g.releaseSource("input-1-1");
    expect(r.released).toEqual([
      [
        { kind: "key", key: "shift" },
        { kind: "key", key: "ctrl" },
      ],
    ]);
    // A dead worker's late record is refused: it can press nothing more.
    expect(g.hold("input-1-1", [{ kind: "key", key: "b" }])).toBe(false);
    await g.releaseSource("input-1-1");
    expect(r.released).toHaveLength(1);
    await g.releaseAll();
    expect(r.released.at(-1)).toEqual([{ kind: "button", button: "left" }]);
    expect(g.snapshot()).toEqual([]);
  });

  it("a remap is one entry per keycode (a reused spare replaces its old keysym)", () => {
    const g = new Guardian(new RecordingReleaser());
    g.hold("s", [{ kind: "remap", code: 250, keysym: 0x1000141 }]);
    g.hold("s", [{ kind: "remap", code: 250, keysym: 0x100263a }]);
    expect(g.snapshot()).toEqual([{ kind: "remap", code: 250, keysym: 0x100263a }]);
  });

  it("entries round-trip through the line format; anything else is refused", () => {
    const all: HeldEntry[] = [
      { kind: "key", key: "ctrl" },
      { kind: "button", button: "middle" },
      { kind: "keycode", code: 38 },
      { kind: "remap", code: 253, keysym: 0x101f600 },
      { kind: "repeat", code: 38 },
    ];
    for (const e of all) expect(decodeEntry(encodeEntry(e).split(" "))).toEqual(e);
    for (const bad of [
      "k",
      "k Ctrl",
      "k a b",
      "b left2",
      "c 256",
      "c -1",
      "r 1",
      "r 1 99999999999",
      "x 1",
      "c 1e3",
      "a",
      "a 256",
      "a 38 1",
    ])
      expect(decodeEntry(bad.split(" ")), bad).toBeNull();
  });
});

describe("remap journal", () => {
  it("keeps this guardian's remaps on disk and hands a dead guardian's to the next one", () => {
    const dir = scratchDir("journal");
    const j = new FileRemapJournal(dir, "x11-:7");
    j.write([{ kind: "remap", code: 250, keysym: 0x1000141 }]);
    expect(readdirSync(dir)).toEqual([`remaps-x11-_7-${process.pid}.json`]);
    // Our own (live) file is not a leftover.
    expect(FileRemapJournal.leftovers(dir, "x11-:7").remaps).toEqual([]);
    // A guardian that is gone: pid 2^22+1 is above Linux's pid_max default, so never running.
    const dead = join(dir, "remaps-x11-_7-4194305.json");
    writeFileSync(
      dead,
      JSON.stringify({ pid: 4194305, start_ticks: 1, remaps: [{ code: 251, keysym: 0x20ac }] }),
    );
    writeFileSync(join(dir, "remaps-x11-_8-4194305.json"), readFileSync(dead));
    const left = FileRemapJournal.leftovers(dir, "x11-:7");
    expect(left.remaps).toEqual([{ kind: "remap", code: 251, keysym: 0x20ac }]);
    left.forget();
    expect(readdirSync(dir).sort()).toEqual([
      `remaps-x11-_7-${process.pid}.json`,
      "remaps-x11-_8-4194305.json",
    ]);
    j.write([]);
    expect(readdirSync(dir)).toEqual(["remaps-x11-_8-4194305.json"]);
  });

  it("keeps the keys whose auto-repeat a hold turned off, and hands a dead guardian's to the next one", () => {
    const dir = scratchDir("journal");
    const j = new FileRemapJournal(dir, "x11-:9");
    j.write([{ kind: "repeat", code: 38 }]);
    const mine = JSON.parse(readFileSync(join(dir, `remaps-x11-_9-${process.pid}.json`), "utf8"));
    expect(mine.repeats).toEqual([38]);
    expect(mine.remaps).toEqual([]);
    writeFileSync(
      join(dir, "remaps-x11-_9-4194305.json"),
      JSON.stringify({ pid: 4194305, start_ticks: 1, remaps: [], repeats: [40, 41] }),
    );
    // A file of an older guardian has no repeats field: read as none.
    writeFileSync(
      join(dir, "remaps-x11-_9-4194306.json"),
      JSON.stringify({ pid: 4194306, start_ticks: 1, remaps: [{ code: 251, keysym: 0x20ac }] }),
    );
    const left = FileRemapJournal.leftovers(dir, "x11-:9");
    expect(left.repeats).toEqual([
      { kind: "repeat", code: 40 },
      { kind: "repeat", code: 41 },
    ]);
    expect(left.remaps).toEqual([{ kind: "remap", code: 251, keysym: 0x20ac }]);
  });

  it("the guardian journals an auto-repeat change as it does a remap, and forgets it once restored", async () => {
    const writes: string[][] = [];
    const g = new Guardian(new RecordingReleaser(), {
      write: (changes) => writes.push(changes.map((c) => encodeEntry(c))),
    });
    g.hold("s", [{ kind: "key", key: "a" }]);
    expect(writes).toEqual([]);
    g.hold("s", [{ kind: "repeat", code: 38 }]);
    expect(writes.at(-1)).toEqual(["a 38"]);
    await g.releaseSource("s");
    expect(writes.at(-1)).toEqual([]);
  });

  it("once the server's pipe closed, no source may hold anything, one that held nothing then included", async () => {
    const r = new RecordingReleaser();
    const g = new Guardian(r);
    // A worker between two characters of a text: its last remap undone, nothing held right now.
    g.hold("input-1-1", [{ kind: "remap", code: 250, keysym: 0x1000141 }]);
    g.released("input-1-1", [{ kind: "remap", code: 250, keysym: 0x1000141 }]);
    await g.shutdown();
    expect(g.hold("input-1-1", [{ kind: "remap", code: 250, keysym: 0x100263a }])).toBe(false);
    expect(g.hold("input-2-1", [{ kind: "key", key: "a" }])).toBe(false);
    expect(g.snapshot()).toEqual([]);
  });

  it("settle releases the shutdown's entries again, and the journal keeps them until then", async () => {
    const r = new RecordingReleaser();
    const writes: string[][] = [];
    const g = new Guardian(r, { write: (changes) => writes.push(changes.map((c) => encodeEntry(c))) });
    const remap: HeldEntry = { kind: "remap", code: 250, keysym: 0x1000141 };
    g.hold("input-1-1", [{ kind: "key", key: "shift" }, remap]);
    expect(writes.at(-1)).toEqual([encodeEntry(remap)]);
    await g.shutdown();
    const once = [remap, { kind: "key", key: "shift" }];
    expect(r.released).toEqual([once]);
    // A guardian that dies here still leaves the remap for the next one to repair.
    expect(writes.at(-1)).toEqual([encodeEntry(remap)]);
    await g.settle();
    expect(r.released).toEqual([once, once]);
    expect(writes.at(-1)).toEqual([]);
    await g.settle();
    expect(r.released).toHaveLength(2);
  });
});
