#!/usr/bin/env bash
# Runs the Win32 tests inside Wine with the Windows node.exe and reports "N passed, N failed".
# node.exe cannot write to Linux pipes (EBADF), so the runner writes its results to a file.
# Usage: .ci/wine-run.sh            (needs .ci/wine-setup.sh once; builds dist/ if missing)
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=wine-env.sh
source "$here/wine-env.sh"
cd "$WINE_CI_ROOT"
mkdir -p "$WINE_CI_DIR/out"
results="$WINE_CI_DIR/out/win32-results.json"
log="$WINE_CI_DIR/out/win32-runner.log"
rm -f "$results" "$log"

# WINE_CI_OUTDIR: build into a private folder instead of dist/ (a shared work tree where others
# rebuild dist/ concurrently); the runner then imports from there.
outdir="${WINE_CI_OUTDIR:-dist}"
if [ ! -f "$outdir/platforms/win32/index.js" ] || [ "${WINE_CI_BUILD:-1}" = 1 ]; then
  npx tsc -p tsconfig.json --noEmitOnError false --outDir "$outdir" >/dev/null 2>&1 || true
fi
# The build reads ../../package.json relative to its files (dist/supervisor/…).
if [ "$outdir" != dist ]; then cp package.json "$(dirname "$outdir")/package.json" 2>/dev/null || true; fi
export UIINSPECT_WIN32_DIST
UIINSPECT_WIN32_DIST="$(winepath -w "$(cd "$outdir" && pwd)" 2>/dev/null)"
if ! xdpyinfo -display "$WINE_CI_DISPLAY" >/dev/null 2>&1; then
  nohup Xvfb "$WINE_CI_DISPLAY" -screen 0 1280x800x24 -nolisten tcp >"$WINE_CI_DIR/xvfb.log" 2>&1 &
  echo $! >"$WINE_CI_DIR/xvfb.pid"
  for _ in $(seq 1 50); do xdpyinfo -display "$WINE_CI_DISPLAY" >/dev/null 2>&1 && break; sleep 0.1; done
fi
wineserver -p >/dev/null 2>&1 || true
t0=$(date +%s)
timeout -k 10 "${WINE_CI_TIMEOUT:-300}" wine "$WINE_CI_NODE_EXE" --import ./test/win32/loader.mjs \
  test/win32/runner.mjs "$(winepath -w "$results" 2>/dev/null)" </dev/null >"$log" 2>&1
rc=$?
elapsed=$(( $(date +%s) - t0 ))
if [ "${WINE_CI_KEEP_SERVER:-0}" != 1 ]; then wineserver -k >/dev/null 2>&1 || true; fi

if [ ! -f "$results" ]; then
  echo "win32 (wine): runner produced no results (exit $rc); log:"
  tail -n 40 "$log"
  echo "0 passed, 1 failed"
  exit 1
fi
node -e '
const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
let p = 0, f = 0;
for (const t of r.results) {
  console.log(`${t.ok ? "ok  " : "FAIL"} ${t.name} (${t.ms} ms)${t.ok ? "" : "\n     " + t.error}`);
  t.ok ? p++ : f++;
}
if (!r.done) { console.log("FAIL runner did not finish (crash or timeout)"); f++; }
console.log("facts: " + JSON.stringify(r.facts));
console.log("bench (Wine, " + (r.facts.wine || "?") + "): " + JSON.stringify(r.bench));
console.log(`${p} passed, ${f} failed`);
process.exit(f ? 1 : 0);
' "$results"
st=$?
echo "win32 (wine): runner exit $rc, ${elapsed}s"
exit $st
