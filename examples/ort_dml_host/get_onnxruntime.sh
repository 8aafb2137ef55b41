#!/bin/bash
# Fetches onnxruntime.dll, onnxruntime_providers_shared.dll and DirectML.dll (x64) from the onnxruntime-directml 1.24.4
# Windows wheel on PyPI into DEST (default: build/ next to this script, where the host looks first), each
# sha256-checked (the DirectML harness's get_directml.sh does the work).
#   get_onnxruntime.sh [DEST_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/../dml_harness/get_directml.sh" --with-onnxruntime "${1:-$here/build}"
