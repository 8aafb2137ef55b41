"""Which operator x data type the DirectML EP refuses in the DEFAULT constructions (those the CPU and CUDA EPs get).

    python examples/ort_dml_host/default_constructions.py [--host CMD] [--tier smoke] [-k EXPR]

For every operator x data type of the selection (default: the smoke tier's seed examples and its rank-4 cells, one
case each), builds each construction of that operator, runs it on the DirectML EP through the ONNX model host and
prints a markdown table: taken whole and matching the reference, taken and not matching, refused (with the node left
to the CPU) or failed (with ONNX Runtime's message). The backend itself builds the DirectML EP's preferred
constructions; this shows why they are preferred. One host, one session at a time.
"""

from __future__ import annotations

import argparse

from dmlconform.backends.onnx_graphs import CONSTRUCTIONS
from dmlconform.backends.onnxruntime_backend import BUNDLED_HOST, OnnxRuntimeBackend
from dmlconform.backends.ort_host import HostRunner
from dmlconform.cli.common import bundled_suites
from dmlconform.feature_levels import HIGHEST
from dmlconform.runner import run_case
from dmlconform.suite.loader import load_paths
from dmlconform.suite.select import select
from dmlconform.suite.tiers import Tier


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default=str(BUNDLED_HOST))
    parser.add_argument("--tier", default="smoke")
    parser.add_argument("-k", dest="expression", default="seed or cells and -r4- and -0")
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args()
    cases = [c for c in select(load_paths([bundled_suites()], tier=Tier(args.tier)), args.expression)
             if not c.expect_invalid]
    first: dict[tuple[str, str], object] = {}
    for case in cases:
        first.setdefault((case.op.name, case.dtype.name), case)
    runner = HostRunner.start(args.host, "dml", args.timeout)
    print("| operator | data type | construction | on the DirectML EP | case |")
    print("|---|---|---|---|---|")
    try:
        for (op, dtype), case in sorted(first.items()):
            for construction in CONSTRUCTIONS[op]:
                backend = OnnxRuntimeBackend(runner, constructions={op: construction.name})
                result = run_case(case, backend, HIGHEST)  # type: ignore[arg-type]
                status = result.status.value
                said = "taken whole, " + ("matches the reference" if status == "PASS" else status) \
                    if status in ("PASS", "FAIL") else f"{status}: {result.message}"
                print(f"| {op} | {dtype} | {construction.name} | {said} | `{case.full_id}` |", flush=True)  # type: ignore[attr-defined]
    finally:
        runner.close()


if __name__ == "__main__":
    main()
