"""What the DirectML EP did with each graph, beside what the DirectML harness computed on the same cases.

    python examples/ort_dml_host/compare_with_harness.py ORT.json HARNESS.json [--by-rank] [--notes]

ORT.json: `dmlconform run --backend onnxruntime --ep dml ... --artifacts DIR --artifacts-all`; HARNESS.json: the
same suites through the DirectML harness (`--backend directml`), also with --artifacts-all. Prints a markdown table
per operator and data type (per rank too with --by-rank): the valid cases, how many graphs the EP took whole,
refused (NOT_SUPPORTED: a node left to the CPU) or failed on (ERROR, CRASH, TIMEOUT), how the outputs of those it
ran compare with the reference (PASS/FAIL as judged) and with the harness's outputs bit for bit: identical;
following another candidate of an undocumented behaviour (the graph and DirectML read it differently: both match the
golden's candidates); or, reading it alike, differing by at most so many ULP (float sums in another order). --notes
lists the distinct refusal and failure messages with their counts. Cases the backend refuses as invalid (INVALID_OK)
are counted apart: they never reach the EP. So are the cases whose layout or path ONNX Runtime's graphs cannot express
by design (docs/api-surface.md: SKIPPED, naming what; NOT_SUPPORTED in results taken before that): no graph is built.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dmlconform.case_result import CaseResult
from dmlconform.compare.ulp import ulp_distance
from dmlconform.results.artifacts import npy_from_bytes
from dmlconform.results.document import read_document

RAN = {"PASS", "FAIL"}
FAILED = {"ERROR", "CRASH", "TIMEOUT"}
#: The message dmlconform.backends.base.unexpressed gives a layout or path case the backend cannot express.
UNEXPRESSED = re.compile(r"cannot express .*: it runs packed tensors on one operator$")


def unexpressible(result: CaseResult) -> bool:
    """A case whose layout or path the EP's graphs cannot express by design (never run: no graph is built)."""
    return came_to(result) in ("SKIPPED", "NOT_SUPPORTED") and bool(UNEXPRESSED.search(result.message or ""))


@dataclass
class Cell:
    cases: int = 0
    taken: int = 0
    refused: int = 0
    failed: int = 0
    passed: int = 0
    not_passed: int = 0
    identical: int = 0
    other_candidate: int = 0
    differ: int = 0
    worst_ulp: int = 0
    harness_missing: int = 0
    ranks: set[int] = field(default_factory=set)


def came_to(result: CaseResult) -> str:
    """What the backend came to, behind NOT_REQUIRED, EXPECTED_FAIL and UNEXPECTED_PASS."""
    return (result.outcome or result.status).value


def kept_outputs(result: CaseResult, result_file: Path) -> dict[str, np.ndarray]:
    """The outputs a run kept for a case (--artifacts), read back from beside its result file. Both files are this
    machine's own runs, so the suites they were judged on need not be at hand."""
    return {name: npy_from_bytes((result_file.parent / recorded).read_bytes())
            for name, recorded in result.artifacts.items()}


def compare_outputs(ours: dict[str, np.ndarray], theirs: dict[str, np.ndarray]) -> int | None:
    """0 when bit-identical, else the largest ULP distance (-1 where one side is not a float); None if absent."""
    if not ours or not theirs or set(ours) != set(theirs):
        return None
    worst = 0
    for name, a in ours.items():
        b = theirs[name]
        if a.dtype != b.dtype or a.shape != b.shape:
            return None
        if np.array_equal(a.view(np.uint8), b.view(np.uint8)):
            continue
        worst = max(worst, int(ulp_distance(a, b).max()) if a.dtype.kind == "f" else -1)
    return worst


