import { describe, expect, it } from "vitest";
import {
  MAX_POLICY_FILE_BYTES,
  parsePolicyBytes,
  parsePolicyText,
  readPolicyFile,
} from "../../src/supervisor/policy/parse.js";
import { basePolicy, tempFiles } from "./helpers.js";

const file = tempFiles();

function reasonsOf(text: string): string[] {
  const r = parsePolicyText(text);
  if (r.ok) throw new Error("expected the policy to be rejected");
  expect(r.code).toBe("policy_invalid");
  return r.reasons;
}

const YAML_OK = `schema_version: 1
policy_id: p1
application:
  executable_path: /usr/bin/ruffle
  title_patterns: ["Ruffle - *"]
allowed_actions: [observe]
`;

describe("JSON", () => {
  it("accepts a valid policy", () => {
    const r = parsePolicyText(JSON.stringify(basePolicy()));
    expect(r.ok).toBe(true);
  });

  it("rejects duplicate keys, naming the field", () => {
    const text = `{"schema_version":1,"policy_id":"a","policy_id":"b","application":{"executable_path":"/x","title_patterns":["*"],"title_patterns":["y"]},"allowed_actions":[]}`;
    expect(reasonsOf(text)).toEqual([
      "policy_id: duplicate key",
      "application.title_patterns: duplicate key",
    ]);
  });

  it("compares keys by value, so an escaped spelling is still a duplicate", () => {
    const text = `{"schema_version":1,"policy_id":"a","policy_\\u0069d":"b","application":{"executable_path":"/x","title_patterns":["*"]},"allowed_actions":[]}`;
    expect(reasonsOf(text)).toEqual(["policy_id: duplicate key"]);
  });

  it("finds duplicates inside arrays of objects with the element index", () => {
    const p = basePolicy();
    const text = JSON.stringify(p).replace(
      /}$/,
      `,"safe_regions":[{"name":"a","rect":[0,0,1,1]},{"name":"b","name":"c","rect":[0,0,1,1]}]}`,
    );
    expect(reasonsOf(text)).toEqual(["safe_regions[1].name: duplicate key"]);
  });

  it("does not mistake string values or keys containing quotes and braces for structure", () => {
    const p = basePolicy();
    (p.application as { title_patterns: string[] }).title_patterns = ['a "{" b', 'c\\"},{'];
    expect(parsePolicyText(JSON.stringify(p)).ok).toBe(true);
  });

  it("reports malformed JSON by position without echoing the text", () => {
    const reasons = reasonsOf('{\n  "schema_version": 1,\n  "policy_id": "secret-title" x\n}');
    expect(reasons).toHaveLength(1);
    expect(reasons[0]).toMatch(/^\(root\): not valid JSON/);
    expect(reasons[0]).not.toContain("secret");
  });

  it("treats a leading BOM and blank lines as JSON still", () => {
    expect(parsePolicyText(`\uFEFF\n  ${JSON.stringify(basePolicy())}`).ok).toBe(true);
  });
});

