#!/bin/bash
# Everything the ONNX Runtime host needs on a fresh Debian 12 machine, as root: what the DirectML harness needs
# (Wine 8.0, Mesa 25's lavapipe, mingw-w64, a Wine prefix: ../dml_harness/setup.sh), then onnxruntime-directml
# 1.24.4's DLLs (get_onnxruntime.sh) and the host itself (make).
#   bash examples/ort_dml_host/setup.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bash "$here/../dml_harness/setup.sh"
for dll in onnxruntime.dll onnxruntime_providers_shared.dll DirectML.dll; do
    [ -f "$here/build/$dll" ] || { "$here/get_onnxruntime.sh"; break; }
done
make -C "$here"
