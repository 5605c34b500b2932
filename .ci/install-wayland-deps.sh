#!/usr/bin/env bash
# Installs what the Wayland (GNOME) backend and its tests need (Debian bookworm). Runs as root or
# via sudo. Headless GNOME Shell (mutter as the Wayland compositor), PipeWire + WirePlumber for
# ScreenCast streams, the desktop portal with its GNOME backend, GStreamer's PipeWire source (the
# frame reader), AT-SPI, GTK 3 and GTK 4 demo applications.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get -o DPkg::Lock::Timeout=600 update
$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends \
  gnome-shell mutter dbus at-spi2-core \
  pipewire pipewire-bin wireplumber \
  xdg-desktop-portal xdg-desktop-portal-gnome \
  gstreamer1.0-pipewire gstreamer1.0-tools gstreamer1.0-plugins-base \
  gtk-3-examples gtk-4-examples zenity fonts-dejavu-core
