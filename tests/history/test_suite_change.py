"""The questions across a change of suites (tests/history/suite_change.py: a case that left the tier, a case new in
the newer suite, a case whose content changed under its id, a case of another tier), on SQLite and on PostgreSQL.
Each expected answer is worked out by hand from the plan there; where the history once answered otherwise (counting a
case the newer suite dropped as failing now, a case in one run only as a change, a step of closeness across the
suites as drift) the test says which answer that was, so that such a query fails it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from dmlconform.history.database import Database, open_database
from dmlconform.history.ingest import add_records, record_from_document
from dmlconform.history.queries import RunFilter, RunInfo, compare, drift, first_failures, flaky, timeline
from tests.history import suite_change
from tests.history.suite_change import FULL, NEW, OLD, STACK

IDS = suite_change.case_ids()
ROLE = {name: role for role, name in IDS.items()}


def fill(url: str, runs: list[tuple[dict[str, Any], dict[str, str]]]) -> None:
    with open_database(url, create=True) as database:
        add_records(database, [record_from_document(document, f"{document['settings']['tier']} build "
                                                    f"{meta['build']}{shard_label(document)}", meta)
                               for document, meta in runs])


def shard_label(document: dict[str, Any]) -> str:
    shard = document["shard"]
    return f" shard {shard['index']}/{shard['count']}" if shard else ""


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def suites_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    if request.param == "sqlite":
        url = str(tmp_path_factory.mktemp("suites") / "history.sqlite")
    else:
        url = request.getfixturevalue("postgres").new_database()
    fill(url, suite_change.runs())
    return url


@pytest.fixture
def db(suites_url: str) -> Iterator[Database]:
    with open_database(suites_url) as database:
        yield database


def source(run: RunInfo | None) -> str | None:
    return None if run is None else run.source


def test_first_failure_all_across_a_change_of_suites(db: Database) -> None:
    found = {ROLE[f.case.name]: (f.failing, source(f.last_pass), source(f.first_failure), f.failing_runs,
                                 f.runs_between, f.flips, f.suite_changed, source(f.left)) for f in first_failures(db)}
    assert found == {
        # failing, last pass, first failure, failing runs, runs between, flips, suite changed, left
        "FLIPPY": (True, "standard build 7", "standard build 8", 1, 0, 3, False, None),
        # The standard runs after build 6's full run do not hold it: another tier, not a newer suite of its own.
        "FULL_ONLY": (True, "full build 2-full", "full build 6-full", 1, 4, 1, False, None),
        "NEWCOMER": (True, None, "standard build 5", 4, 0, 0, False, None),
        "CHANGED": (True, "standard build 4", "standard build 5", 4, 0, 1, True, None),
        # Its last verdict, build 4's, was a failure; the history once listed it as failing now, for ever. Between
        # builds 2 and 3: build 2's full run, which does not hold it.
        "RETIRED": (False, "standard build 2", "standard build 3", 2, 1, 1, False, "standard build 5"),
    }
    order = [ROLE[f.case.name] for f in first_failures(db)]
    assert order[:2] == ["FLIPPY", "FULL_ONLY"] and set(order[2:4]) == {"NEWCOMER", "CHANGED"}
    assert order[4] == "RETIRED"  # newest first failure first; the cases that left after those failing now


def test_first_failure_of_a_case_that_left(db: Database) -> None:
    (retired,) = first_failures(db, case_text=IDS["RETIRED"])
    assert not retired.failing and source(retired.left) == "standard build 5" and source(retired.latest) == \
        "standard build 4"
    (steady,) = first_failures(db, case_text=IDS["STEADY"])  # held by every suite: never left
    assert steady.left is None and not steady.failing and source(steady.latest) == "standard build 8"


def test_a_flip_across_the_change_of_suites_is_not_counted(db: Database) -> None:
    found = {ROLE[f.case.name]: f for f in flaky(db).flakes}
    assert set(found) == {"FLIPPY"}
    flippy = found["FLIPPY"]
    # Runs: s1 s2 f2 s3 s4 | s5 s6 f6 s7 s8; "." a run that does not hold it (the full tier's), "|" new inputs.
    assert (flippy.flips, flippy.pairs, flippy.runs, flippy.window) == (3, 6, 8, 10)
    assert flippy.history == "PP|.|PP|PF|.|PF"
    # One flip each: RETIRED and FULL_ONLY within their suites. CHANGED passed in every OLD run and failed in every
    # NEW one: a query that compared it across the suites would list it here.
    assert {ROLE[f.case.name] for f in flaky(db, min_flips=1).flakes} == {"FLIPPY", "RETIRED", "FULL_ONLY"}


def test_drift_is_fitted_within_one_suite(db: Database) -> None:
    found = drift(db)
    # STEP's closeness steps from 0.1 (OLD) to 0.6 (NEW): a line through both suites rises 0.5; within each it is
    # flat. CREEPING rises 0.1 a run within NEW.
    assert [(ROLE[d.case.name], d.stack, d.suite, d.runs) for d in found] == [("CREEPING", STACK, NEW, 4)]
    (creeping,) = found
    assert creeping.slope == pytest.approx(0.1) and creeping.rise == pytest.approx(0.3)
    assert creeping.runs_to_limit == pytest.approx(6.0)
    assert list(creeping.values) == pytest.approx([None] * 5 + [0.1, 0.2, None, 0.3, 0.4])


def test_compare_by_suite_counts_a_case_in_one_run_only_apart(db: Database) -> None:
    result = compare(db, "suite_fingerprint", RunFilter(where=(("tier", "standard"),)))
    assert [v.value for v in result.values] == [OLD, NEW]
    # RETIRED (OLD only) and NEWCOMER (NEW only) were once listed as changes; they are the suites' doing.
    assert [(ROLE[c.case.name], c.outcomes, c.suites_differ) for c in result.changes] == sorted(
        [("CHANGED", {OLD: "PASS", NEW: "FAIL"}, True), ("FLIPPY", {OLD: "PASS", NEW: "FAIL"}, True)],
        key=lambda change: IDS[change[0]])
    (stack,) = result.stacks
    assert {value: source(run) for value, run in stack.runs.items()} == {OLD: "standard build 4",
                                                                        NEW: "standard build 8"}
    assert (stack.held_by_all, stack.held_by_some, stack.held_by_one, stack.suites) == (5, 0, 2, 2)
    every = compare(db, "suite_fingerprint")  # the full tier's value too: STEADY is the one case in all three
    assert [ROLE[c.case.name] for c in every.changes] == [ROLE[c.case.name] for c in result.changes]
    assert (every.stacks[0].held_by_all, every.stacks[0].held_by_some, every.stacks[0].held_by_one) == (1, 4, 3)
    assert every.values[-1].value == FULL


def test_timeline_shows_the_suite_of_each_run(db: Database) -> None:
    (stack,) = timeline(db, IDS["CHANGED"]).stacks
    assert [(row.run.meta["suite_fingerprint"], row.status) for row in stack.rows] == [
        *[(OLD, "PASS")] * 4, *[(NEW, "FAIL")] * 4]
    assert stack.runs_without == 2  # the full tier's two runs


def test_a_case_has_not_left_until_every_shard_of_the_newer_suite_is_in(new_url: Callable[[], str]) -> None:
    url = new_url()
    old = [(suite_change.document("standard", build), {"build": str(build)}) for build in range(1, 5)]
    first = (suite_change.document("standard", 5, ("STEADY", "NEWCOMER", "CHANGED"), (1, 2)), {"build": "5"})
    second = (suite_change.document("standard", 5, ("STEP", "CREEPING", "FLIPPY"), (2, 2)), {"build": "5"})
    fill(url, [*old, first])
    with open_database(url) as database:
        retired = [f for f in first_failures(database) if f.case.name == IDS["RETIRED"]]
        assert [(f.failing, f.left) for f in retired] == [(True, None)]  # NEW's shard 2/2 might hold it
    fill(url, [second])
    with open_database(url) as database:
        retired = [f for f in first_failures(database) if f.case.name == IDS["RETIRED"]]
        assert [(f.failing, source(f.left)) for f in retired] == [(False, "standard build 5 shard 1/2")]


def test_runs_of_suite_folders_never_take_over_from_one_another(new_url: Callable[[], str]) -> None:
    """Without a tier the document does not say which folders a run came from: two runs of different folders may
    both be current, so a case of one is not taken as gone because the other lacks it."""
    url = new_url()
    runs = []
    for build in range(1, 6):
        document = suite_change.document("standard", build)
        document["settings"]["tier"] = None
        runs.append((document, {"build": str(build)}))
    fill(url, runs)
    with open_database(url) as database:
        retired = [f for f in first_failures(database) if f.case.name == IDS["RETIRED"]]
        assert [(f.failing, f.left) for f in retired] == [(True, None)]
