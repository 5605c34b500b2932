#!/usr/bin/env bash
# Installs what the X11 backend and its tests need (Debian/Ubuntu). Runs as root or via sudo.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get -o DPkg::Lock::Timeout=120 update
$SUDO apt-get -o DPkg::Lock::Timeout=120 install -y --no-install-recommends \
  xvfb xauth x11-utils x11-apps xdotool openbox dbus dbus-x11 at-spi2-core xterm gtk-3-examples zenity \
  libxtst6 libxext6 libxres1 libx11-xcb1 libxi6 libxft2 fonts-dejavu-core python3-gi gir1.2-gtk-3.0 \
  python3-pyatspi  # the baseline `npm run bench` compares our walk with
