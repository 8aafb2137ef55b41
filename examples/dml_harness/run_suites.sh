#!/bin/bash
# Runs suites on the real DirectML under Wine: `dmlconform run` with the native backend started on this
# folder's harness (run_under_wine.sh), two harnesses at a time, and the known deviations of this stack
# baselined. Extra arguments go to `dmlconform run` (paths, -k, --json, --junit, --tier, ...).
#   examples/dml_harness/run_suites.sh --json reports/directml-wine.json
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$here/build/dml_harness.exe" ] || [ -f "$here/build/dml_harness.exe" ] ||
    { echo "run_suites.sh: no harness: run examples/dml_harness/setup.sh first" >&2; exit 2; }
run=(dmlconform run --backend native --harness "$here/run_under_wine.sh" --timeout 300 --jobs 2
     --baseline "$here/baseline-directml-1.15.4.csv" "$@")
# The harnesses share one Wine prefix, hence one wineserver and its desktop: they must share one X display
# too. Each starting a private Xvfb of its own raced for display numbers and left the second harness on a
# desktop whose display was not its own (DXGI_ERROR_UNSUPPORTED).
if [ -z "${DISPLAY:-}" ]; then
    exec xvfb-run -a -s "-nolisten tcp -screen 0 640x480x24" "${run[@]}"
fi
exec "${run[@]}"
