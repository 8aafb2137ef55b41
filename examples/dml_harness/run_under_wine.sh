#!/bin/bash
# Runs the DirectML harness under Wine (Linux): the wrapper to give dmlconform as --harness.
#
#   dmlconform run --backend native --harness "examples/dml_harness/run_under_wine.sh [harness options]"
#
# Needs: wine64 (Debian 12: Wine 8.0), Xvfb, and a Vulkan driver with VK_EXT_descriptor_indexing:
# on Debian 12 that is Mesa's lavapipe from bookworm-backports (mesa-vulkan-drivers 25.x). With
# bookworm's Mesa 22.3 every dispatch is dropped ("Invalid heap for base descriptor") and outputs keep
# the harness's poison bytes; see README.md.
#
# Environment (all optional):
#   DMLH_EXE          the harness (default: build/dml_harness.exe next to this script, DirectML.dll beside it)
#   WINE              the wine loader (default: /usr/lib/wine/wine64, Debian's path)
#   WINEPREFIX        the prefix (default: build/wineprefix next to this script; created on first use)
#   WINEDEBUG         Wine's log channels (default: -all; Wine logs go to stderr, never to stdout)
#   VKD3D_DEBUG       vkd3d's log level (default: err, so a dropped dispatch shows on stderr)
#   VK_ICD_FILENAMES  Vulkan drivers (default: lavapipe only, so results do not depend on the host GPU)
#   DISPLAY           an X display; when unset a private Xvfb is started for this process and stopped
#                     when the process is gone (Wine's DXGI needs a display: without one
#                     D3D12CreateDevice fails with DXGI_ERROR_UNSUPPORTED)
#
#   run_under_wine.sh --prepare   create the prefix now (the first start otherwise pays for it)
#
# The last step is `exec wine`: the pid the runner started becomes the Windows process itself, so
# killing the harness (timeouts) kills it. The display handling follows the recipe in the dml-wine
# branch (examples/dml_harness/wine/run.sh: Xvfb -displayfd and a watcher on this pid).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
exe=${DMLH_EXE:-$here/build/dml_harness.exe}
wine=${WINE:-/usr/lib/wine/wine64}
export WINEPREFIX="${WINEPREFIX:-$here/build/wineprefix}"
export WINEARCH=win64
export WINEDEBUG="${WINEDEBUG:--all}"
export WINEDLLOVERRIDES="${WINEDLLOVERRIDES:-mscoree,mshtml=;winemenubuilder.exe=d}"
export VKD3D_DEBUG="${VKD3D_DEBUG:-err}" VKD3D_SHADER_DEBUG="${VKD3D_SHADER_DEBUG:-err}"
if [ -z "${VK_ICD_FILENAMES:-}" ] && [ -f /usr/share/vulkan/icd.d/lvp_icd.x86_64.json ]; then
    export VK_ICD_FILENAMES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json
fi

log() { echo "run_under_wine.sh: $*" >&2; }

[ -x "$wine" ] || { log "no Wine loader at $wine (apt-get install wine64, or set WINE)"; exit 127; }

prepare_prefix() {
    [ -f "$WINEPREFIX/.dmlh-ready" ] && return 0
    mkdir -p "$WINEPREFIX"
    (
        flock 9
        if [ ! -f "$WINEPREFIX/.dmlh-ready" ]; then
            log "creating Wine prefix $WINEPREFIX (once)"
            WINEDEBUG=-all "$wine" wineboot -i >/dev/null 2>&1 || true
            # wined3d's Vulkan renderer: Wine's d3d12 (its bundled vkd3d) runs on Vulkan, here lavapipe.
            WINEDEBUG=-all "$wine" reg add 'HKCU\Software\Wine\Direct3D' /v renderer /d vulkan /f >/dev/null 2>&1
            # wineboot returns before the prefix is complete: wait until the wineserver has written it
            # out and exited, or the first harness start may find no usable display driver.
            "${WINESERVER:-$(dirname "$wine")/wineserver}" -w 2>/dev/null || true
            touch "$WINEPREFIX/.dmlh-ready"
        fi
    ) 9>"$WINEPREFIX.lock"
}

prepare_prefix
if [ "${1:-}" = "--prepare" ]; then exit 0; fi
[ -f "$exe" ] || { log "no harness at $exe (run make in $here, or set DMLH_EXE)"; exit 127; }

if [ -z "${DISPLAY:-}" ]; then
    command -v Xvfb >/dev/null || { log "DISPLAY is unset and Xvfb is not installed (apt-get install xvfb)"; exit 69; }
    dfile=$(mktemp)
    # -displayfd: Xvfb picks a free display number and writes it to fd 3 once it accepts connections.
    Xvfb -displayfd 3 -nolisten tcp -screen 0 640x480x24 3>"$dfile" </dev/null 1>&2 &
    xpid=$!
    for _ in $(seq 200); do
        [ -s "$dfile" ] && break
        kill -0 "$xpid" 2>/dev/null || { log "Xvfb did not start"; rm -f "$dfile"; exit 69; }
        sleep 0.05
    done
    dnum=$(tr -dc 0-9 <"$dfile")
    rm -f "$dfile"
    [ -n "$dnum" ] || { log "Xvfb gave no display number"; kill "$xpid"; exit 69; }
    export DISPLAY=":$dnum"
    # Watcher: after exec this shell's pid ($$) is the harness; once it is gone (or a zombie), and then
    # the prefix's wineserver too, stop Xvfb. Waiting for the wineserver matters: it outlives the
    # harness by a few seconds with its desktop process (explorer.exe) connected to this display, and
    # a harness restarted meanwhile (after a crash or timeout) joins that desktop; killing the display
    # under it made the restarted harness die ("X connection to :N broken").
    wineserver=${WINESERVER:-$(dirname "$wine")/wineserver}
    (
        trap '' HUP INT TERM PIPE
        alive() {
            local st
            st=$(sed 's/.*) //' "/proc/$$/stat" 2>/dev/null) || return 1
            [ -n "$st" ] && [ "${st%% *}" != Z ]
        }
        while alive; do sleep 0.2; done
        "$wineserver" -w 2>/dev/null || true
        kill "$xpid" 2>/dev/null
    ) </dev/null >/dev/null 2>&1 &
fi

exec "$wine" "$exe" "$@"