describe("YAML subset", () => {
  it("accepts plain YAML", () => {
    const r = parsePolicyText(YAML_OK);
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.policy.application.executable_path).toBe("/usr/bin/ruffle");
  });

  it.each([
    ["anchor", `${YAML_OK}protected_actions: &p [text]\n`, "anchors"],
    [
      "alias",
      `${YAML_OK.replace("allowed_actions: [observe]", "allowed_actions: &a [observe]")}protected_actions: *a\n`,
      "aliases",
    ],
    ["tag", YAML_OK.replace("policy_id: p1", "policy_id: !!str p1"), "tags"],
    ["custom tag", YAML_OK.replace("policy_id: p1", "policy_id: !secret p1"), "tags"],
    ["directive", `%YAML 1.2\n---\n${YAML_OK}`, "directives"],
    ["1.1 directive", `%YAML 1.1\n---\n${YAML_OK}`, "directives"],
    ["multiple documents", `${YAML_OK}---\n${YAML_OK}`, "more than one YAML document"],
    ["merge key", `${YAML_OK}limits:\n  <<: {max_png_bytes: 5}\n`, "merge keys"],
    ["number key", `${YAML_OK}1: x\n`, "keys must be strings"],
    ["boolean key", `${YAML_OK}true: x\n`, "keys must be strings"],
    ["null key", `${YAML_OK}~: x\n`, "keys must be strings"],
    ["odd key quoted in the path", `${YAML_OK}"a b": 1\n`, '["a b"]: unknown field'],
    ["complex key", `${YAML_OK}? [a, b]\n: x\n`, "keys must be strings"],
    ["hex number", `${YAML_OK}limits: {max_png_bytes: 0x10}\n`, "decimal"],
    ["octal number", `${YAML_OK}limits: {max_png_bytes: 0o17}\n`, "decimal"],
    ["infinity", `${YAML_OK}limits: {max_png_bytes: .inf}\n`, "decimal"],
  ])("rejects %s", (_name, text, expected) => {
    const reasons = reasonsOf(text);
    expect(reasons.join("\n")).toContain(expected);
  });

  it("reports forbidden syntax with line and column", () => {
    const reasons = reasonsOf(`${YAML_OK}protected_actions: &p [text]\n`);
    expect(reasons).toContain("line 7, column 20: anchors (&name) are not supported");
  });

  it("does not treat & * ! inside quoted strings as syntax", () => {
    const r = parsePolicyText(YAML_OK.replace('["Ruffle - *"]', `["&a *b !c", '%YAML']`));
    expect(r.ok).toBe(true);
  });

  it("rejects duplicate keys with their path", () => {
    expect(reasonsOf(`${YAML_OK}policy_id: p2\n`)).toEqual(["policy_id: duplicate key"]);
    const nested = YAML_OK.replace("  title_patterns:", "  executable_path: /bin/other\n  title_patterns:");
    expect(reasonsOf(nested)).toEqual(["application.executable_path: duplicate key"]);
  });

  it("keeps YAML 1.1 quirks out: yes/no and timestamps stay strings", () => {
    const reasons = reasonsOf(YAML_OK.replace("policy_id: p1", "policy_id: p1\nexpires_at: 2026-12-31"));
    expect(reasons).toEqual([expect.stringMatching(/^expires_at: /)]);
    const r = parsePolicyText(YAML_OK.replace("policy_id: p1", "policy_id: yes"));
    expect(r.ok && r.policy.policy_id).toBe("yes");
  });

  it("rejects an empty document and a non-mapping root", () => {
    expect(reasonsOf("   \n")).toEqual(["(root): the file is empty"]);
    expect(reasonsOf("# only a comment\n")).toEqual(["(root): the file has no document"]);
    expect(reasonsOf("- a\n- b\n")[0]).toMatch(/^\(root\): /);
  });

  it("turns a __proto__ key into an unknown field, not a prototype", () => {
    expect(reasonsOf(`${YAML_OK}__proto__: {schema_version: 2}\n`)).toEqual(["__proto__: unknown field"]);
    const json = JSON.stringify(basePolicy()).replace(/}$/, ',"__proto__":{"x":1}}');
    expect(reasonsOf(json)).toEqual(["__proto__: unknown field"]);
  });

  it.each([
    ["flow", `a: ${"[".repeat(300000)}${"]".repeat(300000)}`, "(root): nested deeper than 64 levels"],
    ["compact block", `${"- ".repeat(300000)}x`, "(root): more than 16 block indicators on one line"],
    ["explicit keys", `${"? ".repeat(300000)}x`, "(root): more than 16 block indicators on one line"],
  ])("refuses hostile %s nesting before the parser", (_name, text, reason) => {
    expect(reasonsOf(text)).toEqual([reason]);
  });

  it("reports YAML syntax errors by position", () => {
    const reasons = reasonsOf("schema_version: 1\n  policy_id: [\n");
    expect(reasons.length).toBeGreaterThan(0);
    expect(reasons.every((r) => /^line \d+, column \d+: /.test(r))).toBe(true);
  });
});

