#!/bin/bash
# setup.sh: make the real DirectML.dll runnable under Wine on Mesa's CPU Vulkan driver (lavapipe).
#
# For a Debian 12 (bookworm) machine, run as root, with access only to the package registries
# (Debian's archive, PyPI). Idempotent: a second run checks and does nothing it need not do.
#
#   sudo bash setup.sh [--no-smoke]
#
# What it does (README.md says why):
#   1. adds Debian's bookworm-backports suite (if apt does not see it yet);
#   2. installs wine64 8.0 (bookworm), Xvfb, the mingw-w64 C compiler for x86-64 Windows, and
#      mesa-vulkan-drivers from bookworm-backports (Mesa 25.0: its lavapipe has
#      VK_EXT_descriptor_indexing, without which Wine 8.0's vkd3d 1.6 rejects every descriptor table);
#   3. downloads the onnxruntime-directml wheel (win_amd64) from PyPI and takes DirectML.dll out of it;
#   4. creates a 64-bit WINEPREFIX, sets HKCU\Software\Wine\Direct3D renderer=vulkan, copies
#      DirectML.dll into its system32;
#   5. unless --no-smoke: builds dml_smoke.exe and runs it through run.sh (ReluGrad and ClipGrad1 must
#      give the exact expected outputs).
#
# Environment:
#   DML_WINE_HOME   where the prefix and DirectML.dll go (default /opt/dmlconform-wine); run.sh reads it too
#   ORT_DML_VERSION onnxruntime-directml wheel version (default 1.24.4, the one checked here)
#   DML_DLL_SHA256  expected sha256 of DirectML.dll ("" skips the check; default: the 1.24.4 wheel's)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DML_WINE_HOME="${DML_WINE_HOME:-/opt/dmlconform-wine}"
ORT_DML_VERSION="${ORT_DML_VERSION:-1.24.4}"
DEFAULT_SHA=""
[ "$ORT_DML_VERSION" = 1.24.4 ] && DEFAULT_SHA=c07cb8c2f870f0152bfb690f64c4b048e78bbc219efad420a9758fc896cbecb0
DML_DLL_SHA256="${DML_DLL_SHA256-$DEFAULT_SHA}"
SMOKE=1
for a in "$@"; do
  case "$a" in
    --no-smoke) SMOKE=0 ;;
    *) echo "usage: setup.sh [--no-smoke]" >&2; exit 64 ;;
  esac
done

log() { echo "[dml-wine setup +${SECONDS}s] $*" >&2; }
die() { echo "[dml-wine setup] ERROR: $*" >&2; exit 1; }
# Another job on the machine may run apt too: serialise on one lock.
apt_locked() { flock /tmp/apt.lock env DEBIAN_FRONTEND=noninteractive apt-get "$@"; }

[ "$(id -u)" = 0 ] || die "run as root (apt-get install)"
. /etc/os-release
[ "${VERSION_CODENAME:-}" = bookworm ] || die "this recipe is for Debian 12 (bookworm); found ${PRETTY_NAME:-unknown}"

BASE_PKGS=(wine64 xvfb xauth unzip vulkan-tools gcc-mingw-w64-x86-64-win32)
# pip only downloads a wheel here; any python3 with pip will do (Debian's is installed if there is none).
python3 -m pip --version >/dev/null 2>&1 || BASE_PKGS+=(python3-pip ca-certificates)
MESA_MIN=25   # major version of Mesa needed (lavapipe with VK_EXT_descriptor_indexing; 22.3 lacks it)

installed_version() { { dpkg-query -W -f='${Status} ${Version}\n' "$1" 2>/dev/null || true; } | awk '$3=="installed"{print $4}'; }

need_apt=0
for p in "${BASE_PKGS[@]}"; do [ -n "$(installed_version "$p")" ] || need_apt=1; done
mesa_v="$(installed_version mesa-vulkan-drivers)"
[ -n "$mesa_v" ] && [ "${mesa_v%%.*}" -ge "$MESA_MIN" ] 2>/dev/null || need_apt=1

