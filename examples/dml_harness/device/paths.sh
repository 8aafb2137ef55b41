#!/bin/bash
# Issue 40's evidence on the GPU machine (docs/api-surface.md), through the bundle pack.sh made (run.sh's environment):
#
#   bash examples/dml_harness/device/paths.sh OUT check
#       DirectML 1.15.4 (the default release): the smoke tier on every path with its known issues (exit 0 expected), the
#       standard tier on every path raw (--known-issues off), and per path the standard tier's speed against the suites
#       before issue 40 (BUNDLE/old_vectors.tar.xz, a frozen copy of test_vectors/ then), in one bench run each.
#   bash examples/dml_harness/device/paths.sh OUT matrix [VERSION...]
#       the releases given (default: every one in the bundle's cache) on today's standard tier on every path, raw
#       (known_issues.sh's matrix with --path all): OUT/matrix/standard/, results already there reused.
set -euo pipefail
out=$(mkdir -p "$1" && cd "$1" && pwd)
what=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
export BUNDLE="${BUNDLE:-$root/.gl}"
run() { bash "$here/run.sh" "$@"; }
t() { local name=$1; shift; local start=$SECONDS status=0; "$@" > "$out/$name.log" 2>&1 || status=$?
      echo "$name: exit $status, $((SECONDS - start)) s"; tail -3 "$out/$name.log"; }
case "$what" in
check)
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
matrix)
    t matrix-standard run matrix "$@" --tier standard --path all --adapter nvidia --jobs 8 --timeout 20 --xz --reuse \
        --out "$out/matrix/standard"
    ;;
*)
    echo "paths.sh: OUT check | OUT matrix [VERSION...]" >&2
    exit 2
    ;;
esac
