"""Which operator x data type the DirectML EP refuses in the DEFAULT constructions (those the CPU and CUDA EPs get).

    python examples/ort_dml_host/default_constructions.py [--adapter lavapipe|nvidia|N] [--tier smoke] [-k EXPR]
    python examples/ort_dml_host/default_constructions.py --host "CMD ARGS"     # an ONNX model host of one's own

For every operator x data type of the selection (default: the smoke tier's seed examples and its rank-4 cells, one
case each), builds each construction of that operator, runs it on the DirectML EP through the ONNX model host and
prints a markdown table: taken whole and matching the reference, taken and not matching, refused (with the node left
to the CPU) or failed (with ONNX Runtime's message). The host is the one `dmlconform run --backend onnxruntime --ep
dml` uses: the ONNX Runtime host this package carries (under Wine off Windows, on the Vulkan driver `--adapter`
names), or onnxruntime-directml in this process where it is installed (Windows). The backend itself builds the
DirectML EP's preferred constructions; this shows why they are preferred. One host, one session at a time.
"""

from __future__ import annotations

import argparse

from dmlconform.backends import create_backend
from dmlconform.backends.base import BackendOptions
from dmlconform.backends.onnx_graphs import CONSTRUCTIONS
from dmlconform.backends.onnxruntime_backend import OnnxRuntimeBackend
from dmlconform.cli.common import bundled_suites
from dmlconform.feature_levels import HIGHEST
from dmlconform.runner import run_case
from dmlconform.suite.loader import load_paths
from dmlconform.suite.select import select
from dmlconform.suite.tiers import Tier


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--adapter", default="lavapipe", metavar="N|DRIVER",
                        help="the device, as `dmlconform run --adapter` takes it (default: lavapipe)")
    parser.add_argument("--directml", metavar="PATH", help="DirectML.dll (default: as `dmlconform run` chooses)")
    parser.add_argument("--directml-version", metavar="V", help="a fetched onnxruntime-directml release's DLLs")
    parser.add_argument("--session-config", action="append", default=[], metavar="KEY=VALUE",
                        help="an ONNX Runtime session config entry for every session (repeatable)")
    parser.add_argument("--host", metavar="'CMD ARGS'", help="an ONNX model host command of one's own instead")
    parser.add_argument("--tier", default="smoke")
    parser.add_argument("-k", dest="expression", default="seed or cells and -r4- and -0")
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args()
    cases = [c for c in select(load_paths([bundled_suites()], tier=Tier(args.tier)), args.expression)
             if not c.expect_invalid]
    first: dict[tuple[str, str], object] = {}
    for case in cases:
        first.setdefault((case.op.name, case.dtype.name), case)
    options = BackendOptions(ep="dml", harness=args.host, timeout_s=args.timeout, adapter=args.adapter,
                             directml=args.directml, directml_version=args.directml_version,
                             session_config=tuple(args.session_config))
    try:
        started = create_backend("onnxruntime", options)
    except RuntimeError as exc:  # one line naming what is missing and its fix (`dmlconform doctor` lists them all)
        raise SystemExit(f"the DirectML EP cannot be had: {exc}") from None
    assert isinstance(started, OnnxRuntimeBackend)
    print("| operator | data type | construction | on the DirectML EP | case |")
    print("|---|---|---|---|---|")
    try:
        for (op, dtype), case in sorted(first.items()):
            for construction in CONSTRUCTIONS[op]:
                # The same host (or in-process session runner), one construction forced.
                backend = OnnxRuntimeBackend(started.runner, constructions={op: construction.name})
                result = run_case(case, backend, HIGHEST)  # type: ignore[arg-type]
                status = result.status.value
                said = "taken whole, " + ("matches the reference" if status == "PASS" else status) \
                    if status in ("PASS", "FAIL") else f"{status}: {result.message}"
                print(f"| {op} | {dtype} | {construction.name} | {said} | `{case.full_id}` |", flush=True)  # type: ignore[attr-defined]
    finally:
        started.close()


if __name__ == "__main__":
    main()
