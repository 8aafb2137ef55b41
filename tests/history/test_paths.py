"""The history on execution paths (contract §9): a case on another path is a case of its own (its id says the path),
each case says its path, a timeline names the same case's other paths, and `runs` counts each run's cases per path;
on SQLite and PostgreSQL."""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import timedelta

import pytest
from rich.console import Console

from dmlconform.backends.numpy_backend import NumpyBackend
from dmlconform.case_result import Status
from dmlconform.cli.common import load_cases
from dmlconform.feature_levels import HIGHEST
from dmlconform.history.database import Database, open_database
from dmlconform.history.ingest import add_records, record_from_document
from dmlconform.history.queries import PathCounts, load_runs, path_counts, timeline
from dmlconform.report.history import case_json, render_runs, render_timeline, runs_document, timeline_document
from dmlconform.results.document import to_document
from dmlconform.runner import run_cases
from dmlconform.surface.paths import ExecutionPath
from tests.paths_suite import write_suite


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("paths-history")
    url = str(folder / "history.sqlite") if request.param == "sqlite" else \
        request.getfixturevalue("postgres").new_database()
    suite = write_suite(folder)
    documents = []
    for number, paths in enumerate(((ExecutionPath.OPERATOR,), tuple(ExecutionPath))):
        run = run_cases(load_cases((suite,), None, execution_paths=paths), NumpyBackend(), HIGHEST)
        run.started += timedelta(minutes=number)
        if len(paths) > 1:
            run.settings["paths"] = [path.value for path in paths]
            graph = next(r for r in run.results if r.id == "paths/clip@graph")
            graph.status, graph.message = Status.FAIL, "1 element(s) outside exact"
        documents.append(to_document(run))
    with open_database(url, create=True) as database:
        add_records(database, [record_from_document(document, f"run {n}") for n, document in enumerate(documents)])
    return url


@pytest.fixture
def db(url: str) -> Iterator[Database]:
    with open_database(url) as database:
        yield database


def test_each_run_counts_its_cases_per_path(db: Database) -> None:
    old, new = load_runs(db)
    counts = path_counts(db, [old.id, new.id])
    assert counts[old.id] == {"operator": PathCounts(3, 3, 0)}
    assert counts[new.id] == {"operator": PathCounts(3, 3, 0), "graph": PathCounts(3, 2, 1),
                              "in-place": PathCounts(2, 2, 0)}
    assert list(counts[new.id]) == ["operator", "graph", "in-place"]
    document = runs_document([old, new], "db", counts)
    assert document["runs"][1]["paths"]["graph"] == {"cases": 3, "passed": 2, "failed": 1}
    out = io.StringIO()
    render_runs([old, new], Console(file=out, width=300), counts)
    text = out.getvalue()
    assert "paths (passed/failed)" in text and "operator 3/0 · graph 2/1 · in-place 2/0" in text
    out = io.StringIO()
    render_runs([old], Console(file=out, width=300), {old.id: counts[old.id]})
    assert "paths" not in out.getvalue()  # the operator path alone: the table is what it was


def test_a_timeline_names_the_path_and_the_same_case_on_other_paths(db: Database) -> None:
    graph = timeline(db, "paths/clip@graph")
    assert graph.case.path == "graph" and graph.case.suite_id == "paths/clip"
    assert graph.other_paths == ("paths/clip", "paths/clip@in-place")
    assert [row.status for stack in graph.stacks for row in stack.rows] == ["FAIL"]
    operator = timeline(db, "paths/relu")
    assert operator.case.path == "operator" and operator.other_paths == ("paths/relu@graph",)
    assert len([row for stack in operator.stacks for row in stack.rows]) == 2
    out = io.StringIO()
    render_timeline(graph, Console(file=out, width=200))
    assert "on the graph path" in out.getvalue()
    assert "on other paths, cases of their own: paths/clip, paths/clip@in-place" in out.getvalue()
    document = timeline_document(graph, "db")
    assert document["case"]["path"] == "graph" and document["other_paths"] == ["paths/clip", "paths/clip@in-place"]
    assert case_json(operator.case)["path"] == "operator"

