/**
 * Interpreters and runtimes: executables whose identity says little about what runs. A policy or
 * a consent decision for /usr/bin/python3 covers every Python program started with it, not one
 * application; people approving it must be told so in plain words (consent dialog,
 * validate-policy). Matched on the file name (any folder, case-insensitive, ".exe" dropped).
 */

const INTERPRETERS: ReadonlyArray<[RegExp, string]> = [
  [/^python[0-9.]*[wdm]?$/, "Python"],
  [/^pypy[0-9.]*$/, "Python"],
  [/^(node|nodejs)$/, "Node.js"],
  [/^(deno|bun)$/, "JavaScript"],
  [/^(java|javaw)$/, "Java"],
  [/^perl[0-9.]*$/, "Perl"],
  [/^(ruby|irb)[0-9.]*$/, "Ruby"],
  [/^(wine|wine64)(-preloader)?$/, "Wine (Windows programs)"],
  [/^wineserver$/, "Wine (Windows programs)"],
  [/^electron$/, "Electron"],
  [/^php[0-9.]*(-cgi)?$/, "PHP"],
  [/^(lua|luajit)[0-9.]*$/, "Lua"],
  [/^(r|rscript)$/, "R"],
  [/^(tclsh|wish)[0-9.]*$/, "Tcl/Tk"],
  [/^(mono|dotnet)$/, ".NET"],
  [/^(sh|bash|dash|zsh|ksh|fish|pwsh|powershell|cmd)$/, "a command shell"],
  [/^(wscript|cscript|mshta|osascript)$/, "a script host"],
];

/** The runtime's plain name when the executable is a known interpreter, else null. */
export function interpreterOf(executablePath: string): string | null {
  const base = executablePath.split(/[\\/]/).pop() ?? "";
  const name = base.toLowerCase().replace(/\.exe$/, "");
  for (const [pattern, label] of INTERPRETERS) if (pattern.test(name)) return label;
  return null;
}

/** One sentence for people, or null when the executable is no known interpreter. */
export function interpreterWarning(executablePath: string): string | null {
  const runtime = interpreterOf(executablePath);
  if (runtime === null) return null;
  return `This program is an interpreter (${runtime}): the approval covers every program it runs, not one application.`;
}
