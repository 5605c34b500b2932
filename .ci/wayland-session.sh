#!/usr/bin/env bash
# A private headless GNOME (Wayland) desktop for tests and CI: a private system bus, a private
# session bus, PipeWire + WirePlumber, gnome-shell --headless (mutter as the Wayland compositor,
# one virtual monitor), xdg-desktop-portal with the GNOME backend (activated on the session bus),
# and the AT-SPI bus.
#
#   .ci/wayland-session.sh start [STATE_DIR]  starts everything, prints KEY=VALUE lines
#                                             (WAYLAND_DISPLAY, DBUS_SESSION_BUS_ADDRESS,
#                                             DBUS_SYSTEM_BUS_ADDRESS, XDG_RUNTIME_DIR, ...,
#                                             UIINSPECT_WAYLAND_STATE) on stdout
#   .ci/wayland-session.sh stop STATE_DIR     tears everything down by PID and removes STATE_DIR
#   source .ci/wayland-session.sh start       the same, exporting the variables into this shell
#
# Why the namespace: without systemd-logind, gnome-shell still sees /run/systemd/seats, picks the
# logind backend and its UI dies. Every process of the session runs in a private mount namespace
# where /run/systemd is an empty tmpfs; the rest of the file system is shared.
# Readiness is polled (the Wayland socket, bus names, PipeWire's socket); no fixed sleeps, bounded
# by UIINSPECT_WAYLAND_READY_TIMEOUT_S (90).

_uiw_sourced=0
(return 0 2>/dev/null) && _uiw_sourced=1

_uiw_log() { echo "wayland-session: $*" >&2; }

# Polling and ending processes by PID: the helpers both private desktops share.
# shellcheck source=../sandbox/session-lib.sh
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../sandbox/session-lib.sh"

_uiw_wait_for() { _uis_wait_for wayland-session "${UIINSPECT_WAYLAND_READY_TIMEOUT_S:-90}" "$@"; }

