"""Two CI jobs adding at once: two processes released together by a barrier, on a new database (both make the
schema) and on one that exists, adding the same run, different runs, and overlapping sets. No run may be lost or
held twice, and every case row must be there once."""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable
from typing import Any

import pytest

from dmlconform.history.database import open_database
from dmlconform.history.ingest import RunRecord, add_records, record_from_document
from tests.history import scenario

CONTEXT = multiprocessing.get_context("fork")
pytestmark = pytest.mark.slow  # each test starts eight processes
ROUNDS = 2


def _records(builds: list[tuple[str, int]]) -> list[RunRecord]:
    return [record_from_document(scenario.document(stack, build), f"{stack}-{build}", scenario.meta(build))
            for stack, build in builds]


def _writer(url: str, records: list[RunRecord], barrier: Any, results: Any) -> None:
    barrier.wait()
    began = time.monotonic()
    try:
        with open_database(url, create=True) as database:
            added = add_records(database, records)
        results.put(("ok", [(entry.source, entry.new) for entry in added], began, time.monotonic()))
    except BaseException as exc:  # reported to the test, which fails with it
        results.put(("error", repr(exc), began, time.monotonic()))


def _race(url: str, first: list[RunRecord], second: list[RunRecord]) -> tuple[list[Any], bool]:
    barrier, results = CONTEXT.Barrier(2), CONTEXT.Queue()
    workers = [CONTEXT.Process(target=_writer, args=(url, records, barrier, results)) for records in (first, second)]
    for worker in workers:
        worker.start()
    outcomes = [results.get(timeout=60) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
    assert all(outcome[0] == "ok" for outcome in outcomes), outcomes
    (_, _, start_a, end_a), (_, _, start_b, end_b) = outcomes
    return [outcome[1] for outcome in outcomes], start_a < end_b and start_b < end_a


def _contents(url: str) -> tuple[list[str], int, int]:
    with open_database(url) as database:
        sources = sorted(row[0] for row in database.query("SELECT source FROM runs"))
        rows = database.query("SELECT COUNT(*) FROM case_results")[0][0]
        cases = database.query("SELECT COUNT(*) FROM cases")[0][0]
    return sources, int(rows), int(cases)


@pytest.mark.parametrize("existing", [False, True], ids=["new-database", "existing-database"])
def test_two_writers_at_once_lose_and_duplicate_nothing(new_url: Callable[[], str], existing: bool) -> None:
    overlapped = 0
    for _ in range(ROUNDS):
        url = new_url()
        if existing:
            with open_database(url, create=True) as database:
                add_records(database, _records([("GPU-B", 10)]))
        before = ["GPU-B-10"] if existing else []
        # Overlapping sets: one run each adds alone, and one both add.
        added, overlap = _race(url, _records([("GPU-A", 1), ("GPU-A", 2)]), _records([("GPU-A", 2), ("GPU-B", 1)]))
        overlapped += overlap
        new = {source for outcome in added for source, is_new in outcome if is_new}
        held = [source for outcome in added for source, is_new in outcome if not is_new]
        assert new == {"GPU-A-1", "GPU-A-2", "GPU-B-1"} and held == ["GPU-A-2"]  # the shared run: added once
        sources, rows, cases = _contents(url)
        assert sources == sorted(["GPU-A-1", "GPU-A-2", "GPU-B-1", *before])
        assert rows == len(sources) * len(scenario.ROLES) and cases == len(scenario.ROLES)
        # The same run from both.
        same, overlap = _race(url, _records([("GPU-B", 5)]), _records([("GPU-B", 5)]))
        overlapped += overlap
        assert sorted(is_new for outcome in same for _, is_new in outcome) == [False, True]
        assert _contents(url)[0] == sorted([*sources, "GPU-B-5"])
    assert overlapped, "the writers never ran at the same time: the test showed nothing"
