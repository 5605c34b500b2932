import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { policyJsonSchema } from "../../src/supervisor/policy/jsonSchema.js";
import { readPolicyFile } from "../../src/supervisor/policy/parse.js";
import {
  BUILTIN_PROTECTED,
  CAPABILITIES,
  CAPABILITY_DESCRIPTIONS,
  PolicyFileSchema,
} from "../../src/supervisor/policy/schema.js";
import { validatePolicyFile } from "../../src/supervisor/policy/validateCli.js";
import { basePolicy, tempFiles } from "./helpers.js";

const ROOT = join(import.meta.dirname, "..", "..");
const SCHEMA_FILE = join(ROOT, "schema", "policy.schema.json");
const EXAMPLES = join(ROOT, "schema", "examples");
const file = tempFiles();

describe("schema/policy.schema.json", () => {
  // UPDATE_SCHEMA=1 npx vitest run test/policy/schema.test.ts   regenerates the committed file.
  it.runIf(process.env.UPDATE_SCHEMA === "1")("is regenerated on request", () => {
    writeFileSync(SCHEMA_FILE, `${JSON.stringify(policyJsonSchema(), null, 2)}\n`);
  });

  it("equals the schema generated from zod (they never drift)", () => {
    expect(JSON.parse(readFileSync(SCHEMA_FILE, "utf8"))).toEqual(policyJsonSchema());
  });

  it("is strict and states the fixed fields", () => {
    const s = policyJsonSchema() as {
      additionalProperties: boolean;
      required: string[];
      properties: Record<string, { enum?: string[]; items?: { enum?: string[] } }>;
    };
    expect(s.additionalProperties).toBe(false);
    expect(s.required.sort()).toEqual(["allowed_actions", "application", "policy_id", "schema_version"]);
    expect(s.properties.allowed_actions.items?.enum).toEqual([...CAPABILITIES]);
  });
});

describe("capabilities", () => {
  it("has a description for each and the built-in protected set", () => {
    expect(Object.keys(CAPABILITY_DESCRIPTIONS)).toEqual([...CAPABILITIES]);
    expect(CAPABILITY_DESCRIPTIONS.click).toBe(
      "click, double-click, right-click and scroll inside the window",
    );
    expect([...BUILTIN_PROTECTED]).toEqual(["text", "close", "drag"]);
  });
});

describe("examples", () => {
  const examples = readdirSync(EXAMPLES).filter((f) => /^policy.*\.(json|ya?ml)$/.test(f));

  it("include a JSON and a YAML policy", () => {
    expect(examples).toEqual(expect.arrayContaining(["policy.example.json", "policy.example.yaml"]));
  });

  it.each(examples)("%s is valid", (name) => {
    const r = readPolicyFile(join(EXAMPLES, name));
    expect(r).toMatchObject({ ok: true });
    expect(validatePolicyFile(join(EXAMPLES, name)).ok).toBe(true);
  });

  it("the JSON and YAML examples say the same thing", () => {
    const a = readPolicyFile(join(EXAMPLES, "policy.example.json"));
    const b = readPolicyFile(join(EXAMPLES, "policy.example.yaml"));
    expect(a.ok && b.ok).toBe(true);
    if (a.ok && b.ok) expect(b.policy).toEqual(a.policy);
  });

  it("parse through the zod schema unchanged", () => {
    const raw = JSON.parse(readFileSync(join(EXAMPLES, "policy.example.json"), "utf8"));
    expect(PolicyFileSchema.parse(raw)).toEqual(raw);
  });
});

describe("validatePolicyFile", () => {
  const now = () => new Date("2026-11-30T10:00:00Z");

  it("summarizes a valid policy", () => {
    const r = validatePolicyFile(file("ok.json", JSON.stringify(basePolicy())), now);
    expect(r.ok).toBe(true);
    expect(r.lines[0]).toBe("valid policy");
    expect(r.lines).toContain("  allowed actions: observe, click");
    expect(r.lines).toContain("  protected actions: text, close, drag");
  });

  it("lists each problem with its field", () => {
    const p = basePolicy();
    p.safe_regions = [{ name: "a", rect: [5, 0, 1, 1] }];
    p.bogus = true;
    const r = validatePolicyFile(file("bad.json", JSON.stringify(p)), now);
    expect(r.ok).toBe(false);
    expect(r.lines).toEqual([
      "invalid policy (policy_invalid):",
      "  safe_regions[0].rect: right must be greater than left",
      "  bogus: unknown field",
    ]);
  });

  it("reports an expired policy as unusable", () => {
    const p = { ...basePolicy(), expires_at: "2026-11-30T09:59:59Z" };
    const r = validatePolicyFile(file("old.json", JSON.stringify(p)), now);
    expect(r).toEqual({
      ok: false,
      lines: [
        "unusable policy (policy_expired):",
        "  expires_at: the policy expired at 2026-11-30T09:59:59.000Z",
      ],
    });
  });

  it("reports an unreadable file", () => {
    const r = validatePolicyFile("/nonexistent/p.json", now);
    expect(r).toEqual({
      ok: false,
      lines: [
        "invalid policy (policy_unreadable):",
        "  /nonexistent/p.json: the policy file cannot be opened (ENOENT: no such file; give its full path)",
      ],
    });
  });
});
