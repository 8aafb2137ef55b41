"""Per-case overhead of the onnxruntime backend: session creation vs a cached run, against the numpy backend.

    python benchmarks/bench_onnxruntime_overhead.py [PATH ...] [--repeats N] [--ep cpu]

For every valid case of the suites (default: the bundled test_vectors/), times three things, each the
median of N repeats: the numpy backend's run (validation + reference), the onnxruntime backend's first
run of the case with an empty cache (graph build + InferenceSession creation + run), and its cached
run (validation + session.run). Prints per-operator medians and the ratios against numpy measured in the
same run. Machines here are noisy: read the ratios, not the absolute times.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from dmlconform.backends import create_backend
from dmlconform.backends.base import BackendOptions, OutcomeKind
from dmlconform.backends.numpy_backend import NumpyBackend
from dmlconform.backends.onnxruntime_backend import OnnxRuntimeBackend
from dmlconform.case import Case
from dmlconform.cli import bundled_suites
from dmlconform.suite.loader import load_paths


def median_time(fn: Callable[[], object], repeats: int, before: Callable[[], object] | None = None) -> float:
    times = []
    for _ in range(repeats):
        if before is not None:
            before()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--ep", default="cpu", choices=["auto", "dml", "cuda", "cpu"])
    args = parser.parse_args()

    cases: list[Case] = [c for c in load_paths(args.paths or [bundled_suites()]) if not c.expect_invalid]
    reference = NumpyBackend()
    backend = create_backend("onnxruntime", BackendOptions(ep=args.ep))
    assert isinstance(backend, OnnxRuntimeBackend)
    rows: dict[str, list[tuple[float, float, float]]] = {}
    skipped = 0
    for case in cases:
        if backend.run(case).kind is not OutcomeKind.OUTPUTS:
            skipped += 1  # NOT_SUPPORTED cases build no session: nothing to time
            continue
        numpy_s = median_time(lambda case=case: reference.run(case), args.repeats)
        cold_s = median_time(lambda case=case: backend.run(case), args.repeats, before=backend.close)
        backend.run(case)  # fill the cache again
        warm_s = median_time(lambda case=case: backend.run(case), args.repeats)
        rows.setdefault(case.op.name, []).append((numpy_s, cold_s, warm_s))

    info = backend.info()
    print(f"{info.version}, {info.device}; {sum(map(len, rows.values()))} cases timed, {skipped} skipped, "
          f"median of {args.repeats} per case, then the median over cases")
    header = f"{'operator':<24} {'cases':>5} {'numpy':>10} {'ORT first':>10} {'ORT cached':>11} " \
             f"{'first/numpy':>12} {'cached/numpy':>13} {'first/cached':>13}"
    print(header)
    print("-" * len(header))
    everything = [row for op_rows in rows.values() for row in op_rows]
    for name, op_rows in [*sorted(rows.items()), ("all", everything)]:
        numpy_s, cold_s, warm_s = (statistics.median(column) for column in zip(*op_rows, strict=True))
        print(f"{name:<24} {len(op_rows):>5} {numpy_s * 1e6:>8.0f}us {cold_s * 1e6:>8.0f}us {warm_s * 1e6:>9.0f}us "
              f"{cold_s / numpy_s:>11.1f}x {warm_s / numpy_s:>12.2f}x {cold_s / warm_s:>12.1f}x")


if __name__ == "__main__":
    main()
