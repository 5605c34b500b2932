// Build steps around tsc, portable (no shell commands): `clean` empties dist/ so files of
// removed sources (or old source maps) never ship; `finish` makes the bin executable, which the
// tarball keeps (`npx TARBALL` runs it directly).
import { chmodSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";

const dist = fileURLToPath(new URL("../dist/", import.meta.url));
const step = process.argv[2];
if (step === "clean") rmSync(dist, { recursive: true, force: true });
else if (step === "finish") chmodSync(new URL("cli.js", `file://${dist}`), 0o755);
else {
  process.stderr.write("usage: node scripts/dist.mjs clean|finish\n");
  process.exit(2);
}