if [ "$need_apt" = 1 ]; then
  # 1. bookworm-backports
  if ! grep -rqsE '^[^#]*bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    log "adding bookworm-backports"
    cat > /etc/apt/sources.list.d/dmlconform-bookworm-backports.sources <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  fi
  log "apt-get update"
  apt_locked update -q >&2
  # 2. packages: the base set from bookworm, then Mesa from bookworm-backports
  log "installing ${BASE_PKGS[*]}"
  apt_locked install -y -q --no-install-recommends "${BASE_PKGS[@]}" >&2
  log "installing mesa-vulkan-drivers from bookworm-backports"
  apt_locked install -y -q --no-install-recommends -t bookworm-backports mesa-vulkan-drivers >&2
  mesa_v="$(installed_version mesa-vulkan-drivers)"
  [ "${mesa_v%%.*}" -ge "$MESA_MIN" ] || die "mesa-vulkan-drivers $mesa_v installed; need >= $MESA_MIN (bookworm-backports)"
else
  log "packages already installed (mesa-vulkan-drivers $mesa_v)"
fi

WINE64=/usr/lib/wine/wine64
[ -x "$WINE64" ] || die "$WINE64 missing after install"

# 3. DirectML.dll from the onnxruntime-directml wheel
mkdir -p "$DML_WINE_HOME/wheel"
DLL="$DML_WINE_HOME/DirectML.dll"
want_stamp="onnxruntime-directml==$ORT_DML_VERSION"
if [ ! -f "$DLL" ] || [ "$(cat "$DML_WINE_HOME/DirectML.dll.source" 2>/dev/null)" != "$want_stamp" ]; then
  log "downloading $want_stamp (win_amd64 wheel)"
  rm -f "$DML_WINE_HOME"/wheel/*.whl
  python3 -m pip download -q --no-deps --only-binary=:all: --platform win_amd64 --python-version 3.11 \
      "$want_stamp" -d "$DML_WINE_HOME/wheel" >&2
  whl="$(ls "$DML_WINE_HOME"/wheel/onnxruntime_directml-*.whl | head -n1)"
  unzip -o -q -j "$whl" onnxruntime/capi/DirectML.dll -d "$DML_WINE_HOME"
  echo "$want_stamp" > "$DML_WINE_HOME/DirectML.dll.source"
  rm -f "$whl"    # 20+ MB; only the DLL is kept
fi
sha="$(sha256sum "$DLL" | cut -d' ' -f1)"
if [ -n "$DML_DLL_SHA256" ] && [ "$sha" != "$DML_DLL_SHA256" ]; then
  die "DirectML.dll sha256 $sha, expected $DML_DLL_SHA256 (set DML_DLL_SHA256= to accept another)"
fi
log "DirectML.dll: $want_stamp, sha256 $sha"

# 4. the Wine prefix
export WINEPREFIX="$DML_WINE_HOME/prefix" WINEARCH=win64 WINEDEBUG="${WINEDEBUG:--all}"
export WINEDLLOVERRIDES="mscoree,mshtml=;winemenubuilder.exe=d"
if [ ! -f "$WINEPREFIX/system.reg" ]; then
  log "creating WINEPREFIX $WINEPREFIX"
  "$WINE64" wineboot -i >&2 2>&1 </dev/null || true
  /usr/lib/wine/wineserver -w || true   # the registry files are written when wineserver exits
  [ -f "$WINEPREFIX/system.reg" ] || die "wineboot did not create $WINEPREFIX"
fi
if ! grep -qs '"renderer"="vulkan"' "$WINEPREFIX/user.reg"; then
  log "setting HKCU\\Software\\Wine\\Direct3D renderer=vulkan"
  "$WINE64" reg add 'HKCU\Software\Wine\Direct3D' /v renderer /d vulkan /f >&2 </dev/null
  /usr/lib/wine/wineserver -w || true   # wait for wineserver to exit: the registry is on disk then
fi
SYS32="$WINEPREFIX/drive_c/windows/system32"
cmp -s "$DLL" "$SYS32/DirectML.dll" || cp "$DLL" "$SYS32/DirectML.dll"
log "prefix ready: $WINEPREFIX (DirectML.dll in C:\\windows\\system32)"

# 5. smoke test
if [ "$SMOKE" = 1 ]; then
  mkdir -p "$DML_WINE_HOME/bin"
  x86_64-w64-mingw32-gcc -O1 -Wall -o "$DML_WINE_HOME/bin/dml_smoke.exe" "$HERE/dml_smoke.c" -ld3d12
  log "running dml_smoke.exe"
  if DML_WINE_HOME="$DML_WINE_HOME" "$HERE/run.sh" "$DML_WINE_HOME/bin/dml_smoke.exe" 20 >&2; then
    log "smoke test passed"
  else
    die "smoke test failed (see above)"
  fi
fi
log "done"
