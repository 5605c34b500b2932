// Resolve hooks for running the built code under Windows node.exe in Wine: `koffi` and
// `sharp` come from .wine-ci/natives (installed with --os=win32 --cpu=x64), never from the
// repo's Linux node_modules. Everything else resolves normally.

import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const natives = process.env.UIINSPECT_WIN32_NATIVES ?? join(root, ".wine-ci", "natives");
const anchor = pathToFileURL(join(natives, "anchor.mjs")).href;
const NATIVE = new Set(["koffi", "sharp"]);

export async function resolve(specifier, context, next) {
  const base = specifier.split("/")[0];
  if (NATIVE.has(base)) return next(specifier, { ...context, parentURL: anchor });
  return next(specifier, context);
}
