// Rewrites the generated blocks (settings table, error codes) of README.md and
// docs/reference.md from the built settings table. test/unit/settings.test.ts fails when they differ.
import { readFileSync, writeFileSync } from "node:fs";
import { regenerate } from "../dist/shared/settingsTable.js";

for (const name of ["README.md", "docs/reference.md"]) {
  const path = new URL(`../${name}`, import.meta.url);
  const before = readFileSync(path, "utf8");
  const after = regenerate(before);
  if (after !== before) {
    writeFileSync(path, after);
    process.stdout.write(`updated ${name}\n`);
  }
}
