#!/usr/bin/env node
// Functions (declarations, methods, arrows, function expressions) longer than a limit, by lines,
// across src/ (or the folders given), longest first. Usage:
//   node scripts/long-functions.mjs [--max 80] [dir…]
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import ts from "typescript";

const args = process.argv.slice(2);
const at = args.indexOf("--max");
const max = at >= 0 ? Number(args[at + 1]) : 80;
const dirs = args.filter((a, i) => a !== "--max" && (at < 0 || i !== at + 1));
const repo = resolve(new URL(import.meta.url).pathname, "..", "..");
const roots = (dirs.length ? dirs : ["src"]).map((d) => resolve(repo, d));

function walk(dir, out = []) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (/\.(ts|mts)$/.test(name) && !name.endsWith(".d.ts")) out.push(p);
  }
  return out;
}

function nameOf(node) {
  if (node.name && ts.isIdentifier(node.name)) return node.name.text;
  if (node.name && ts.isPrivateIdentifier(node.name)) return node.name.text;
  if (ts.isConstructorDeclaration(node)) return "constructor";
  const p = node.parent;
  if (p && ts.isVariableDeclaration(p) && ts.isIdentifier(p.name)) return p.name.text;
  if (p && ts.isPropertyAssignment(p) && ts.isIdentifier(p.name)) return p.name.text;
  if (p && ts.isPropertyDeclaration(p) && ts.isIdentifier(p.name)) return p.name.text;
  return "(anonymous)";
}

const found = [];
for (const file of roots.flatMap((r) => walk(r))) {
  const text = readFileSync(file, "utf8");
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const visit = (node) => {
    if (
      (ts.isFunctionDeclaration(node) ||
        ts.isMethodDeclaration(node) ||
        ts.isConstructorDeclaration(node) ||
        ts.isArrowFunction(node) ||
        ts.isFunctionExpression(node) ||
        ts.isGetAccessor(node) ||
        ts.isSetAccessor(node)) &&
      node.body
    ) {
      const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const end = sf.getLineAndCharacterOfPosition(node.end).line;
      const lines = end - start + 1;
      if (lines > max)
        found.push({ lines, where: `${relative(repo, file)}:${start + 1}`, name: nameOf(node) });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
}
found.sort((a, b) => b.lines - a.lines);
for (const f of found) process.stdout.write(`${String(f.lines).padStart(5)}  ${f.name}  ${f.where}\n`);
process.stdout.write(`${found.length} functions over ${max} lines\n`);
