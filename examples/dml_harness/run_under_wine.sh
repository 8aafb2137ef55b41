#!/bin/sh
# Runs the DirectML harness under Wine (Linux): the wrapper to give dmlconform as --harness.
#
#   dmlconform run --backend native --harness "examples/dml_harness/run_under_wine.sh [harness options]"
#
# Environment (all optional):
#   DMLH_EXE     the harness (default: build/dml_harness.exe next to this script; DirectML.dll beside it)
#   WINE         the wine loader (default: /usr/lib/wine/wine64, Debian's path)
#   WINEPREFIX   the prefix (default: build/wineprefix next to this script; created on first use)
#   WINEDEBUG    Wine's log channels (default: fixme-all; Wine logs go to stderr, never to stdout)
#   DISPLAY      an X display; when unset, a private Xvfb is started once and reused (Wine's DXGI needs
#                a display: without one D3D12CreateDevice fails with DXGI_ERROR_UNSUPPORTED)
#
#   run_under_wine.sh --prepare        create the prefix and the display, then exit
#   run_under_wine.sh --stop-display   stop the Xvfb this script started
#
# The last step is `exec wine`: the runner's process is the Windows process itself, so killing the
# harness (timeouts) kills the harness and nothing is left behind but the idle wineserver.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
exe=${DMLH_EXE:-$here/build/dml_harness.exe}
wine=${WINE:-/usr/lib/wine/wine64}
export WINEPREFIX="${WINEPREFIX:-$here/build/wineprefix}"
export WINEDEBUG="${WINEDEBUG:-fixme-all}"
state="$WINEPREFIX.dmlh"   # display bookkeeping, outside the prefix

log() { echo "run_under_wine.sh: $*" >&2; }

prepare_prefix() {
    [ -f "$state/prefix-ready" ] && return 0
    mkdir -p "$state"
    (
        flock 9
        if [ ! -f "$state/prefix-ready" ]; then
            log "creating Wine prefix $WINEPREFIX (once)"
            WINEDEBUG=-all "$wine" wineboot -i >/dev/null 2>&1 || true
            # wined3d's Vulkan renderer: the d3d12 implementation (vkd3d) needs Vulkan, here lavapipe.
            WINEDEBUG=-all "$wine" reg add 'HKCU\Software\Wine\Direct3D' /v renderer /d vulkan /f >/dev/null 2>&1
            touch "$state/prefix-ready"
        fi
    ) 9>"$state/lock"
}

display_alive() {
    [ -f "$state/xvfb.pid" ] && [ -f "$state/display" ] && kill -0 "$(cat "$state/xvfb.pid")" 2>/dev/null &&
        [ -e "/tmp/.X11-unix/X$(cat "$state/display" | tr -d :)" ]
}

start_display() {
    mkdir -p "$state"
    # mkdir is the lock (atomic, and no descriptor for Xvfb to inherit); a lock older than a minute is stale.
    i=0
    until mkdir "$state/display.lock.d" 2>/dev/null; do
        if [ $i -ge 600 ]; then rmdir "$state/display.lock.d" 2>/dev/null || true; i=0; fi
        sleep 0.1; i=$((i + 1))
    done
    if ! display_alive; then
        if ! command -v Xvfb >/dev/null; then
            rmdir "$state/display.lock.d"
            log "Xvfb not found (apt-get install xvfb) and DISPLAY is unset"
            exit 1
        fi
        n=90
        while [ -e "/tmp/.X11-unix/X$n" ] || [ -e "/tmp/.X$n-lock" ]; do n=$((n + 1)); done
        nohup Xvfb ":$n" -nolisten tcp -screen 0 640x480x24 >/dev/null 2>&1 </dev/null &
        echo $! >"$state/xvfb.pid"
        echo ":$n" >"$state/display"
        i=0
        while [ ! -e "/tmp/.X11-unix/X$n" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
        log "started Xvfb on :$n (pid $(cat "$state/xvfb.pid")); stop it with $0 --stop-display"
    fi
    rmdir "$state/display.lock.d"
    DISPLAY=$(cat "$state/display")
    export DISPLAY
}

case "${1:-}" in
--stop-display)
    if [ -f "$state/xvfb.pid" ]; then kill "$(cat "$state/xvfb.pid")" 2>/dev/null || true; rm -f "$state/xvfb.pid" "$state/display"; fi
    exit 0 ;;
--prepare)
    prepare_prefix
    [ -n "${DISPLAY:-}" ] || start_display
    exit 0 ;;
esac

[ -x "$wine" ] || { log "no Wine loader at $wine (apt-get install wine64, or set WINE)"; exit 127; }
[ -f "$exe" ] || { log "no harness at $exe (run make in $here, or set DMLH_EXE)"; exit 127; }
prepare_prefix
[ -n "${DISPLAY:-}" ] || start_display
exec "$wine" "$exe" "$@"