# Every process whose environment names this session's runtime folder (activated services, apps
# the tests forgot), by PID. Only processes of ours can carry that fresh, random path.
_uiw_session_pids() {
  local runtime="$1" p
  for p in /proc/[0-9]*; do
    [ -r "$p/environ" ] || continue
    if { tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -qxF "XDG_RUNTIME_DIR=$runtime"; then
      echo "${p#/proc/}"
    fi
  done
}

_uiw_stop() {
  local state="$1"
  if [ -z "$state" ] || [ ! -d "$state" ]; then
    _uiw_log "stop: no state directory"
    return 1
  fi
  local name pid
  # Reverse start order; the buses last (activated services exit with their bus).
  for name in shell wireplumber pipewire session_bus system_bus; do
    [ -f "$state/$name.pid" ] && _uis_kill_tree "$(cat "$state/$name.pid")"
  done
  # Whatever the session bus activated and reparented (portals, the a11y launcher, dconf).
  if [ -f "$state/runtime.path" ]; then
    for pid in $(_uiw_session_pids "$(cat "$state/runtime.path")"); do
      [ "$pid" = "$$" ] || _uis_kill "$pid"
    done
  fi
  rm -rf "$state"
}

_uiw_has_name() {
  env "${_uiw_envs[@]}" dbus-send --session --print-reply --dest=org.freedesktop.DBus \
    /org/freedesktop/DBus org.freedesktop.DBus.NameHasOwner "string:$1" | grep -q 'boolean true'
}

_uiw_start() {
  local state="${1:-}" d
  for d in gnome-shell pipewire wireplumber dbus-daemon dbus-send unshare /usr/libexec/xdg-desktop-portal /usr/libexec/xdg-desktop-portal-gnome; do
    if ! command -v "$d" >/dev/null 2>&1; then
      _uiw_log "missing $d (run .ci/install-wayland-deps.sh)"
      return 1
    fi
  done
  if [ -z "$state" ]; then state=$(mktemp -d "${TMPDIR:-/tmp}/uiinspect-wl.XXXXXX") || return 1; fi
  mkdir -p "$state" && chmod 0700 "$state" || return 1
  local runtime="$state/runtime"
  mkdir -p "$runtime" "$state/config" "$state/data" "$state/cache" && chmod 0700 "$runtime" || return 1
  echo "$runtime" >"$state/runtime.path"

  # 1. A private system bus (UPower, logind lookups fail fast instead of hanging).
  cat >"$state/system-bus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=$state/system_bus_socket</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
EOF
  local out
  out=$(dbus-daemon --config-file="$state/system-bus.conf" --fork --print-pid=1 </dev/null) || {
    _uiw_log "system dbus-daemon failed"
    _uiw_stop "$state"
    return 1
  }
  echo "$out" | head -n1 >"$state/system_bus.pid"
  local system_bus="unix:path=$state/system_bus_socket"

  # The environment every process of the session gets, activated services included (they inherit
  # the session bus daemon's environment). WAYLAND_DISPLAY is known in advance: mutter takes
  # wayland-0 in a fresh runtime folder. Settings go to a private dconf database.
  _uiw_envs=(
    XDG_RUNTIME_DIR="$runtime" DBUS_SYSTEM_BUS_ADDRESS="$system_bus"
    XDG_CONFIG_HOME="$state/config" XDG_DATA_HOME="$state/data" XDG_CACHE_HOME="$state/cache"
    XDG_CURRENT_DESKTOP=GNOME XDG_SESSION_TYPE=wayland XDG_SESSION_DESKTOP=gnome
    WAYLAND_DISPLAY=wayland-0 GDK_BACKEND=wayland
  )
  # 2. A private session bus, in the namespace so that what it activates lives there too.
  out=$(env -u DISPLAY "${_uiw_envs[@]}" \
    unshare -m --propagation private sh -c \
    'if [ -d /run/systemd ]; then mount -t tmpfs -o mode=0755 tmpfs /run/systemd || exit 97; fi; exec dbus-daemon --session --fork --print-address=1 --print-pid=1' \
    </dev/null) || {
    _uiw_log "session dbus-daemon failed"
    _uiw_stop "$state"
    return 1
  }
  local bus_address
  bus_address=$(printf '%s\n' "$out" | sed -n 1p)
  printf '%s\n' "$out" | sed -n 2p >"$state/session_bus.pid"
  _uiw_envs+=(DBUS_SESSION_BUS_ADDRESS="$bus_address")

  # 3. PipeWire and WirePlumber (ScreenCast streams are PipeWire nodes). WirePlumber's Bluetooth
  # monitor loads its logind plugin, which fails without /run/systemd and takes WirePlumber down.
  mkdir -p "$state/config/wireplumber/bluetooth.lua.d"
  echo 'bluez_monitor.enabled = false' >"$state/config/wireplumber/bluetooth.lua.d/51-no-bluez.lua"
  env -u DISPLAY "${_uiw_envs[@]}" setsid unshare -m --propagation private sh -c \
    'if [ -d /run/systemd ]; then mount -t tmpfs -o mode=0755 tmpfs /run/systemd; fi; exec pipewire' \
    </dev/null >"$state/pipewire.log" 2>&1 &
  echo $! >"$state/pipewire.pid"
  _uiw_wait_for "PipeWire" test -S "$runtime/pipewire-0" || {
    _uiw_stop "$state"
    return 1
  }
  env -u DISPLAY "${_uiw_envs[@]}" setsid unshare -m --propagation private sh -c \
    'if [ -d /run/systemd ]; then mount -t tmpfs -o mode=0755 tmpfs /run/systemd; fi; exec wireplumber' \
    </dev/null >"$state/wireplumber.log" 2>&1 &
  echo $! >"$state/wireplumber.pid"

  # 4. GNOME Shell, headless, one virtual monitor, no Xwayland.
  local size="${UIINSPECT_WAYLAND_MONITOR:-1280x800}"
  env -u DISPLAY "${_uiw_envs[@]}" setsid unshare -m --propagation private sh -c \
    'if [ -d /run/systemd ]; then mount -t tmpfs -o mode=0755 tmpfs /run/systemd || exit 97; fi; exec gnome-shell --headless --wayland --no-x11 --virtual-monitor "$1"' \
    sh "$size" </dev/null >"$state/shell.log" 2>&1 &
  echo $! >"$state/shell.pid"
  _uiw_wait_for "the Wayland socket" test -S "$runtime/wayland-0" || {
    _uiw_stop "$state"
    return 1
  }
  local n
  for n in org.gnome.Shell org.gnome.Mutter.ScreenCast org.gnome.Mutter.RemoteDesktop org.gnome.Shell.Introspect; do
    _uiw_wait_for "$n" _uiw_has_name "$n" || {
      _uiw_stop "$state"
      return 1
    }
  done

  # The shell logs this once its startup animation has ended (it then shows its overview).
  _uiw_wait_for "the shell's start-up" grep -q "GNOME Shell started" "$state/shell.log" || {
    # What the shell said before the state folder goes: the only trace of why it never started.
    echo "wayland-session: the shell $(_uis_alive "$(cat "$state/shell.pid")" && echo "still runs" || echo "is gone"); the end of its log:" >&2
    tail -n 40 "$state/shell.log" >&2
    _uiw_stop "$state"
    return 1
  }

  # 5. The accessibility bus (activated by org.a11y.Bus.GetAddress).
  _uiw_a11y_ready() {
    env "${_uiw_envs[@]}" dbus-send --session --print-reply --dest=org.a11y.Bus /org/a11y/bus \
      org.a11y.Bus.GetAddress | grep -q 'string "'
  }
  _uiw_wait_for "the AT-SPI bus" _uiw_a11y_ready || {
    _uiw_stop "$state"
    return 1
  }

  # 6. The portal frontend (activated; it starts the GNOME backend on first use).
  _uiw_portal_ready() {
    env "${_uiw_envs[@]}" dbus-send --session --print-reply --dest=org.freedesktop.portal.Desktop \
      /org/freedesktop/portal/desktop org.freedesktop.DBus.Properties.Get \
      string:org.freedesktop.portal.ScreenCast string:version | grep -q 'uint32'
  }
  _uiw_wait_for "xdg-desktop-portal" _uiw_portal_ready || {
    _uiw_stop "$state"
    return 1
  }

  {
    printf 'WAYLAND_DISPLAY=wayland-0\nDBUS_SESSION_BUS_ADDRESS=%s\nDBUS_SYSTEM_BUS_ADDRESS=%s\n' "$bus_address" "$system_bus"
    printf 'XDG_RUNTIME_DIR=%s\nXDG_CONFIG_HOME=%s\nXDG_DATA_HOME=%s\nXDG_CACHE_HOME=%s\n' "$runtime" "$state/config" "$state/data" "$state/cache"
    printf 'XDG_CURRENT_DESKTOP=GNOME\nXDG_SESSION_TYPE=wayland\nGDK_BACKEND=wayland\nUIINSPECT_WAYLAND_STATE=%s\n' "$state"
  } >"$state/env"
  if [ "$_uiw_sourced" = 1 ]; then
    unset DISPLAY
    export WAYLAND_DISPLAY=wayland-0 DBUS_SESSION_BUS_ADDRESS="$bus_address" DBUS_SYSTEM_BUS_ADDRESS="$system_bus" \
      XDG_RUNTIME_DIR="$runtime" XDG_CONFIG_HOME="$state/config" XDG_DATA_HOME="$state/data" \
      XDG_CACHE_HOME="$state/cache" XDG_CURRENT_DESKTOP=GNOME XDG_SESSION_TYPE=wayland GDK_BACKEND=wayland \
      UIINSPECT_WAYLAND_STATE="$state"
  else
    cat "$state/env"
  fi
}

case "${1:-}" in
start)
  _uiw_start "${2:-}"
  ;;
stop)
  _uiw_stop "${2:-${UIINSPECT_WAYLAND_STATE:-}}"
  ;;
*)
  echo "usage: wayland-session.sh start [STATE_DIR] | stop STATE_DIR" >&2
  if [ "$_uiw_sourced" = 1 ]; then return 2; else exit 2; fi
  ;;
esac
