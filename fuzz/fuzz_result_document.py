"""Result documents (`dmlconform-result/v1`): `read_document`, as `merge`, `diff`, `show`, `report` and `repro` read
them, then everything those commands do with what it returns: the console report, JUnit, HTML with a diff, the
diff's console and JSON forms, a merge, `coverage RESULT.json` over the seed suite, a DirectML version matrix of
it against itself (`matrix --reuse` reads kept results back), and the document written again.

Contract: a one-line ResultsError, or a run that every consumer handles without raising, whose document, written
again, reads back; memory within the bound of the input's size (a result declares no tensors).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

from rich.console import Console

from dmlconform.cli.common import bundled_suites
from dmlconform.report.console import render
from dmlconform.report.coverage import coverage_json, render_coverage
from dmlconform.report.diff import diff_document, render_diff
from dmlconform.report.html import render_html
from dmlconform.report.json_report import dumps
from dmlconform.report.junit import junit_bytes
from dmlconform.report.matrix import matrix_markdown, render_matrix
from dmlconform.results import ResultsError
from dmlconform.results.coverage import coverage
from dmlconform.results.diff import diff_runs
from dmlconform.results.document import from_document, read_document, to_document
from dmlconform.results.matrix import Matrix, MatrixRow, RowState, compare_rows, matrix_document
from dmlconform.results.merge import merge_results
from dmlconform.run_result import RunResult
from dmlconform.suite.loader import load_paths
from fuzz.contract import ContractBroken, check_refusal, memory_bound, scratch
from fuzz.recorded import recorded


def consume(run: RunResult, name: str) -> None:
    """What merge, diff, show and report do with a document they read."""
    console = Console(file=io.StringIO(), width=120, color_system=None)
    render(run, console)
    junit_bytes(run)
    difference = diff_runs(run, run)
    render_html(run, difference)
    render_diff(difference, console, name, name)
    json.dumps(diff_document(difference, name, name))
    covered = coverage(seed_cases(), run)
    render_coverage(covered, console)
    json.dumps(coverage_json(covered, None))
    rows = [MatrixRow("1.1", RowState.RAN, "1.1.0.0", "a" * 64, run=run),
            MatrixRow("1.0", RowState.RAN, "1.0.0.0", "b" * 64, run=run)]
    table = Matrix(rows, compare_rows(rows), {"tier": "standard"})
    render_matrix(table, console)
    matrix_markdown(table)
    json.dumps(matrix_document(table))
    try:
        merge_results([(scratch() / name, run)])
    except ResultsError as exc:
        check_refusal(exc)
    text = dumps(to_document(run))
    try:
        from_document(json.loads(text), "written again")
    except ResultsError as exc:
        raise ContractBroken(f"a document read from the input, written again, does not read back: {exc}") from exc


_seed_cases: list = []


def seed_cases() -> list:
    if not _seed_cases:
        _seed_cases.extend(load_paths([bundled_suites() / "seed"]))
    return _seed_cases


def one_input(data: bytes) -> None:
    seed_cases()  # loaded once, outside the memory measured
    path = scratch() / "result.json"
    path.write_bytes(data)
    with memory_bound(len(data)):
        try:
            run = read_document(path)
        except ResultsError as exc:
            check_refusal(exc)
            return
        consume(run, "result.json")


def seeds() -> Iterator[bytes]:
    """The recorded run's document (failures, repeats, artifacts), its shards, and a few cases of it alone."""
    files = recorded()
    for path in (files.result, *files.shards):
        yield path.read_bytes()
    document = json.loads(files.result.read_text())
    for case in document["cases"]:
        yield json.dumps({**document, "cases": [case]}, indent=1).encode()
