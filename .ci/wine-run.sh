#!/usr/bin/env bash
# Runs the Win32 tests inside Wine with the Windows node.exe and reports "N passed, N failed".
# node.exe cannot write to Linux pipes (EBADF), so the runner writes its results to a file.
# Usage: .ci/wine-run.sh            (needs .ci/wine-setup.sh once; builds dist/ if missing)
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# A display the caller names is used as is; otherwise this run starts its own (below).
given_display="${WINE_CI_DISPLAY:-}"
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

no_display() {
  echo "win32 (wine): $1; Xvfb log:"
  tail -n 20 "$WINE_CI_DIR/xvfb.log" 2>/dev/null
  echo "0 passed, 1 failed"
  exit 1
}
# Alive and not a zombie (an exited child stays a zombie until this shell reaps it).
alive() {
  local st
  st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  st="${st##*) }"
  [ "${st%% *}" != Z ]
}
# The X display, before any Wine process starts (Wine's processes take DISPLAY from the
# environment). By default a private Xvfb on a display it picks itself (-displayfd), stopped at
# the end: a fixed number may already be another run's server, and the tests would silently
# share its screen. WINE_CI_DISPLAY=:N uses that display, starting Xvfb there if it is not up.
# WINE_CI_KEEP_SERVER=1 keeps the wineserver (and its desktop on this display) for the next run,
# so it uses wine-env.sh's fixed display.
if [ -z "$given_display" ] && [ "${WINE_CI_KEEP_SERVER:-0}" = 1 ]; then given_display="$WINE_CI_DISPLAY"; fi
xvfb_pid=""
# An Xvfb started here is stopped on exit, unless the kept wineserver's desktop lives on it.
trap '[ -n "$xvfb_pid" ] && [ "${WINE_CI_KEEP_SERVER:-0}" != 1 ] && kill "$xvfb_pid" 2>/dev/null' EXIT
xvfb_args=(-screen 0 1280x800x24 -nolisten tcp -noreset)
if [ -z "$given_display" ]; then
  fdfile="$WINE_CI_DIR/xvfb.displayfd.$$"
  : >"$fdfile"
  Xvfb -displayfd 3 "${xvfb_args[@]}" </dev/null >"$WINE_CI_DIR/xvfb.log" 2>&1 3>"$fdfile" &
  xvfb_pid=$!
  deadline=$((SECONDS + 20))
  until [ -s "$fdfile" ]; do
    alive "$xvfb_pid" || no_display "Xvfb exited before reporting a display"
    ((SECONDS < deadline)) || no_display "Xvfb reported no display within 20 s"
    sleep 0.1
  done
  WINE_CI_DISPLAY=":$(head -n1 "$fdfile" | tr -dc '0-9')"
  rm -f "$fdfile"
elif ! xdpyinfo -display "$WINE_CI_DISPLAY" >/dev/null 2>&1; then
  Xvfb "$WINE_CI_DISPLAY" "${xvfb_args[@]}" </dev/null >"$WINE_CI_DIR/xvfb.log" 2>&1 &
  xvfb_pid=$!
  echo "$xvfb_pid" >"$WINE_CI_DIR/xvfb.pid"
fi
export WINE_CI_DISPLAY DISPLAY="$WINE_CI_DISPLAY"
deadline=$((SECONDS + 20))
until xdpyinfo -display "$WINE_CI_DISPLAY" >/dev/null 2>&1; do
  if [ -n "$xvfb_pid" ] && ! alive "$xvfb_pid"; then no_display "Xvfb for $WINE_CI_DISPLAY exited"; fi
  ((SECONDS < deadline)) || no_display "display $WINE_CI_DISPLAY not ready within 20 s"
  sleep 0.1
done

export UIINSPECT_WIN32_DIST
UIINSPECT_WIN32_DIST="$(winepath -w "$(cd "$outdir" && pwd)" 2>/dev/null)"
wineserver -p >/dev/null 2>&1 || true
t0=$(date +%s)
timeout -k 10 "${WINE_CI_TIMEOUT:-600}" wine "$WINE_CI_NODE_EXE" --import ./test/win32/loader.mjs \
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
