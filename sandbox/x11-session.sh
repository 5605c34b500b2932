#!/usr/bin/env bash
# A private X11 desktop for trials, tests and CI: Xvfb + a private session bus + openbox + the
# AT-SPI bus. Shipped in the package; `uiinspect-mcp sandbox start|stop` runs it, and
# .ci/x11-session.sh is the same script for the repository's own CI.
#
#   x11-session.sh start [STATE_DIR]   starts everything, prints KEY=VALUE lines
#                                      (DISPLAY, DBUS_SESSION_BUS_ADDRESS, XDG_RUNTIME_DIR,
#                                      UIINSPECT_X11_STATE) on stdout
#   x11-session.sh stop STATE_DIR      tears everything down by PID and removes STATE_DIR
#                                      (an app.pid in STATE_DIR is ended first)
#   source x11-session.sh start        the same, exporting the variables into this shell
#
# Display: $UIINSPECT_X11_DISPLAY (a number) if set, else Xvfb picks a free one (-displayfd).
# Readiness is polled (xdpyinfo, _NET_SUPPORTING_WM_CHECK, org.a11y.Bus.GetAddress); there are
# no fixed sleeps, only a short poll interval bounded by UIINSPECT_X11_READY_TIMEOUT_S (20).

_uix_sourced=0
(return 0 2>/dev/null) && _uix_sourced=1

_uix_log() { echo "x11-session: $*" >&2; }

# Polling and ending processes by PID: the helpers both private desktops share.
# shellcheck source=session-lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/session-lib.sh"

_uix_wait_for() { _uis_wait_for x11-session "${UIINSPECT_X11_READY_TIMEOUT_S:-20}" "$@"; }

_uix_stop() {
  local state="$1"
  if [ -z "$state" ] || [ ! -d "$state" ]; then
    _uix_log "stop: no state directory"
    return 1
  fi
  local name
  # Reverse start order: apps' helpers first, the X server last.
  for name in app a11y_launcher openbox dbus xvfb; do
    if [ -f "$state/$name.pid" ]; then
      _uis_kill_tree "$(cat "$state/$name.pid")"
    fi
  done
  rm -rf "$state"
}

# Executed (not sourced), a start that is interrupted (SIGINT, SIGTERM, SIGHUP: its caller killed
# or timed out) stops what it has started before it exits: what its PID files name, and the last
# process it started in the background ($!), in case the signal came before its PID was written.
# Sourced, the shell's own traps stay.
_uix_interrupted() {
  local state="$1" last="$2"
  [ -n "$last" ] && _uis_kill_tree "$last"
  [ -n "$state" ] && [ -d "$state" ] && _uix_stop "$state"
}

_uix_trap_signals() {
  [ "$_uix_sourced" = 1 ] && return 0
  local sig code
  for sig in INT:130 TERM:143 HUP:129; do
    code="${sig#*:}"
    # shellcheck disable=SC2064 # the exit code is fixed now; $state and $! are read when it runs
    trap "_uix_interrupted \"\$state\" \"\$!\"; exit $code" "${sig%%:*}"
  done
}