def message_key(message: str) -> str:
    """A refusal or failure message with its case-specific parts (tensor names, numbers) made general."""
    return re.sub(r"'[a-z_]+_\d+'", "'…'", re.sub(r"Exception\(\d+\) tid\(\d+\)", "", message))[:400]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ort", type=Path)
    parser.add_argument("harness", type=Path)
    parser.add_argument("--by-rank", action="store_true")
    parser.add_argument("--notes", action="store_true")
    args = parser.parse_args()
    ort, harness = read_document(args.ort), read_document(args.harness)
    theirs = {r.id: r for r in harness.results}
    cells: dict[tuple, Cell] = defaultdict(Cell)
    invalid = Counter()
    unexpressed = Counter()
    notes: Counter[str] = Counter()
    for result in ort.results:
        status = came_to(result)
        if status == "INVALID_OK":
            invalid[result.op] += 1
            continue
        if unexpressible(result):
            unexpressed[result.op] += 1
            continue
        key = (result.op, result.dtype, result.rank) if args.by_rank else (result.op, result.dtype)
        cell = cells[key]
        cell.cases += 1
        cell.ranks.add(result.rank)
        if status == "NOT_SUPPORTED":
            cell.refused += 1
            notes[f"NOT_SUPPORTED: {message_key(result.message)}"] += 1
            continue
        if status in FAILED:
            cell.failed += 1
            notes[f"{status}: {message_key(result.message)}"] += 1
            continue
        cell.taken += 1
        cell.passed += status == "PASS"
        cell.not_passed += status != "PASS"
        other = theirs.get(result.id)
        if other is None or came_to(other) not in RAN or not result.artifacts or not other.artifacts:
            cell.harness_missing += 1
            if other is not None and (came_to(other) not in RAN or not other.artifacts):
                why = f"matched the candidate {other.matched!r}" if other.matched else message_key(other.message)
                notes[f"the harness did not run it: {came_to(other)}, {why}"] += 1
            continue
        distance = compare_outputs(kept_outputs(result, args.ort), kept_outputs(other, args.harness))
        if distance is None:
            cell.harness_missing += 1
        elif distance == 0:
            cell.identical += 1
        elif result.matched and other.matched and result.matched != other.matched:
            cell.other_candidate += 1
            notes[f"another candidate: the EP's graph followed {result.matched}, DirectML {other.matched}"] += 1
        else:
            cell.differ += 1
            cell.worst_ulp = max(cell.worst_ulp, distance)

    by = "| operator | data type | rank |" if args.by_rank else "| operator | data type | ranks |"
    print(f"{by} valid cases | taken whole | refused | failed | PASS / FAIL (reference) | identical to the harness "
          "| another candidate | differ (max ULP) | harness did not run |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for key in sorted(cells):
        cell = cells[key]
        ranks = str(key[2]) if args.by_rank else ",".join(map(str, sorted(cell.ranks)))
        differ = f"{cell.differ} ({cell.worst_ulp})" if cell.differ else "0"
        print(f"| {key[0]} | {key[1]} | {ranks} | {cell.cases} | {cell.taken} | {cell.refused} | {cell.failed} | "
              f"{cell.passed} / {cell.not_passed} | {cell.identical} | {cell.other_candidate} | {differ} | "
              f"{cell.harness_missing} |")
    total = Cell()
    for cell in cells.values():
        for name in ("cases", "taken", "refused", "failed", "passed", "not_passed", "identical", "other_candidate",
                     "differ", "harness_missing"):
            setattr(total, name, getattr(total, name) + getattr(cell, name))
        total.worst_ulp = max(total.worst_ulp, cell.worst_ulp)
    print(f"| **all** | | | {total.cases} | {total.taken} | {total.refused} | {total.failed} | {total.passed} / "
          f"{total.not_passed} | {total.identical} | {total.other_candidate} | {total.differ} ({total.worst_ulp}) | "
          f"{total.harness_missing} |")
    print(f"\ninvalid cases refused before any graph (INVALID_OK): {sum(invalid.values())} "
          f"({', '.join(f'{op} {n}' for op, n in sorted(invalid.items()))})")
    if unexpressed:
        print(f"layout or path cases the EP's graphs cannot express, left out (not run by design): "
              f"{sum(unexpressed.values())} ({', '.join(f'{op} {n}' for op, n in sorted(unexpressed.items()))})")
    if args.notes:
        print()
        for text, count in notes.most_common():
            print(f"* {count} x {text}")


if __name__ == "__main__":
    main()
