import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Ajv2020 } from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { parse as yamlParse } from "yaml";
import { parseScenario } from "../../src/platforms/fake/scenario.js";
import { listTools } from "../../src/supervisor/mcp/server.js";
import { parsePolicyText } from "../../src/supervisor/policy/parse.js";
import { PolicyFileSchema } from "../../src/supervisor/policy/schema.js";
import { parseProfileText } from "../../src/supervisor/profiles/profile.js";
import { CoordinateProfileSchema } from "../../src/supervisor/profiles/schema.js";
import { TOOLS } from "../../src/supervisor/tools/index.js";
import { rng } from "../support/rng.js";

/**
 * A bounded, seeded fuzz run over the files the server parses (policy JSON and YAML,
 * coordinate profiles, fake scenarios) and over every tool's arguments. It asserts: no crash
 * (nothing thrown but the documented scenario error), no input taking over 2 s, and nothing
 * accepted that the schema refuses (an accepted file re-read by a reference parser must pass
 * the zod schema and the published JSON Schema; accepted tool arguments must pass the tool's
 * published inputSchema). FUZZ_SEED and FUZZ_CASES change the run; figures are printed.
 */

const ROOT = join(import.meta.dirname, "..", "..");
const SEED = Number(process.env.FUZZ_SEED ?? 1616);
const CASES = Number(process.env.FUZZ_CASES ?? 400);
const HANG_MS = 2000;

const STRUCTURAL = [
  "{",
  "}",
  "[",
  "]",
  '"',
  ":",
  ",",
  "-",
  "?",
  "&a",
  "*a",
  "!t",
  "%",
  "#",
  "\n",
  " ",
  "  ",
  "0",
  "1e9",
  "-1",
  "null",
  "true",
  "<<",
  "\\",
  "\u0000",
  "é",
  "\uFEFF",
  "'",
  "|",
  ">",
];

function mutate(text: string, r: () => number): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
  const at = () => Math.floor(r() * (text.length + 1));
  let s = text;
  const steps = 1 + Math.floor(r() * 4);
  for (let k = 0; k < steps; k++) {
    const i = Math.min(at(), s.length);
    switch (Math.floor(r() * 9)) {
      case 0: // replace one character
        s = s.slice(0, i) + pick(STRUCTURAL) + s.slice(i + 1);
        break;
      case 1: // insert a token
        s = s.slice(0, i) + pick(STRUCTURAL) + s.slice(i);
        break;
      case 2: // delete a range
        s = s.slice(0, i) + s.slice(i + Math.floor(r() * 40));
        break;
      case 3: {
        // nesting, up to far past every cap
        const n = Math.floor(r() * 40_000);
        const open = pick(["[", '{"a":', "- ", "? ", "{a: ", '[{"a": 1, "a": ']);
        s = s.slice(0, i) + open.repeat(n) + s.slice(i);
        break;
      }
      case 4: {
        // duplicate a line (a repeated YAML key) or a JSON member
        const lines = s.split("\n");
        const j = Math.floor(r() * lines.length);
        lines.splice(j, 0, lines[j] ?? "");
        s = lines.join("\n");
        break;
      }
      case 5: // a long value
        s = `${s.slice(0, i)}${"x".repeat(Math.floor(r() * 200_000))}${s.slice(i)}`;
        break;
      case 6: // many keys
        s =
          s.slice(0, i) +
          Array.from({ length: Math.floor(r() * 20_000) }, (_, n) => `"k${n}": 1,`).join("") +
          s.slice(i);
        break;
      case 7: // truncate
        s = s.slice(0, i);
        break;
      default: // swap two halves
        s = s.slice(i) + s.slice(0, i);
    }
  }
  return s.slice(0, 1024 * 1024);
}

interface Figures {
  files: number;
  accepted: number;
  totalMs: number;
  worstMs: number;
}

function timed<T>(f: () => T, figures: Figures): T {
  const t0 = performance.now();
  const out = f();
  const ms = performance.now() - t0;
  figures.files++;
  figures.totalMs += ms;
  figures.worstMs = Math.max(figures.worstMs, ms);

  expect(ms, "one input took longer than 2 s").toBeLessThan(HANG_MS);
  return out;
}

function report(name: string, f: Figures): void {
  const perSecond = Math.round((f.files / f.totalMs) * 1000);
  process.stderr.write(
    `fuzz ${name}: ${f.files} inputs (seed ${SEED}), ${f.accepted} accepted, ${perSecond}/s, worst ${f.worstMs.toFixed(1)} ms\n`,
  );
}

const ajv = new Ajv2020({ strict: false, allErrors: false });
const policyJsonSchema = ajv.compile(
  JSON.parse(readFileSync(join(ROOT, "schema/policy.schema.json"), "utf8")),
);
const profileJsonSchema = ajv.compile(
  JSON.parse(readFileSync(join(ROOT, "schema/coordinate_profile.schema.json"), "utf8")),
);

/** What an independent reader makes of an accepted file (null: it cannot read it). */
function reference(text: string, yaml: boolean): unknown {
  try {
    return yaml ? yamlParse(text, { uniqueKeys: true, version: "1.2" }) : JSON.parse(text);
  } catch {
    return Symbol("unreadable");
  }
}