_uix_start() {
  local state="${1:-}"
  _uix_trap_signals
  local d
  for d in Xvfb xdpyinfo xprop openbox dbus-daemon dbus-send; do
    if ! command -v "$d" >/dev/null 2>&1; then
      _uix_log "missing $d (Debian/Ubuntu: sudo apt install xvfb x11-utils openbox dbus dbus-x11 at-spi2-core)"
      return 1
    fi
  done
  if [ -z "$state" ]; then state=$(mktemp -d "${TMPDIR:-/tmp}/uiinspect-x11.XXXXXX") || return 1; fi
  mkdir -p "$state" && chmod 0700 "$state" || return 1
  # Marks the folder as this script's state (a test run's leak guard stops only such folders).
  echo "x11-session.sh" >"$state/x11-session.state" || return 1
  local runtime="$state/runtime"
  mkdir -p "$runtime" && chmod 0700 "$runtime" || return 1

  # 1. Xvfb on a free display.
  local display_num
  if [ -n "${UIINSPECT_X11_DISPLAY:-}" ]; then
    display_num="${UIINSPECT_X11_DISPLAY#:}"
    if [ -e "/tmp/.X11-unix/X$display_num" ] || [ -e "/tmp/.X$display_num-lock" ]; then
      _uix_log "display :$display_num is in use"
      return 1
    fi
    setsid Xvfb ":$display_num" -screen 0 1280x800x24 -nolisten tcp -noreset \
      </dev/null >"$state/xvfb.log" 2>&1 &
    echo $! >"$state/xvfb.pid"
  else
    : >"$state/displayfd"
    setsid Xvfb -displayfd 3 -screen 0 1280x800x24 -nolisten tcp -noreset \
      </dev/null >"$state/xvfb.log" 2>&1 3>"$state/displayfd" &
    echo $! >"$state/xvfb.pid"
    _uix_wait_for "Xvfb to pick a display" test -s "$state/displayfd" || {
      _uix_stop "$state"
      return 1
    }
    display_num=$(head -n1 "$state/displayfd" | tr -dc '0-9')
  fi
  local display=":$display_num"
  _uix_wait_for "Xvfb on $display" env DISPLAY="$display" xdpyinfo || {
    _uix_stop "$state"
    return 1
  }

  # 2. A private session bus.
  local out
  out=$(env XDG_RUNTIME_DIR="$runtime" DISPLAY="$display" \
    dbus-daemon --session --fork --print-address=1 --print-pid=3 </dev/null 3>"$state/dbus.pid") || {
    _uix_log "dbus-daemon failed"
    _uix_stop "$state"
    return 1
  }
  # The daemon wrote its PID into dbus.pid itself (fd 3), before its parent returned.
  local bus_address
  bus_address=$(printf '%s\n' "$out" | sed -n 1p)

  local -a envs=(DISPLAY="$display" DBUS_SESSION_BUS_ADDRESS="$bus_address" XDG_RUNTIME_DIR="$runtime")

  # 3. openbox, ready once it advertises _NET_SUPPORTING_WM_CHECK on the root window.
  env "${envs[@]}" setsid openbox --sm-disable </dev/null >"$state/openbox.log" 2>&1 &
  echo $! >"$state/openbox.pid"
  _uix_wm_ready() { env "${envs[@]}" xprop -root _NET_SUPPORTING_WM_CHECK | grep -q "window id"; }
  _uix_wait_for "openbox" _uix_wm_ready || {
    _uix_stop "$state"
    return 1
  }

  # 4. The accessibility bus (activated by org.a11y.Bus.GetAddress on the session bus).
  _uix_a11y_ready() {
    env "${envs[@]}" dbus-send --session --print-reply --dest=org.a11y.Bus /org/a11y/bus \
      org.a11y.Bus.GetAddress | grep -q 'string "'
  }
  _uix_wait_for "the AT-SPI bus" _uix_a11y_ready || {
    _uix_stop "$state"
    return 1
  }
  local launcher_pid
  launcher_pid=$(env "${envs[@]}" dbus-send --session --print-reply --dest=org.freedesktop.DBus \
    /org/freedesktop/DBus org.freedesktop.DBus.GetConnectionUnixProcessID string:org.a11y.Bus 2>/dev/null |
    sed -n 's/.*uint32 \([0-9]*\).*/\1/p')
  [ -n "$launcher_pid" ] && echo "$launcher_pid" >"$state/a11y_launcher.pid"
  # at-spi2-registryd is activated later on the a11y bus; it exits when that bus goes away.

  printf 'DISPLAY=%s\nDBUS_SESSION_BUS_ADDRESS=%s\nXDG_RUNTIME_DIR=%s\nUIINSPECT_X11_STATE=%s\n' \
    "$display" "$bus_address" "$runtime" "$state" >"$state/env"
  [ "$_uix_sourced" = 1 ] || trap - INT TERM HUP
  if [ "$_uix_sourced" = 1 ]; then
    export DISPLAY="$display" DBUS_SESSION_BUS_ADDRESS="$bus_address" XDG_RUNTIME_DIR="$runtime" \
      UIINSPECT_X11_STATE="$state"
  else
    cat "$state/env"
  fi
}

case "${1:-}" in
start)
  _uix_start "${2:-}"
  ;;
stop)
  _uix_stop "${2:-${UIINSPECT_X11_STATE:-}}"
  ;;
*)
  echo "usage: x11-session.sh start [STATE_DIR] | stop STATE_DIR" >&2
  if [ "$_uix_sourced" = 1 ]; then return 2; else exit 2; fi
  ;;
esac
