#!/bin/bash
# run.sh PROGRAM.exe [ARGS...]: run a 64-bit Windows program under Wine, with the DirectML set-up
# that setup.sh made (WINEPREFIX with DirectML.dll in system32, Mesa lavapipe as the Vulkan device).
#
# - stdout is the program's alone: Wine, vkd3d, Xvfb and this script write only to stderr.
#   (A Windows C program should still put stdout in binary mode, _setmode(_fileno(stdout), _O_BINARY),
#   or msvcrt turns "\n" into "\r\n".)
# - The script ends with `exec`: its pid becomes the program's, so killing that pid kills the program.
# - Wine's DXGI needs an X display. If DISPLAY is unset, a private Xvfb is started and a small watcher
#   stops it once the program's pid is gone. To share one display between many runs, start
#   `Xvfb :N -nolisten tcp &` yourself and export DISPLAY=:N.
#
# Environment (all optional): DML_WINE_HOME (default /opt/dmlconform-wine), WINEDEBUG (default
# -all), VKD3D_DEBUG / VKD3D_SHADER_DEBUG (default err), VK_ICD_FILENAMES (default: lavapipe only).
set -euo pipefail

if [ $# -lt 1 ]; then echo "usage: run.sh PROGRAM.exe [ARGS...]" >&2; exit 64; fi
DML_WINE_HOME="${DML_WINE_HOME:-/opt/dmlconform-wine}"
WINE64=/usr/lib/wine/wine64
export WINEPREFIX="$DML_WINE_HOME/prefix"
if [ ! -f "$WINEPREFIX/system.reg" ] || [ ! -x "$WINE64" ]; then
  echo "run.sh: no Wine prefix at $WINEPREFIX (run setup.sh first)" >&2; exit 69
fi
export WINEARCH=win64
export WINEDEBUG="${WINEDEBUG:--all}"
export WINEDLLOVERRIDES="${WINEDLLOVERRIDES:-mscoree,mshtml=;winemenubuilder.exe=d}"
export VKD3D_DEBUG="${VKD3D_DEBUG:-err}" VKD3D_SHADER_DEBUG="${VKD3D_SHADER_DEBUG:-err}"
# Only Mesa's CPU driver, so that results do not depend on which GPU a machine happens to have.
if [ -z "${VK_ICD_FILENAMES:-}" ] && [ -f /usr/share/vulkan/icd.d/lvp_icd.x86_64.json ]; then
  export VK_ICD_FILENAMES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json
fi

if [ -z "${DISPLAY:-}" ]; then
  dfile="$(mktemp)"
  # -displayfd: Xvfb picks a free display number and writes it to fd 3 when ready.
  Xvfb -displayfd 3 -nolisten tcp -screen 0 640x480x24 3>"$dfile" </dev/null 1>&2 &
  xpid=$!
  for _ in $(seq 200); do
    [ -s "$dfile" ] && break
    kill -0 "$xpid" 2>/dev/null || { echo "run.sh: Xvfb did not start" >&2; rm -f "$dfile"; exit 69; }
    sleep 0.05
  done
  dnum="$(tr -dc 0-9 < "$dfile")"; rm -f "$dfile"
  [ -n "$dnum" ] || { echo "run.sh: Xvfb gave no display number" >&2; kill "$xpid"; exit 69; }
  export DISPLAY=":$dnum"
  # Watcher: this shell's pid ($$) becomes the program's after exec; when it is gone (or a zombie
  # not yet reaped), stop Xvfb. It holds none of the caller's pipes open.
  ( trap '' HUP INT TERM PIPE
    alive() { local st; st="$(sed 's/.*) //' /proc/$$/stat 2>/dev/null)" || return 1; [ -n "$st" ] && [ "${st%% *}" != Z ]; }
    while alive; do sleep 0.2; done
    kill "$xpid" 2>/dev/null ) </dev/null >/dev/null 2>&1 &
fi

exec "$WINE64" "$@"
