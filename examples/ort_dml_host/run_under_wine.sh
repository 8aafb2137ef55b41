#!/bin/bash
# Runs the ONNX Runtime host under Wine (Linux): the DirectML harness's wrapper (prefix, Xvfb, lavapipe, `exec wine`)
# with this folder's host as the program. Host options go after the script name, e.g. `run_under_wine.sh --ep cpu`.
#   ORT_HOST_EXE   the host (default: build/ort_dml_host.exe next to this script, with onnxruntime.dll,
#                  onnxruntime_providers_shared.dll and DirectML.dll beside it)
# Everything else (WINE, WINEPREFIX, DISPLAY, VK_ICD_FILENAMES, ...) as ../dml_harness/run_under_wine.sh says.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export DMLH_EXE="${ORT_HOST_EXE:-$here/build/ort_dml_host.exe}"
exec "$here/../dml_harness/run_under_wine.sh" "$@"
