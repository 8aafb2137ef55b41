#!/bin/bash
# Takes again, on the GPU machine, every kept result of the real DirectML there (the suites changed): the harness's
# standard tier (--known-issues off: ../results/directml-1.15.4-h100-standard.json), the same with every output kept and the
# DirectML EP's standard tier with every output kept (../../ort_dml_host/results/h100/), the full tier with DirectML
# 1.15.4's known issues (../results/directml-1.15.4-h100-full.json.xz), the stack record, and whether DirectML's two known
# bugs explain every failure (../investigate/known_bugs.py). Everything goes to OUT (default: ./retake).
#
#   bash examples/dml_harness/device/retake.sh [OUT]
set -euo pipefail
out=$(mkdir -p "${1:-retake}" && cd "${1:-retake}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
run() { bash "$here/run.sh" "$@"; }
export BUNDLE="${BUNDLE:-$root/.gl}"
STACK_FILE="$out/stack.txt" run doctor --json "$out/doctor-h100.json" > "$out/doctor.txt" 2>&1 || true
cd "$out"
t() { local name=$1; shift; local start=$SECONDS; "$@" > "$name.log" 2>&1 || true; echo "$name: $((SECONDS - start)) s"; }
t harness-standard run run --backend directml --adapter nvidia --tier standard --jobs 8 --known-issues off \
    --json directml-1.15.4-h100-standard.json
t harness-standard-outputs run run --backend directml --adapter nvidia --tier standard --jobs 8 \
    --artifacts harness-art --artifacts-all --json standard-directml-harness-h100.json
t ep-standard-outputs run run --backend onnxruntime --ep dml --adapter nvidia --tier standard --jobs 8 \
    --artifacts ort-art --artifacts-all --json standard-dml-h100.json
t harness-full run run --backend directml --adapter nvidia --tier full --jobs 8 --json directml-1.15.4-h100-full.json
for tier in standard full; do
    result=$([ $tier = standard ] && echo directml-1.15.4-h100-standard.json || echo directml-1.15.4-h100-full.json)
    t "known-bugs-$tier" run --exec python3 "$root/examples/dml_harness/investigate/known_bugs.py" --tier $tier "$result"
done
tar -cJf artifacts.tar.xz harness-art ort-art && rm -rf harness-art ort-art *.journal.jsonl
xz -9 directml-1.15.4-h100-full.json
for f in *.log; do echo "== $f"; tail -3 "$f"; done
# One archive of it all: the device tool brings back at most 8 files.
tar -cf "$out.tar" -C "$(dirname "$out")" "$(basename "$out")"
