#!/bin/bash
# Everything the DirectML harness needs on a fresh Debian 12 machine, as root: Wine 8.0 with Mesa 25's
# lavapipe from bookworm-backports (wine/setup.sh), the mingw-w64 C++ compiler, DirectML.dll from the
# onnxruntime-directml wheel on PyPI (get_directml.sh), and the harness itself (make).
#   bash examples/dml_harness/setup.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bash "$here/wine/setup.sh" --no-smoke
command -v x86_64-w64-mingw32-g++ >/dev/null ||
    flock /tmp/apt.lock env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        g++-mingw-w64-x86-64-win32
[ -f "$here/build/DirectML.dll" ] || "$here/get_directml.sh"
make -C "$here"
"$here/run_under_wine.sh" --prepare
