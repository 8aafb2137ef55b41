"""Every question on the synthetic CI history of scenario.py, whose answers are known, on SQLite and on PostgreSQL.
The runs are added in a shuffled order: the answers must follow when runs started, not when they were added."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from dmlconform.history.database import Database, open_database
from dmlconform.history.ingest import add_records, record_from_document
from dmlconform.history.queries import (
    RunFilter,
    compare,
    drift,
    first_failures,
    flaky,
    history_report,
    load_runs,
    prune,
    timeline,
)
from tests.history import scenario

IDS = scenario.case_ids()
A, B = (scenario.stack_name(stack) for stack in scenario.STACKS)


def fill(url: str) -> None:
    runs = scenario.runs()
    random.Random(7).shuffle(runs)
    with open_database(url, create=True) as database:
        add_records(database, [record_from_document(doc, f"{doc['backend']['device']} build {meta['build']}", meta)
                               for doc, meta in runs])


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def scenario_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    if request.param == "sqlite":
        url = str(tmp_path_factory.mktemp("scenario") / "history.sqlite")
    else:
        url = request.getfixturevalue("postgres").new_database()
    fill(url)
    return url


@pytest.fixture
def db(scenario_url: str) -> Iterator[Database]:
    with open_database(scenario_url) as database:
        yield database


def build(run) -> int:
    return int(run.meta["build"]) if run is not None else 0


def test_runs_are_in_the_order_they_started_whatever_the_order_they_were_added(db: Database) -> None:
    runs = load_runs(db)
    assert [(run.stack, build(run)) for run in runs] == [
        (scenario.stack_name(stack), b) for b in scenario.BUILDS for stack in scenario.STACKS]
    assert all(run.meta["commit"] == f"c{build(run):03d}" and run.meta["driver_version"] for run in runs)


def test_first_failure_all_gives_the_range_to_bisect_of_each_case_failing_now(db: Database) -> None:
    found = [(f.case.name, f.stack, build(f.last_pass), build(f.first_failure), f.runs_between, f.failing_runs,
              f.flips, f.status) for f in first_failures(db)]
    # Newest first failure first: A's build 7, then B's build 6 (half an hour after A's), then A's build 6.
    assert found == [(IDS["REGRESSED"], A, 6, 7, 0, 4, 1, "FAIL"), (IDS["DRIVER"], B, 5, 6, 0, 5, 1, "FAIL"),
                     (IDS["GAP"], A, 3, 6, 2, 5, 1, "FAIL")]


def test_first_failure_of_one_case_shows_every_stack_passing_or_not(db: Database) -> None:
    found = {f.stack: f for f in first_failures(db, case_text=IDS["FLAKY"])}
    assert set(found) == {A, B} and not found[A].failing and not found[B].failing
    assert found[A].flips == 4 and build(found[A].latest) == 10 and found[A].first_failure is None
    regressed = first_failures(db, case_text=IDS["REGRESSED"])
    assert [(f.stack, f.failing) for f in regressed] == [(A, True), (B, False)]


def test_first_failure_within_a_filter(db: Database) -> None:
    """Only builds up to 8 (by --where, one build at a time here): REGRESSED fails from 7 on."""
    early = RunFilter(stack="gpu-a", where=(("branch", "main"),))
    assert {f.case.name for f in first_failures(db, early)} == {IDS["REGRESSED"], IDS["GAP"]}
    assert first_failures(db, RunFilter(where=(("branch", "release"),))) == []


def test_flaky_finds_the_flips_within_one_stack_and_configuration(db: Database) -> None:
    result = flaky(db)
    found = [(f.case.name, f.stack, f.flips, f.pairs, f.runs, round(f.flip_rate, 4), f.history, f.flake_statuses,
              build(f.last_failure)) for f in result.flakes]
    # B's driver changes after build 5: its pairs are 4 + 4, and no flip is counted across the change (the "|").
    assert found == [(IDS["FLAKY"], A, 4, 9, 10, 0.4444, "PFPPFPPPPP", 0, 5),
                     (IDS["FLAKE_STATUS"], B, 2, 8, 10, 0.25, "PPPfP|PPPPP", 1, 4)]
    assert (result.stacks, result.runs) == (2, 20)


def test_one_flip_is_a_regression_not_a_flake_unless_asked(db: Database) -> None:
    names = {(f.case.name, f.stack) for f in flaky(db, min_flips=1).flakes}
    assert names == {(IDS["FLAKE_STATUS"], B), (IDS["FLAKY"], A), (IDS["REGRESSED"], A), (IDS["GAP"], A)}
    assert (IDS["DRIVER"], B) not in names  # it flipped only across the driver change


def test_flaky_over_the_last_runs_and_with_the_same_build_only(db: Database) -> None:
    assert flaky(db, last=5).flakes == ()  # builds 6-10: nothing flipped, no FLAKE
    assert [(f.case.name, f.history, f.flips) for f in flaky(db, last=7).flakes] == [
        (IDS["FLAKY"], "PFPPPPP", 2), (IDS["FLAKE_STATUS"], "fP|PPPPP", 1)]
    same_build = flaky(db, same=("build",))  # every run its own inputs: only the FLAKE status is left
    assert [(f.case.name, f.flips, f.pairs, f.history) for f in same_build.flakes] == [
        (IDS["FLAKE_STATUS"], 0, 0, "P|P|P|f|P|P|P|P|P|P")]


def test_drift_finds_the_closeness_rising_and_when_it_reaches_the_limit(db: Database) -> None:
    found = drift(db)
    assert [(d.case.name, d.stack, d.runs) for d in found] == [(IDS["DRIFTING"], A, 10)]
    (rising,) = found
    assert rising.slope == pytest.approx(0.05) and rising.rise == pytest.approx(0.45)
    assert (rising.first, rising.last, rising.highest) == pytest.approx((0.05, 0.5, 0.5))
    assert rising.runs_to_limit == pytest.approx(10.0)
    assert list(rising.values) == pytest.approx([0.05 * b for b in scenario.BUILDS])
    assert drift(db, min_rise=0.5) == []
    assert drift(db, RunFilter(stack="GPU-B")) == []  # constant 0.3 there


def test_compare_by_driver_version(db: Database) -> None:
    result = compare(db, "driver_version")
    one = [(stack, b) for b in scenario.BUILDS for stack in scenario.STACKS if scenario.driver(stack, b) == "1.0"]
    two = [("GPU-B", b) for b in scenario.BUILDS if b >= 6]
    assert [(v.value, v.runs, v.stacks, (v.passed, v.failed)) for v in result.values] == [
        ("1.0", 15, (A, B), scenario.expected_counts(one)), ("2.0", 5, (B,), scenario.expected_counts(two))]
    assert [(c.case.name, c.stack, c.outcomes) for c in result.changes] == [
        (IDS["DRIVER"], B, {"1.0": "PASS", "2.0": "FAIL"})]
    assert result.runs_without == 0
    assert compare(db, "no_such_key").values == () and compare(db, "no_such_key").runs_without == 20


def test_timeline_of_a_flaky_case(db: Database) -> None:
    result = timeline(db, IDS["FLAKY"])
    assert [stack.stack for stack in result.stacks] == [A, B]
    assert [(build(row.run), row.status) for row in result.stacks[0].rows] == [
        (b, "FAIL" if b in (2, 5) else "PASS") for b in scenario.BUILDS]
    assert {row.status for row in result.stacks[1].rows} == {"PASS"}
    last3 = timeline(db, IDS["FLAKY"][-12:], RunFilter(stack="GPU-A"), last=3)  # a unique part of the id will do
    assert [build(row.run) for row in last3.stacks[0].rows] == [8, 9, 10] and len(last3.stacks) == 1


def test_timeline_counts_the_runs_that_skipped_a_case(db: Database) -> None:
    gap = timeline(db, IDS["GAP"], RunFilter(stack="GPU-A"))
    assert [row.status for row in gap.stacks[0].rows][3:5] == ["SKIPPED", "SKIPPED"]
    assert gap.stacks[0].runs_without == 0


def test_the_page_data_has_a_pass_rate_per_run_and_operator(db: Database) -> None:
    report = history_report(db)
    series = {s.stack: s for s in report.stacks}
    a_runs = series[A].runs
    assert [build(run) for run in a_runs] == list(scenario.BUILDS)
    regressed_op = next(row.case.op for row in first_failures(db) if row.case.name == IDS["REGRESSED"])
    # Each run's own rate is its passed/judged; an operator's line drops where one of its cases failed.
    passed, failed = scenario.expected_counts([("GPU-A", 7)])
    assert a_runs[6].pass_rate == pytest.approx(passed / (passed + failed)) and failed == 2
    assert min(value for value in series[A].operators[regressed_op] if value is not None) < 1.0
    assert [f.case.name for f in report.flaky.flakes] == [IDS["FLAKY"], IDS["FLAKE_STATUS"]]
    assert len(report.first_failures) == 3 and [d.case.name for d in report.drift] == [IDS["DRIFTING"]]


def test_prune_keeps_the_last_runs_of_each_stack(new_url, tmp_path: Path) -> None:
    url = new_url()
    fill(url)
    with open_database(url) as database:
        dry = prune(database, 3, dry_run=True)
        assert dry.runs_removed == 14 and len(load_runs(database)) == 20
        done = prune(database, 3)
        assert (done.runs_removed, done.case_rows_removed) == (14, 14 * len(scenario.ROLES))
        assert done.stacks == {A: (3, 7), B: (3, 7)}
        assert [build(run) for run in load_runs(database)] == [8, 8, 9, 9, 10, 10]
        rows = database.query("SELECT COUNT(*) FROM case_results")[0][0]
        assert rows == 6 * len(scenario.ROLES)
        # What is left answers as a history of builds 8-10: REGRESSED has never passed in it.
        regressed = next(f for f in first_failures(database) if f.case.name == IDS["REGRESSED"])
        assert regressed.last_pass is None and build(regressed.first_failure) == 8
