#!/usr/bin/env node
// The import graph of src/: imports that run up a layer and import cycles (strongly connected
// components), from the import statements themselves (static, `export … from`, `import()`).
// Usage: node scripts/import-graph.mjs [--json]; exits 1 when either list is non-empty.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const root = resolve(dirname(new URL(import.meta.url).pathname), "..", "src");

// Lower layers first; a module may import its own layer or a lower one only. Entry files
// (src/*.ts) and the CLI sit on top.
const LAYERS = [
  ["shared"],
  ["os"],
  ["platforms"],
  ["workers", "guardian", "lease"],
  ["supervisor"],
  ["remote"],
  ["cli", "<top>"],
];

function layerOf(file) {
  const rel = relative(root, file).split("/");
  const head = rel.length === 1 ? "<top>" : rel[0];
  const i = LAYERS.findIndex((names) => names.includes(head));
  return { head, rank: i < 0 ? LAYERS.length : i };
}

function walk(dir, out = []) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (name.endsWith(".ts") && !name.endsWith(".d.ts")) out.push(p);
  }
  return out;
}

const SPEC =
  /(?:import|export)\s[^"';]*?from\s*["']([^"']+)["']|import\s*\(\s*["']([^"']+)["']\s*\)|import\s+["']([^"']+)["']/g;

export function importGraph() {
  const files = walk(root);
  const edges = new Map();
  for (const f of files) {
    const text = readFileSync(f, "utf8").replace(/\/\/.*$/gm, "");
    const targets = new Set();
    for (const m of text.matchAll(SPEC)) {
      const spec = m[1] ?? m[2] ?? m[3];
      if (!spec?.startsWith(".")) continue;
      const target = resolve(dirname(f), spec).replace(/\.js$/, ".ts");
      if (files.includes(target)) targets.add(target);
    }
    edges.set(f, [...targets]);
  }
  return edges;
}

export function upward(edges) {
  const out = [];
  for (const [from, tos] of edges) {
    const a = layerOf(from);
    for (const to of tos) {
      const b = layerOf(to);
      if (b.rank > a.rank) out.push([relative(root, from), relative(root, to)]);
    }
  }
  return out;
}

// Tarjan's strongly connected components; every component of two or more files is a cycle.
export function cycles(edges) {
  let index = 0;
  const idx = new Map();
  const low = new Map();
  const stack = [];
  const on = new Set();
  const out = [];
  const visit = (v) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
    }
    if (low.get(v) === idx.get(v)) {
      const comp = [];
      let w;
      do {
        w = stack.pop();
        on.delete(w);
        comp.push(relative(root, w));
      } while (w !== v);
      if (comp.length > 1) out.push(comp.sort());
    }
  };
  for (const v of edges.keys()) if (!idx.has(v)) visit(v);
  return out;
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname)) {
  process.stdout.on("error", () => {});
  const edges = importGraph();
  const up = upward(edges);
  const cyc = cycles(edges);
  if (process.argv.includes("--json")) {
    process.stdout.write(`${JSON.stringify({ upward: up, cycles: cyc }, null, 2)}\n`);
  } else {
    process.stdout.write(`imports up a layer: ${up.length}\n`);
    for (const [a, b] of up) process.stdout.write(`  ${a} -> ${b}\n`);
    process.stdout.write(`import cycles: ${cyc.length}\n`);
    for (const c of cyc) process.stdout.write(`  ${c.join(" <-> ")}\n`);
  }
  process.exitCode = up.length || cyc.length ? 1 : 0;
}
