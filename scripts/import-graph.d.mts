/** The import graph of src/: file → the src files it imports (absolute paths). */
export function importGraph(): Map<string, string[]>;
/** Imports that run up a layer, as [from, to] paths relative to src/. */
export function upward(edges: Map<string, string[]>): Array<[string, string]>;
/** The import cycles (strongly connected components of two or more files), relative to src/. */
export function cycles(edges: Map<string, string[]>): string[][];
