#!/bin/bash
# Runs suites on onnxruntime-directml's DirectML execution provider under Wine: `dmlconform run --backend onnxruntime
# --ep dml` with this folder's host (run_under_wine.sh), one host at a time (a DirectML EP session holds ~3 GB of
# lavapipe's memory), and this stack's known deviations baselined. Extra arguments go to `dmlconform run` (paths,
# -k, --json, --junit, --tier, ...; a later --jobs or --baseline wins).
#   examples/ort_dml_host/run_suites.sh --tier smoke --json reports/ort-dml-wine.json
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ -f "$here/build/ort_dml_host.exe" ] && [ -f "$here/build/onnxruntime.dll" ] ||
    { echo "run_suites.sh: no host: run examples/ort_dml_host/setup.sh first" >&2; exit 2; }
run=(dmlconform run --backend onnxruntime --ep dml --harness "$here/run_under_wine.sh" --timeout 300 --jobs 1
     --baseline "$here/baseline-onnxruntime-directml-1.24.4-wine-lavapipe.csv" "$@")
# As for the DirectML harness: hosts that share a Wine prefix share its display (one Xvfb for the run).
if [ -z "${DISPLAY:-}" ]; then
    exec xvfb-run -a -s "-nolisten tcp -screen 0 640x480x24" "${run[@]}"
fi
exec "${run[@]}"