describe("schema problems name their field", () => {
  it.each<[string, (p: Record<string, unknown>) => void, string[]]>([
    [
      "empty rect",
      (p) => {
        p.safe_regions = [
          { name: "ok", rect: [0, 0, 10, 10] },
          { name: "bad", rect: [10, 5, 10, 4] },
        ];
      },
      [
        "safe_regions[1].rect: right must be greater than left",
        "safe_regions[1].rect: bottom must be greater than top",
      ],
    ],
    [
      "negative and fractional coordinates",
      (p) => {
        p.screenshot_masks = [{ rect: [-1, 0, 2.5, 3] }];
      },
      [
        "screenshot_masks[0].rect[0]: Too small: expected number to be >=0",
        "screenshot_masks[0].rect[2]: Invalid input: expected int, received number",
      ],
    ],
    [
      "unknown fields at any level",
      (p) => {
        p.extra = 1;
        (p.application as Record<string, unknown>).pid = 5;
      },
      ["application.pid: unknown field", "extra: unknown field"],
    ],
    [
      "missing fields",
      (p) => {
        delete p.policy_id;
        (p.application as Record<string, unknown>).title_patterns = [];
      },
      [
        "policy_id: required field is missing",
        "application.title_patterns: Too small: expected array to have >=1 items",
      ],
    ],
    [
      "unknown action",
      (p) => {
        p.allowed_actions = ["observe", "type_text"];
      },
      [
        'allowed_actions[1]: unknown action "type_text" (known: observe, inspect, hover, click, interact, key, text, close, drag)',
      ],
    ],
    [
      "wrong schema version",
      (p) => {
        p.schema_version = 2;
      },
      ["schema_version: Invalid input: expected 1"],
    ],
    [
      "duplicate region names and a mask naming no region",
      (p) => {
        p.safe_regions = [
          { name: "a", rect: [0, 0, 1, 1] },
          { name: "a", rect: [0, 0, 2, 2] },
        ];
        p.screenshot_masks = [{ region_name: "a" }, { region_name: "b" }];
      },
      [
        "safe_regions[1].name: duplicate region name (already used by safe_regions[0])",
        "screenshot_masks[1].region_name: names no safe region of this policy",
      ],
    ],
    [
      "a mask that is neither form",
      (p) => {
        p.safe_regions = [{ name: "a", rect: [0, 0, 1, 1] }];
        p.screenshot_masks = [{ rect: [0, 0, 1, 1], region_name: "a" }, {}, { rect: [5, 5, 1, 9] }];
      },
      [
        'screenshot_masks[0]: must be either {"rect": [left, top, right, bottom]} or {"region_name": "<safe region name>"}',
        'screenshot_masks[1]: must be either {"rect": [left, top, right, bottom]} or {"region_name": "<safe region name>"}',
        "screenshot_masks[2].rect: right must be greater than left",
      ],
    ],
    [
      "expires_at that is not RFC 3339",
      (p) => {
        p.expires_at = "2026-12-31 12:00";
      },
      ["expires_at: Invalid ISO datetime"],
    ],
    [
      "relative executable path",
      (p) => {
        (p.application as Record<string, unknown>).executable_path = "ruffle.exe";
      },
      ["application.executable_path: must be a full (absolute) path"],
    ],
    [
      "zero and negative limits",
      (p) => {
        p.limits = { max_png_bytes: 0, max_actions_per_minute: -5 };
      },
      [
        "limits.max_png_bytes: Too small: expected number to be >0",
        "limits.max_actions_per_minute: Too small: expected number to be >0",
      ],
    ],
  ])("%s", (_name, mutate, expected) => {
    const p = basePolicy();
    mutate(p);
    expect(reasonsOf(JSON.stringify(p)).sort()).toEqual([...expected].sort());
  });
});

describe("reading files", () => {
  it("missing file is policy_unreadable", () => {
    const r = readPolicyFile("/nonexistent/dir/policy.json");
    expect(r).toEqual({
      ok: false,
      code: "policy_unreadable",
      // The path and the errno, with what to do.
      reasons: [
        "/nonexistent/dir/policy.json: the policy file cannot be opened (ENOENT: no such file; give its full path)",
      ],
    });
  });

  it("a directory is policy_unreadable", () => {
    const dir = file("x.json", "{}").replace(/x\.json$/, "");
    const r = readPolicyFile(dir);
    expect(r.ok === false && r.code).toBe("policy_unreadable");
  });

  it("accepts exactly 1 MiB and rejects one byte more", () => {
    const json = JSON.stringify(basePolicy());
    const pad = (n: number) => `${json}${" ".repeat(n - json.length)}`;
    expect(readPolicyFile(file("max.json", pad(MAX_POLICY_FILE_BYTES))).ok).toBe(true);
    const r = readPolicyFile(file("big.json", pad(MAX_POLICY_FILE_BYTES + 1)));
    expect(r).toEqual({
      ok: false,
      code: "policy_invalid",
      reasons: ["(root): the file is larger than 1048576 bytes (1 MiB)"],
    });
    expect(parsePolicyBytes(new Uint8Array(MAX_POLICY_FILE_BYTES + 1)).ok).toBe(false);
  });

  it("rejects invalid UTF-8", () => {
    const bytes = Buffer.concat([Buffer.from(YAML_OK), Buffer.from([0xff, 0xfe])]);
    expect(readPolicyFile(file("bad-utf8.yaml", bytes))).toEqual({
      ok: false,
      code: "policy_invalid",
      reasons: ["(root): the file is not valid UTF-8"],
    });
  });

  it("reads YAML from a file", () => {
    expect(readPolicyFile(file("ok.yaml", YAML_OK)).ok).toBe(true);
  });
});
