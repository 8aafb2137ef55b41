#!/usr/bin/env bash
# The Debian 12 packages of README "Real DirectML", as root: Wine 8, Xvfb, mingw-w64's C++ compiler, Vulkan's tools and
# Mesa 25's lavapipe from bookworm-backports (bookworm's Mesa 22.3 lacks VK_EXT_descriptor_indexing, without which
# Wine's vkd3d drops every dispatch), then Chromium for the HTML report's browser test and PostgreSQL's server for the
# results history's tests (tests/history: they start a throwaway server of their own). Idempotent; another job on the
# machine may run apt too, so every apt call holds one lock.
set -euo pipefail
apt_locked() { flock /tmp/apt.lock env DEBIAN_FRONTEND=noninteractive apt-get "$@"; }
if ! grep -rqsE '^[^#]*bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    echo "deb http://deb.debian.org/debian bookworm-backports main" > /etc/apt/sources.list.d/bookworm-backports.list
fi
apt_locked update -q
apt_locked install -y -q --no-install-recommends wine64 xvfb xauth g++-mingw-w64-x86-64-win32 vulkan-tools chromium \
    postgresql
apt_locked install -y -q --no-install-recommends -t bookworm-backports mesa-vulkan-drivers
