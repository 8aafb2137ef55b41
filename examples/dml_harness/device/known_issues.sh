#!/bin/bash
# What DirectML's known issues (docs/known-issues.md) rest on and what they promise, on the GPU machine, through the
# bundle pack.sh made (run.sh's environment). Everything goes to OUT.
#
#   bash examples/dml_harness/device/known_issues.sh OUT matrix [VERSION...]
#       every onnxruntime-directml release given (default: every one in the bundle's cache) on today's standard and
#       full tiers, raw (the matrix applies no known issues): OUT/matrix/{standard,full}/. Results already in OUT for
#       the same DLL are taken as they are (--reuse), so a bundle carried in parts is run in parts.
#   bash examples/dml_harness/device/known_issues.sh OUT check
#       the promise, with the default release (DirectML 1.15.4): the standard tier on the harness with the known issues
#       applied by default (exit 0), and with --known-issues off (exit 1); the DML EP's standard tier; certify --level
#       6_4 with no waiver file (holds) and verify (valid).
#   bash examples/dml_harness/device/known_issues.sh OUT paths
#       issue 40 (docs/api-surface.md), DirectML 1.15.4: the smoke tier on every path with its known issues (exit 0
#       expected), the standard tier on every path raw (--known-issues off), and per path the standard tier's speed
#       against the suites before issue 40 (BUNDLE/old_vectors.tar.xz, a frozen copy of test_vectors/ then: here,
#       `git archive 53b4999 test_vectors | xz > .gl/old_vectors.tar.xz`).
#   bash examples/dml_harness/device/known_issues.sh OUT paths-matrix [VERSION...]
#       the releases given (default: every one in the bundle's cache) on today's standard tier on every path, raw:
#       OUT/matrix/standard/, results already there reused.
set -euo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
what=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
export BUNDLE="${BUNDLE:-$root/.gl}"
run() { bash "$here/run.sh" "$@"; }
t() { local name=$1; shift; local start=$SECONDS status=0; "$@" > "$out/$name.log" 2>&1 || status=$?
      echo "$name: exit $status, $((SECONDS - start)) s"; tail -2 "$out/$name.log"; }
case "$what" in
matrix)
    for tier in standard full; do
        t "matrix-$tier" run matrix "$@" --tier "$tier" --adapter nvidia --jobs 8 --timeout 20 --xz --reuse \
            --out "$out/matrix/$tier"
    done
    ;;
check)
    cd "$out"
    STACK_FILE="$out/stack.txt" t doctor run doctor --json "$out/doctor.json"
    t standard run run --backend directml --adapter nvidia --tier standard --jobs 8 --json standard.json \
        --junit standard.xml --html standard.html
    t standard-off run run --backend directml --adapter nvidia --tier standard --jobs 8 --known-issues off \
        --json standard-off.json
    t ep-standard run run --backend onnxruntime --ep dml --adapter nvidia --tier standard --jobs 8 \
        --json ep-standard.json
    rm -rf pkg
    t certify run certify --level 6_4 --backend directml --adapter nvidia --jobs 8 -o pkg
    t verify run verify pkg
    tar -cJf pkg.tar.xz pkg && rm -rf pkg ./*.journal.jsonl
    ;;
paths)
    cd "$out"
    t smoke-all run run --backend directml --adapter nvidia --tier smoke --path all --jobs 8 --json smoke-all.json
    t standard-all-raw run run --backend directml --adapter nvidia --tier standard --path all --jobs 8 \
        --known-issues off --json standard-all-raw.json
    mkdir -p old && tar -C old -xJf "$BUNDLE/old_vectors.tar.xz"
    bench() { run --exec python3 "$root/benchmarks/bench_directml.py" --adapter nvidia --jobs 3 --warm-up-run \
        --starts 1 --sample 20 "$@"; }
    t bench-before bench --suites "$out/old/test_vectors"
    for path in operator graph in-place; do t "bench-$path" bench --path "$path"; done
    rm -rf old ./*.journal.jsonl
    ;;
paths-matrix)
    t matrix-standard run matrix "$@" --tier standard --path all --adapter nvidia --jobs 8 --timeout 20 --xz --reuse \
        --out "$out/matrix/standard"
    ;;
*)
    echo "known_issues.sh: OUT matrix [VERSION...] | OUT check | OUT paths | OUT paths-matrix [VERSION...]" >&2
    exit 2
    ;;
esac
