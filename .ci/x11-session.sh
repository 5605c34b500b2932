#!/usr/bin/env bash
# The private desktop of CI and the tests: the packaged script (sandbox/x11-session.sh), which
# `uiinspect-mcp sandbox` also runs. Executed or sourced, as that script documents.
_uix_ci_here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if (return 0 2>/dev/null); then
  # shellcheck source=../sandbox/x11-session.sh
  source "$_uix_ci_here/../sandbox/x11-session.sh" "$@"
else
  exec bash "$_uix_ci_here/../sandbox/x11-session.sh" "$@"
fi
