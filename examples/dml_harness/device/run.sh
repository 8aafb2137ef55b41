#!/bin/bash
# Runs the installed dmlconform on the real DirectML on an NVIDIA GPU through Wine, on a Linux machine that has the
# NVIDIA driver but no Wine and no network: unpacks the bundle pack.sh made (once), installs its wheel into a virtual
# environment that sees the machine's own NumPy, ONNX and onnxruntime, points the package at the bundle's Wine, prefix
# and DirectML cache, records the stack, then runs the `dmlconform` command given. Run it as root from the project root,
# with the bundle at .gl (or BUNDLE=path):
#
#   bash examples/dml_harness/device/run.sh run --backend directml --adapter nvidia --tier standard --jobs 8 --json r.json
#   bash examples/dml_harness/device/run.sh run --backend onnxruntime --ep dml --adapter nvidia --tier standard ...
#   bash examples/dml_harness/device/run.sh doctor
#   bash examples/dml_harness/device/run.sh --exec CMD ARGS...     any command, in the same environment
#
# Environment: BUNDLE (default .gl), STACK_FILE (where the stack record goes; default: stderr).
set -euo pipefail
bundle=$(cd "${BUNDLE:-.gl}" && pwd)
log() { echo "run.sh: $*" >&2; }
[ "$(id -u)" = 0 ] || { log "run as root (the bundle unpacks into /opt and the loader packages into /)"; exit 2; }

venv=/opt/dmlconform-venv
if [ ! -f /opt/wineprefix/.unpacked ]; then
    # The loader packages go into / (as the device machine's README asks); Wine, Xvfb and the prefix into /opt.
    for f in "$bundle"/*.deb; do dpkg -x "$f" /; done
    ldconfig
    tar -C / -xJf "$bundle/wine.tar.xz"
    mkdir -p /opt/wlibs-active /opt/dmlconform-cache
    # Only the libraries this machine lacks: its own (newer) ones stay in charge.
    for l in /opt/wlibs/*; do s=$(basename "$l"); ldconfig -p | grep -q " $s " || cp "$l" /opt/wlibs-active/; done
    touch /opt/wineprefix/.unpacked
fi
if [ ! -x "$venv/bin/dmlconform" ]; then
    # The wheel as a user installs it, its dependencies the machine's own (nothing can be fetched there): the
    # machine's python3 may itself be a virtual environment, whose packages --system-site-packages would not see, so
    # its site folders are added by a .pth file.
    python3 -m venv "$venv"
    python3 -c 'import sys; print("\n".join(p for p in sys.path if p.endswith("-packages")))' \
        > "$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/machine-packages.pth"
    "$venv/bin/pip" install -q --no-index --no-deps "$bundle"/whl/dmlconform-*.whl
fi
# DirectML releases, one archive each; a later call may bring more.
for archive in "$bundle"/cache-*.tar.xz; do
    [ -f "$archive" ] || continue
    mark=/opt/dmlconform-cache/.$(basename "$archive").unpacked
    [ -f "$mark" ] || { tar -C /opt/dmlconform-cache -xJf "$archive" && touch "$mark"; }
done
export LD_LIBRARY_PATH=/opt/wlibs-active${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH="$venv/bin:$PATH" WINE=/usr/lib/wine/wine64 DMLCONFORM_WINE_PREFIX=${DMLCONFORM_WINE_PREFIX:-/opt/wineprefix}
export DMLCONFORM_CACHE=/opt/dmlconform-cache
# NVIDIA's Vulkan driver manifest where this machine keeps it, for `--adapter nvidia` (the package looks in the
# standard folders and in /usr/local/nvidia's).
icd=""
for c in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json \
         /etc/vulkan/icd.d/nvidia_icd.json; do [ -f "$c" ] && { icd=$c; break; }; done
[ -n "$icd" ] || { log "no NVIDIA Vulkan driver manifest (nvidia_icd.json) found"; exit 69; }

{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "os: $(. /etc/os-release; echo "$PRETTY_NAME"), kernel $(uname -r)"
    command -v nvidia-smi >/dev/null && echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader)"
    echo "vulkan driver manifest: $icd"
    VK_ICD_FILENAMES=$icd VK_DRIVER_FILES=$icd "$bundle/vkcheck" 2>&1 | sed 's/^/vkcheck: /'
    sed 's/^/packed: /' "$bundle/PACKED.txt"
    echo "python: $("$venv/bin/python" --version 2>&1), numpy $(cd / && "$venv/bin/python" -c 'import numpy; print(numpy.__version__)')"
    echo "dmlconform: $("$venv/bin/dmlconform" --version) from $(cd / && "$venv/bin/python" -c 'import dmlconform; print(dmlconform.__file__)')"
} > "${STACK_FILE:-/dev/stderr}"

if [ "${1:-}" = "--exec" ]; then
    shift
    exec "$@"
fi
exec "$venv/bin/dmlconform" "$@"
