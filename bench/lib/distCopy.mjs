// A built dist/ copied to a scratch folder and edited there by text, for the benches that time a
// call step by step (bench/x11-tree-timeline.mjs, bench/x11-shot-trace.mjs): the product code
// has no trace points, the copy gets them.
import { cpSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * `checkout`'s dist/ in a new scratch folder (named `prefix`…), with its package.json and
 * `nodeModules` linked beside it so the copy runs as the checkout would. Returns the folder.
 */
export function scratchDist(checkout, prefix, nodeModules = join(checkout, "node_modules")) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cpSync(join(checkout, "dist"), join(dir, "dist"), { recursive: true });
  symlinkSync(join(checkout, "package.json"), join(dir, "package.json"));
  symlinkSync(nodeModules, join(dir, "node_modules"));
  return dir;
}

/**
 * Edits the copy in `dir`: each edit is [file under dist/, anchor (or alternatives, the first one
 * found is used), (anchor) => what replaces its first occurrence]; edits of one file apply in
 * order, and `head` goes before every edited file. An anchor no longer in the built file stops
 * the bench with `bench`'s name: move the anchor with the code, never the figure.
 */
export function patchDist(dir, bench, head, edits) {
  const files = new Map();
  for (const [file, anchors, edit] of edits) {
    const code = files.get(file) ?? readFileSync(join(dir, "dist", file), "utf8");
    const all = [anchors].flat();
    const anchor = all.find((a) => code.includes(a));
    if (anchor === undefined) throw new Error(`${bench}: no "${all[0].split("\n")[0]}" in dist/${file}`);
    const at = code.indexOf(anchor);
    files.set(file, `${code.slice(0, at)}${edit(anchor)}${code.slice(at + anchor.length)}`);
  }
  for (const [file, code] of files) writeFileSync(join(dir, "dist", file), head + code);
}
