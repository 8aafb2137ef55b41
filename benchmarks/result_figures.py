"""Figures of one or more `dmlconform run --json` results: statuses per operator, the FLOAT16 ULP spread, time
per case.

    python benchmarks/result_figures.py reports/torch-cuda.json [reports/ort-cuda.json ...]

The ULP spread is the distribution of `max_ulp` (each case's largest distance from the golden) over the FLOAT16
cases that produced outputs; times are each case's `duration_s` (backend run plus judging, as `run` records it),
with the first case of the run (which pays the backend's warm-up) reported apart.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import Counter
from pathlib import Path

RAN = {"PASS", "FAIL", "EXPECTED_FAIL", "UNEXPECTED_PASS", "FLAKE"}


def raw_status(case: dict) -> str:
    return case.get("outcome") or case["status"]


def figures(path: Path) -> str:
    document = json.loads(path.read_text())
    backend, cases = document["backend"], document["cases"]
    lines = [f"## {path.name}: {backend['name']} {backend['version']} on {backend['device']}",
             f"{len(cases)} cases in {document['duration_s']:.2f} s; summary {document['summary']}", "",
             "| operator | statuses |", "|---|---|"]
    for op in sorted({c["op"] for c in cases}):
        counts = Counter(raw_status(c) for c in cases if c["op"] == op)
        lines.append(f"| {op} | {', '.join(f'{n} {s}' for s, n in sorted(counts.items()))} |")
    half = [c for c in cases if c["dtype"] == "FLOAT16" and raw_status(c) in RAN and c.get("max_ulp") is not None]
    spread = Counter(c["max_ulp"] for c in half)
    lines += ["", f"FLOAT16 cases with outputs: {len(half)}; max_ulp distribution "
              + ", ".join(f"{ulp} ULP: {n}" for ulp, n in sorted(spread.items()))]
    if half:
        worst = max(half, key=lambda c: c["max_ulp"])
        lines.append(f"largest: {worst['max_ulp']} ULP in {worst['id']} ({worst['status']}, "
                     f"{(worst.get('tolerance') or {}).get('rule')})")
        by_op = {op: max(c["max_ulp"] for c in half if c["op"] == op) for op in sorted({c["op"] for c in half})}
        lines.append("largest per operator: " + ", ".join(f"{op} {u}" for op, u in by_op.items()))
    times = [c["duration_s"] for c in cases if c.get("duration_s") is not None]
    if len(times) > 1:
        rest = sorted(times[1:])
        lines.append(f"time per case: first {times[0] * 1e3:.1f} ms; the other {len(rest)}: median "
                     f"{statistics.median(rest) * 1e3:.3f} ms, mean {statistics.fmean(rest) * 1e3:.3f} ms, "
                     f"p95 {rest[int(0.95 * (len(rest) - 1))] * 1e3:.3f} ms")
    return "\n".join(lines)


def main(paths: list[str]) -> int:
    if not paths:
        print(__doc__)
        return 2
    print("\n\n".join(figures(Path(p)) for p in paths))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
