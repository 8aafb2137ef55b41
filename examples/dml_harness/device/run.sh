#!/bin/bash
# Runs dmlconform with the real DirectML.dll on an NVIDIA GPU through Wine, on a Linux machine that has the
# NVIDIA driver but no Wine: unpacks the bundle pack.sh made (once), starts one Xvfb for every harness, points
# Vulkan at NVIDIA's driver, records the stack, then runs `dmlconform run --backend native` on the harness.
# Run it as root from the project root, with the bundle at .gl (or BUNDLE=path):
#
#   bash examples/dml_harness/device/run.sh --tier standard --jobs 8 --json results/h100.json
#   bash examples/dml_harness/device/run.sh --ort --tier standard --json results/ort.json
#                                   onnxruntime-directml's DirectML EP through examples/ort_dml_host (packed with it)
#   bash examples/dml_harness/device/run.sh --exec CMD ARGS...     any command, in the same environment
#                                                                   ($DMLH_WRAPPER is the --harness command)
# Environment: BUNDLE (default .gl), STACK_FILE (where the stack record goes; default: stderr), NO_BASELINE=1
# (report DirectML's known deviations as failures instead of EXPECTED_FAIL).
set -euo pipefail
root=$(pwd)
bundle=$(cd "${BUNDLE:-.gl}" && pwd)
log() { echo "run.sh: $*" >&2; }
[ "$(id -u)" = 0 ] || { log "run as root (the bundle unpacks into /opt and the loader packages into /)"; exit 2; }

if [ ! -f /opt/dml/.unpacked ]; then
    # The loader packages go into / (as the device machine's README asks); Wine, Xvfb and the harness into /opt.
    for f in "$bundle"/*.deb; do dpkg -x "$f" /; done
    ldconfig
    tar -C / -xJf "$bundle/wine.tar.xz"
    mkdir -p /opt/wlibs-active /opt/pylib
    # Only the libraries this machine lacks: its own (newer) ones stay in charge.
    for l in /opt/wlibs/*; do s=$(basename "$l"); ldconfig -p | grep -q " $s " || cp "$l" /opt/wlibs-active/; done
    for w in "$bundle"/whl/*.whl; do python3 -m zipfile -e "$w" /opt/pylib >/dev/null; done
    touch /opt/dml/.unpacked
fi
export LD_LIBRARY_PATH=/opt/wlibs-active${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONPATH=/opt/pylib:$root${PYTHONPATH:+:$PYTHONPATH}
icd=""
for c in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json \
         /etc/vulkan/icd.d/nvidia_icd.json; do [ -f "$c" ] && { icd=$c; break; }; done
[ -n "$icd" ] || { log "no NVIDIA Vulkan driver manifest (nvidia_icd.json) found"; exit 69; }
export VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd
export WINEPREFIX=/opt/wineprefix WINE=/usr/lib/wine/wine64 DMLH_EXE=/opt/dml/dml_harness.exe
export DMLH_WRAPPER=/opt/dml/run_under_wine.sh

# One X display for every harness: they share one prefix, hence one wineserver and its desktop.
if [ -z "${DISPLAY:-}" ]; then
    dfile=$(mktemp)
    Xvfb -displayfd 3 -nolisten tcp -screen 0 640x480x24 3>"$dfile" </dev/null >/dev/null 2>&1 &
    xpid=$!
    trap 'kill $xpid 2>/dev/null || true' EXIT
    for _ in $(seq 200); do [ -s "$dfile" ] && break; sleep 0.05; done
    export DISPLAY=":$(tr -dc 0-9 <"$dfile")"
    rm -f "$dfile"
fi

{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "os: $(. /etc/os-release; echo "$PRETTY_NAME"), kernel $(uname -r)"
    command -v nvidia-smi >/dev/null && echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader)"
    echo "vulkan driver manifest: $icd"
    "$bundle/vkcheck" 2>&1 | sed 's/^/vkcheck: /'
    sed 's/^/packed: /' "$bundle/PACKED.txt"
    echo "python: $(python3 --version 2>&1), numpy $(python3 -c 'import numpy; print(numpy.__version__)')"
} > "${STACK_FILE:-/dev/stderr}"

if [ "${1:-}" = "--ort" ]; then
    shift
    [ -f /opt/ort/ort_dml_host.exe ] || { log "the bundle has no ONNX Runtime host: build examples/ort_dml_host, pack again"; exit 2; }
    # No baseline: the ORT host's known deviations are lavapipe's (examples/ort_dml_host/baseline-*-lavapipe.csv).
    export DMLH_EXE=/opt/ort/ort_dml_host.exe
    exec python3 -m dmlconform run --backend onnxruntime --ep dml --harness "$DMLH_WRAPPER" --timeout 300 "$@"
fi
if [ "${1:-}" = "--exec" ]; then
    shift
    exec "$@"
fi
# DirectML's own known deviations (examples/dml_harness/baseline-directml-1.15.4.csv) are the same on every stack
# measured; NO_BASELINE=1 reports them as plain failures.
baseline=()
[ -n "${NO_BASELINE:-}" ] || baseline=(--baseline "$root/examples/dml_harness/baseline-directml-1.15.4.csv")
exec python3 -m dmlconform run --backend native --harness "$DMLH_WRAPPER" --timeout 60 "${baseline[@]}" "$@"
