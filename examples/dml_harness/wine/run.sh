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
export WINEPREFIX="$DML_WINE_HOME/prefix"
if [ ! -f "$WINEPREFIX/system.reg" ] || [ ! -x /usr/lib/wine/wine64 ]; then
  echo "run.sh: no Wine prefix at $WINEPREFIX (run setup.sh first)" >&2; exit 69
fi
# The harness's wrapper does the rest (environment, lavapipe only, a private Xvfb and its watcher) for any
# program; setup.sh made this prefix, so mark it ready for the wrapper.
touch "$WINEPREFIX/.dmlh-ready"
program=$1
shift
DMLH_EXE="$program" exec "$(cd "$(dirname "$0")/.." && pwd)/run_under_wine.sh" "$@"
