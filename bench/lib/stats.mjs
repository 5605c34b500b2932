// Figures shared by the benches that load a server for a while: latency quantiles, a least
// squares slope, and the resident set of a process and of every process below it (/proc).
import { readdirSync, readFileSync } from "node:fs";

export const round2 = (v) => Math.round(v * 100) / 100;

/** Count, p50, p99 and max of latencies in ms (one decimal). */
export function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? 0;
  const r = (v) => Math.round(v * 10) / 10;
  return { calls: s.length, p50_ms: r(q(0.5)), p99_ms: r(q(0.99)), max_ms: r(s.at(-1) ?? 0) };
}

/** Least squares slope of [x, y] points, or null with fewer than two. */
export function slope(points) {
  const n = points.length;
  if (n < 2) return null;
  const mx = points.reduce((a, p) => a + p[0], 0) / n;
  const my = points.reduce((a, p) => a + p[1], 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? null : round2(num / den);
}

/** VmRSS of one process in kB (0 once it is gone). */
export function rssKb(pid) {
  try {
    return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** The process and every process below it (worker processes, the release guardian). */
export function procTree(pid) {
  let kids = [];
  try {
    for (const t of readdirSync(`/proc/${pid}/task`))
      kids = kids.concat(
        readFileSync(`/proc/${pid}/task/${t}/children`, "utf8").split(" ").filter(Boolean).map(Number),
      );
  } catch {
    // gone
  }
  return [pid, ...kids.flatMap(procTree)];
}

/** RSS in MiB: `total` over the process tree, `server` the process alone (all its threads). */
export function memory(pid) {
  return {
    total: Math.round(procTree(pid).reduce((n, p) => n + rssKb(p), 0) / 1024),
    server: Math.round(rssKb(pid) / 1024),
  };
}

/** Open file descriptors and threads of one process (0 once it is gone). */
export function fdsAndThreads(pid) {
  try {
    const threads = Number(/Threads:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
    return { fds: readdirSync(`/proc/${pid}/fd`).length, threads };
  } catch {
    return { fds: 0, threads: 0 };
  }
}

/**
 * Where a process's resident memory is, in MiB, from /proc/PID/smaps: malloc's main heap,
 * the other anonymous mappings by size (64 MiB arena heaps, V8's 256 KiB pages, the rest), and
 * file-backed mappings. For finding what grows; not a figure of record.
 */
export function smapsBreakdown(pid) {
  let text;
  try {
    text = readFileSync(`/proc/${pid}/smaps`, "utf8");
  } catch {
    return null;
  }
  const out = { heap: 0, arena_64m: 0, v8_256k: 0, anon_other: 0, stacks: 0, file: 0, anon_large: 0 };
  let name = "";
  let size = 0;
  let start = 0n;
  for (const line of text.split("\n")) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (head) {
      size = (Number.parseInt(head[2], 16) - Number.parseInt(head[1], 16)) / 1024;
      start = BigInt(`0x${head[1]}`);
      name = head[3].trim();
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (!rss) continue;
    const kb = Number(rss[1]);
    if (name === "[heap]") out.heap += kb;
    else if (name.startsWith("[stack")) out.stacks += kb;
    else if (name.startsWith("/") || name.startsWith("[v")) out.file += kb;
    // glibc's thread arenas are heaps of up to 64 MiB aligned to 64 MiB.
    else if (start % (64n << 20n) === 0n) out.arena_64m += kb;
    else if (size === 256) out.v8_256k += kb;
    else if (size >= 1024) out.anon_large += kb;
    else out.anon_other += kb;
  }
  for (const k of Object.keys(out)) out[k] = Math.round(out[k] / 1024);
  return out;
}

/** utime + stime in ms from a /proc stat line (clock ticks of 10 ms, Linux's USER_HZ). */
function statCpuMs(path) {
  try {
    const st = readFileSync(path, "utf8");
    const f = st.slice(st.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    return 0;
  }
}

/**
 * CPU time so far, in ms: `main` the process's main thread (the supervisor's event loop),
 * `all` every thread of it, `tree` with the processes below it. Differences over a phase give
 * CPU per call, which the machine's load inflates far less than wall time.
 */
export function cpuMs(pid) {
  return {
    main: statCpuMs(`/proc/${pid}/task/${pid}/stat`),
    all: statCpuMs(`/proc/${pid}/stat`),
    tree: procTree(pid).reduce((n, p) => n + statCpuMs(`/proc/${p}/stat`), 0),
  };
}
