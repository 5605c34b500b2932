import { appendFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { sampleScenario } from "../../src/platforms/fake/sample.js";
import { parseScenario, ScenarioReader } from "../../src/platforms/fake/scenario.js";
import { isUiError } from "../../src/shared/errors.js";
import { scratchDir } from "../support/scratch.js";
import { clone, type Fixture, fixture } from "./helpers.js";

let f: Fixture | null = null;
afterEach(() => {
  f?.cleanup();
  f = null;
});

describe("scenario parsing", () => {
  it("accepts the sample and the example of docs/spec.md §10, applying defaults", () => {
    const s = parseScenario(JSON.stringify(sampleScenario("/tmp/x")));
    expect(s.windows).toHaveLength(3);
    const spec = parseScenario(
      JSON.stringify({
        session: 1,
        foreground: 1001,
        windows: [
          {
            hwnd: 1001,
            title: "Ruffle - game.swf",
            class: "RuffleWindow",
            pid: 4242,
            process_start: "2026-11-30T08:00:00Z",
            process_path: "C:\\Program Files\\ruffle\\bin\\ruffle.exe",
            rect: [100, 100, 924, 740],
            visible: true,
            iconic: false,
            z: 0,
            fill: "#3366cc",
            tree: {
              role: "window",
              name: "Ruffle",
              children: [
                {
                  role: "button",
                  name: "Play",
                  automation_id: "play",
                  rect: [20, 60, 120, 90],
                  patterns: ["invoke"],
                },
              ],
            },
          },
        ],
        consent: { answer: "approve", delay_ms: 0, log: "out/prompts.jsonl" },
      }),
    );
    expect(spec.background).toBe("#000000");
    expect(spec.virtual_screen).toEqual([0, 0, 1920, 1080]);
    expect(spec.consent?.answer).toBe("approve");
  });

  it("rejects unknown fields, bad colours, duplicate hwnds, bad times and bad JSON", () => {
    const base = sampleScenario("/tmp/x");
    const bad: unknown[] = [
      { ...base, extra: 1 },
      { ...base, windows: [{ ...base.windows[0], colour: "#fff" }] },
      { ...base, windows: [{ ...base.windows[0], fill: "blue" }] },
      { ...base, windows: [base.windows[0], { ...base.windows[1], hwnd: 1001 }] },
      { ...base, windows: [{ ...base.windows[0], process_start: "yesterday" }] },
      { ...base, windows: [{ ...base.windows[0], faults: { capture: "explode" } }] },
      { ...base, windows: [{ ...base.windows[0], tree: { role: "window", name: "x", kids: [] } }] },
      {
        ...base,
        windows: [{ ...base.windows[0], tree: { role: "window", name: "x", patterns: ["invoek"] } }],
      },
      { ...base, consent: { answer: "maybe" } },
      { ...base, session: undefined },
    ];
    for (const b of bad) expect(() => parseScenario(JSON.stringify(b))).toThrow(/invalid/);
    expect(() => parseScenario("{")).toThrow(/JSON/);
  });

  it("names the failing field without its value", () => {
    const base = sampleScenario("/tmp/x");
    const secret = "CANARY-123";
    try {
      parseScenario(
        JSON.stringify({ ...base, windows: [{ ...base.windows[0], title: 5, class: secret, fill: secret }] }),
      );
      expect.unreachable();
    } catch (e) {
      const m = (e as Error).message;
      expect(m).toContain("windows[0].title");
      expect(m).not.toContain(secret);
    }
  });
});

describe("ScenarioReader", () => {
  it("throws platform_unavailable when there never was a good file", () => {
    const dir = scratchDir("fake");
    try {
      const r = new ScenarioReader(join(dir, "missing.json"));
      expect(() => r.current()).toThrow();
      try {
        r.current();
      } catch (e) {
        expect(isUiError(e) && e.code).toBe("platform_unavailable");
      }
      writeFileSync(join(dir, "missing.json"), '{"session":1,');
      expect(r.loaded()).toBe(false);
      expect(r.lastError).toMatch(/JSON/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("re-reads the file whenever it changes, including same-size rewrites in the same tick", () => {
    f = fixture();
    const r = new ScenarioReader(f.file);
    expect(r.current().scenario.windows[0].title).toBe("Ruffle - game.swf");
    const s = clone(f.scenario);
    s.windows[0].title = "Ruffle - game.swX";
    // In place (same inode, same size), as fast as possible: stat alone may not tell.
    writeFileSync(f.file, JSON.stringify(s));
    expect(r.current().scenario.windows[0].title).toBe("Ruffle - game.swX");
    s.windows[0].title = "Ruffle - game.swY";
    writeFileSync(f.file, JSON.stringify(s));
    expect(r.current().scenario.windows[0].title).toBe("Ruffle - game.swY");
    expect(r.current().version).toBe(3);
  });

  it("detects a same-size in-place rewrite that leaves mtime, size and inode unchanged", () => {
    f = fixture();
    // A whole-second mtime a little ahead (as a coarse clock tick would give): exactly restorable.
    const tick = Math.ceil(Date.now() / 1000) + 5;
    const s = clone(f.scenario);
    writeFileSync(f.file, JSON.stringify(s));
    utimesSync(f.file, tick, tick);
    const r = new ScenarioReader(f.file);
    expect(r.current().scenario.windows[0].title).toBe("Ruffle - game.swf");
    const st = statSync(f.file);
    s.windows[0].title = "Ruffle - game.swZ";
    writeFileSync(f.file, JSON.stringify(s));
    utimesSync(f.file, tick, tick);
    const st2 = statSync(f.file);
    expect([st2.mtimeMs, st2.size, st2.ino]).toEqual([st.mtimeMs, st.size, st.ino]);
    expect(r.current().scenario.windows[0].title).toBe("Ruffle - game.swZ");
  });

  it("keeps the last good state when the file is half-written or invalid, then recovers", () => {
    f = fixture();
    const r = new ScenarioReader(f.file);
    const before = r.current();
    const text = JSON.stringify(f.scenario);
    writeFileSync(f.file, text.slice(0, Math.floor(text.length / 2)));
    expect(r.current()).toBe(before);
    expect(r.lastError).toMatch(/JSON/);
    writeFileSync(f.file, JSON.stringify({ ...f.scenario, surprise: true }));
    expect(r.current()).toBe(before);
    expect(r.lastError).toMatch(/surprise|Unrecognized/);
    rmSync(f.file);
    expect(r.current()).toBe(before);
    const s = clone(f.scenario);
    s.foreground = 2002;
    writeFileSync(f.file, JSON.stringify(s));
    appendFileSync(f.file, "\n");
    expect(r.current().scenario.foreground).toBe(2002);
    expect(r.lastError).toBeNull();
  });

  it("resolves log paths relative to the scenario file's folder", () => {
    f = fixture((dir) => ({
      ...sampleScenario(dir),
      effects_log: "out/effects.jsonl",
      consent: { answer: "deny", log: "p.jsonl" },
    }));
    const r = new ScenarioReader(f.file);
    expect(r.current().effectsLogPath).toBe(join(f.dir, "out", "effects.jsonl"));
    expect(r.current().consentLogPath).toBe(join(f.dir, "p.jsonl"));
    expect(r.current().scenario.consent?.delay_ms).toBe(0);
  });
});
