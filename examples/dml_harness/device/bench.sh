#!/bin/bash
# The speed figures of issue 31 on the GPU machine, through the bundle's wheel (../../../benchmarks/bench_directml.py):
# the DirectML harness on the standard tier at several --jobs after one warm-up run (the driver's shader cache
# filled, as by any earlier run; the warm-up timed on its own line), with the harnesses started after the command's
# imports (DMLCONFORM_EARLY_START=off) as the peer (outputs compared); the DirectML EP with the host's committed
# buffers made afresh for each session (--fresh-buffers) as the peer (outputs compared); the harness on the full
# tier; then the standard tier once more on each, diffed against the kept results
# (../results/directml-1.15.4-h100-standard.json,
# ../../ort_dml_host/results/h100/standard-dml-h100.json: no status change, no drift). Everything goes to OUT
# (default: ./bench), and one archive of it beside it (the device tool brings back 8 files at most).
#
#   bash examples/dml_harness/device/bench.sh [OUT [PART...]]    PART: harness ep full standard ep-standard trace
#                                                                  (default: all but trace, which runs the BUNDLE's
#                                                                  trace.py if one was put there)
set -uo pipefail
out=$(mkdir -p "${1:-bench}" && cd "${1:-bench}" && pwd)
shift || true
parts=" ${*:-harness ep full standard ep-standard} "
want() { [[ "$parts" == *" $1 "* ]]; }
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
export BUNDLE="${BUNDLE:-$root/.gl}"
run() { bash "$here/run.sh" "$@"; }
bench=$root/benchmarks/bench_directml.py
t() { local name=$1; shift; local start=$SECONDS; "$@" > "$out/$name.txt" 2>&1; echo "$name: exit $?, $((SECONDS - start)) s"; }
STACK_FILE="$out/stack.txt" run --exec true
cd "$out"  # not the project root: its dmlconform/ (no Windows programs) must not shadow the installed wheel's
want harness && t harness run --exec python3 "$bench" --adapter nvidia --warm-up-run --jobs 1 2 3 4 8 \
    --peer-env DMLCONFORM_EARLY_START=off --peer-jobs 2 --check-outputs --report-dir "$out/harness"
want ep && t ep run --exec python3 "$bench" --ep --adapter nvidia --warm-up-run --jobs 4 8 12 16 \
    --peer=--fresh-buffers --peer-jobs 8 --check-outputs --report-dir "$out/ep"
want full && t full run --exec python3 "$bench" --adapter nvidia --tier full --warm-up-run --jobs 8 16 --starts 1 \
    --sample 20 --report-dir "$out/full"
want standard && t standard run run --backend directml --adapter nvidia --tier standard --jobs 8 --json "$out/standard.json"
want standard && t diff run diff "$root/examples/dml_harness/results/directml-1.15.4-h100-standard.json" "$out/standard.json"
want ep-standard && t ep-standard run run --backend onnxruntime --ep dml --adapter nvidia --tier standard --jobs 8 \
    --json "$out/ep-standard.json"
want ep-standard && t ep-diff run diff "$root/examples/ort_dml_host/results/h100/standard-dml-h100.json" \
    "$out/ep-standard.json"
want trace && [ -f "$BUNDLE/trace.py" ] && t trace run --exec python3 "$BUNDLE/trace.py" run --tier standard \
    --backend directml --adapter nvidia --jobs 4 --json "$out/trace.json"
for f in "$out"/*.txt; do echo "== $(basename "$f")"; tail -25 "$f"; done
tar -czf "$out.tgz" -C "$(dirname "$out")" "$(basename "$out")"
