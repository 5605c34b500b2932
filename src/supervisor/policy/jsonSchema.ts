import { z } from "zod";
import { PolicyFileSchema } from "./schema.js";

/**
 * The JSON Schema of the policy file, generated from the zod schema so the two cannot drift
 * (test/policy/schema-sync.test.ts compares it with the committed schema/policy.schema.json).
 * Cross-field rules (right > left, bottom > top, unique region names, masks naming an existing
 * region) are zod refinements that JSON Schema cannot state; validate-policy checks them.
 */
export function policyJsonSchema(): Record<string, unknown> {
  const generated = z.toJSONSchema(PolicyFileSchema, { target: "draft-2020-12", io: "input" });
  return { ...generated, title: "uiinspect-mcp policy" };
}