describe("seeded fuzz over parsed files", () => {
  const policyJson = readFileSync(join(ROOT, "schema/examples/policy.example.json"), "utf8");
  const policyYaml = readFileSync(join(ROOT, "schema/examples/policy.example.yaml"), "utf8");
  const profile = readFileSync(join(ROOT, "schema/examples/profile.example.json"), "utf8");
  const scenario = readFileSync(join(ROOT, "schema/examples/desktop.example.json"), "utf8");

  it.each([
    ["policy JSON", policyJson, false],
    ["policy YAML", policyYaml, true],
  ] as const)("%s: no crash, no hang, nothing schema-invalid accepted", (name, seedText, yaml) => {
    const r = rng(SEED);
    const f: Figures = { files: 0, accepted: 0, totalMs: 0, worstMs: 0 };
    for (let n = 0; n < CASES; n++) {
      const text = n === 0 ? seedText : mutate(seedText, r);
      const result = timed(() => parsePolicyText(text), f);

      if (!result.ok) {
        expect(result.reasons.length).toBeGreaterThan(0);
        expect(result.reasons.length).toBeLessThanOrEqual(5);
        expect(result.reasons.join("").length).toBeLessThan(4096);
        continue;
      }
      f.accepted++;
      const ref = reference(text, yaml);
      expect(PolicyFileSchema.safeParse(ref).success, `accepted: ${text.slice(0, 200)}`).toBe(true);
      expect(policyJsonSchema(ref), `JSON Schema refuses: ${text.slice(0, 200)}`).toBe(true);
    }
    report(name, f);
    expect(f.accepted).toBeGreaterThan(0); // the seed itself, at least
  });

  it("coordinate profiles: no crash, no hang, nothing schema-invalid accepted", () => {
    const r = rng(SEED + 1);
    const f: Figures = { files: 0, accepted: 0, totalMs: 0, worstMs: 0 };
    for (let n = 0; n < CASES; n++) {
      const text = n === 0 ? profile : mutate(profile, r);
      const result = timed(() => parseProfileText(text), f);
      if (!result.ok) {
        expect(result.reasons.length).toBeLessThanOrEqual(5);
        continue;
      }
      f.accepted++;
      const ref = reference(text, false);
      expect(CoordinateProfileSchema.safeParse(ref).success).toBe(true);
      expect(profileJsonSchema(ref)).toBe(true);
    }
    report("profile", f);
    expect(f.accepted).toBeGreaterThan(0);
  });

  it("fake scenarios: only the documented error, no hang", () => {
    const r = rng(SEED + 2);
    const f: Figures = { files: 0, accepted: 0, totalMs: 0, worstMs: 0 };
    for (let n = 0; n < CASES / 2; n++) {
      const text = n === 0 ? scenario : mutate(scenario, r);
      const outcome = timed(() => {
        try {
          parseScenario(text);
          return null;
        } catch (e) {
          return e;
        }
      }, f);
      if (outcome === null) {
        f.accepted++;
        continue;
      }
      expect(outcome).toBeInstanceOf(Error);
      expect((outcome as Error).message).toMatch(/^scenario is (not valid JSON|invalid)/);
      expect((outcome as Error).message.length).toBeLessThan(4096);
    }
    report("scenario", f);
  });
});

/** A random JSON value, some of them hostile (deep, long, odd types). */
function randomValue(r: () => number, depth = 0): unknown {
  const k = Math.floor(r() * 12);
  if (depth > 3 && k > 7) return null;
  switch (k) {
    case 0:
      return Math.floor(r() * 2000) - 1000;
    case 1:
      return r() * 1e12;
    case 2:
      return ["", "1001", "a", "Ruffle", "stage", "observe", "click", "enter", "ctrl", "#ffffff"][
        Math.floor(r() * 10)
      ];
    case 3:
      return "x".repeat(Math.floor(r() * 100_000));
    case 4:
      return r() < 0.5;
    case 5:
      return null;
    case 6:
      return Array.from({ length: Math.floor(r() * 6) }, () => randomValue(r, depth + 1));
    case 7: {
      const o: Record<string, unknown> = {};
      for (let i = 0; i < Math.floor(r() * 4); i++) o[`k${i}`] = randomValue(r, depth + 1);
      return o;
    }
    case 8: {
      let v: unknown = 1;
      for (let i = 0; i < Math.floor(r() * 2000); i++) v = [v];
      return v;
    }
    case 9:
      return [Math.floor(r() * 100), Math.floor(r() * 100), Math.floor(r() * 900), Math.floor(r() * 900)];
    case 10:
      return Number.MAX_SAFE_INTEGER * (r() < 0.5 ? 1 : -1);
    default:
      return "\u0000\n\u2028😀".repeat(Math.floor(r() * 10));
  }
}

describe("seeded fuzz over tool arguments", () => {
  it("every tool: never throws, never hangs, accepts nothing its published inputSchema refuses", () => {
    const r = rng(SEED + 3);
    const published = new Map(listTools().map((t) => [t.name, ajv.compile(t.inputSchema)]));
    const f: Figures = { files: 0, accepted: 0, totalMs: 0, worstMs: 0 };
    for (const def of TOOLS) {
      const shape = (def.input as unknown as { shape?: Record<string, unknown> }).shape;
      const keys = [...Object.keys(shape ?? {}), "hwnd", "title_contains", "extra"];
      const validate = published.get(def.name);
      expect(validate).toBeDefined();
      for (let n = 0; n < Math.ceil(CASES / 8); n++) {
        const args: Record<string, unknown> = {};
        for (const key of keys) if (r() < 0.5) args[key] = randomValue(r);
        const parsed = timed(() => def.input.safeParse(args), f);
        if (!parsed.success) continue;
        f.accepted++;
        expect(validate?.(args), `${def.name} accepted ${JSON.stringify(args).slice(0, 200)}`).toBe(true);
      }
    }
    report("tool arguments", f);
  });
});
