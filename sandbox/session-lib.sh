# shellcheck shell=bash
# Helpers shared by the private desktops (sandbox/x11-session.sh, .ci/wayland-session.sh):
# polling with a deadline, and ending processes by PID (each with its children). Sourced by
# those scripts, never run on its own. Nothing here ends a process by name.

# Polls "$@" until it succeeds or the deadline passes: _uis_wait_for PREFIX TIMEOUT_S WHAT CMD...
_uis_wait_for() {
  local prefix="$1" timeout_s="$2" what="$3"
  shift 3
  local deadline=$((SECONDS + timeout_s))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      echo "$prefix: timed out waiting for $what" >&2
      return 1
    fi
    sleep 0.05
  done
}

# Alive and not a zombie (a zombie waits for its parent to reap it and holds nothing but its PID
# entry; PID 1 of a container may never reap one).
_uis_alive() {
  local st
  st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  st="${st##*) }"
  [ "${st%% *}" != "Z" ]
}

# Ends one PID (TERM, then KILL after polling for 5 s), if it still runs.
_uis_kill() {
  local pid="$1"
  [ -n "$pid" ] || return 0
  _uis_alive "$pid" || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  local deadline=$((SECONDS + 5))
  while _uis_alive "$pid" && ((SECONDS < deadline)); do sleep 0.05; done
  _uis_alive "$pid" && kill -KILL "$pid" 2>/dev/null
  return 0
}

# Direct children of a PID (by id), so helpers a bus or an app spawned are ended too.
_uis_children() {
  ps -o pid= --ppid "$1" 2>/dev/null | tr -d ' '
}

# Ends a PID and everything below it, deepest first.
_uis_kill_tree() {
  local pid="$1" c
  [ -n "$pid" ] || return 0
  for c in $(_uis_children "$pid"); do _uis_kill_tree "$c"; done
  _uis_kill "$pid"
}
