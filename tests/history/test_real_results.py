"""The kept real results in one history: the standard tier on DirectML 1.15.4 on lavapipe and on the H100, and
releases of the version matrix (DirectML 1.8.0, 1.10.1, 1.15.2 and 1.15.4 on lavapipe; 1.9.0 and 1.10.1 on the
H100). Each answer is checked against one worked out here from the documents' JSON alone, on SQLite and on
PostgreSQL. (The documents are read once for both databases: they are most of these tests' time.)

The kept 1.15.4 results were taken on newer suites than the matrix's (other cases in the standard tier, some cases
moved to the full tier), so each stack's runs hold different cases over time, as a CI's do whenever the suites
change. The rules the answers follow (docs/history.md, "When the suites change") are worked out here again from the
JSON; where an answer that ignored them would differ, the test says so, so that such a query fails it."""

from __future__ import annotations

import json
import lzma
from collections import defaultdict
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import pytest

from dmlconform.history import queries
from dmlconform.history.database import Database, open_database
from dmlconform.history.ingest import RunRecord, add_records, record_from_document
from dmlconform.history.queries import RunFilter, RunInfo, compare, first_failures, flaky, load_runs, timeline
from tests.history.scenario import RESULTS

MATRIX = RESULTS / "matrix"
H100_NEW = RESULTS / "directml-1.15.4-h100-standard.json"
H100_DML_1_9 = MATRIX / "h100" / "standard" / "onnxruntime-directml-1.12.0.json.xz"
H100_DML_1_10 = MATRIX / "h100" / "standard" / "onnxruntime-directml-1.14.1-standard.json.xz"
FILES = [
    H100_NEW, RESULTS / "directml-1.15.4-lavapipe-standard.json",
    *(MATRIX / "standard" / f"onnxruntime-directml-{v}.json.xz" for v in ("1.10.0", "1.14.1", "1.20.1", "1.24.4")),
    H100_DML_1_9, H100_DML_1_10,
]
H100 = "directml on NVIDIA H100 80GB HBM3"
LAVAPIPE = "directml on llvmpipe (LLVM 15.0.6, 256 bits)"
PASSING = {"PASS", "INVALID_OK"}
pytestmark = pytest.mark.slow  # reading the documents takes two seconds
FAILING = {"FAIL", "ERROR", "CRASH", "TIMEOUT", "NOT_SUPPORTED"}

Document = dict[str, Any]
#: (case, stack, source of the last pass or None, source of the first failure, failing runs, suite changed between)
Range = tuple[str, str, str | None, str, int, bool]


@cache
def documents() -> tuple[tuple[str, Document], ...]:
    found = []
    for path in FILES:
        raw = path.read_bytes()
        found.append((str(path), json.loads(lzma.decompress(raw) if path.suffix == ".xz" else raw)))
    return tuple(found)


@cache
def records() -> tuple[RunRecord, ...]:
    return tuple(record_from_document(document, source) for source, document in documents())


# -- the answers, from the JSON alone ----------------------------------------------------------------------------
def stack_of(document: Document) -> str:
    return f"{document['backend']['name']} on {document['backend']['device']}"


def verdict(case: dict[str, Any]) -> int | None:
    came_to = case["outcome"] or case["status"]
    if came_to in PASSING:
        return 1
    return 0 if came_to in FAILING and case["status"] != "NOT_REQUIRED" else None


def came_to(case: dict[str, Any]) -> str:
    return case["outcome"] or case["status"]


def fingerprint(document: Document) -> str:
    return document["suite"]["fingerprint"]


def ids(document: Document) -> set[str]:
    return {case["id"] for case in document["cases"]}


def in_order() -> dict[str, list[tuple[str, Document]]]:
    stacks: dict[str, list[tuple[str, Document]]] = defaultdict(list)
    for source, document in sorted(documents(), key=lambda item: item[1]["started"]):
        stacks[stack_of(document)].append((source, document))
    return stacks


def by_source() -> dict[str, Document]:
    return dict(documents())


def test_the_kept_results_are_whole_runs_of_one_selection() -> None:
    """What the expectations below lean on: each document is a whole run (no shard; every case of its selection
    listed) of the standard tier without -k, so a case a run does not list is not in its suite; and each stack has
    runs of two suites."""
    for _, document in documents():
        assert document["shard"] is None and document["suite"]["cases"] == len(document["cases"])
        assert (document["settings"]["tier"], document["settings"]["expression"]) == ("standard", None)
    for runs in in_order().values():
        assert len({fingerprint(document) for _, document in runs}) == 2


def expected_first_failures() -> tuple[set[Range], dict[Range, str]]:
    """The cases failing now, and those whose latest verdict was a failure but that a stack's newest run (of the
    same tier, a whole run: above) no longer holds, with that run's source: they left the suite there."""
    failing: set[Range] = set()
    left: dict[Range, str] = {}
    for stack, runs in in_order().items():
        newest_source, newest = runs[-1]
        sequences: dict[str, list[tuple[str, int]]] = defaultdict(list)
        for source, document in runs:
            for case in document["cases"]:
                if verdict(case) is not None:
                    sequences[case["id"]].append((source, verdict(case)))
        for case_id, sequence in sequences.items():
            if sequence[-1][1] != 0:
                continue
            passes = [i for i, (_, v) in enumerate(sequence) if v == 1]
            start = passes[-1] + 1 if passes else 0
            last_pass = sequence[start - 1][0] if passes else None
            first = sequence[start][0]
            changed = last_pass is not None and fingerprint(by_source()[last_pass]) != fingerprint(by_source()[first])
            entry = (case_id, stack, last_pass, first, len(sequence) - start, changed)
            if case_id in ids(newest):
                failing.add(entry)
            else:
                # Its last run's suite is not the newest run's: the newest run, a whole one, does not list it.
                left[entry] = newest_source
    return failing, left


def directml_version(document: Document) -> str | None:
    return document["backend"].get("directml_dll_version") or document["backend"].get("directml")


# -- the databases ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def real_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    if request.param == "sqlite":
        url = str(tmp_path_factory.mktemp("real") / "history.sqlite")
    else:
        url = request.getfixturevalue("postgres").new_database()
    with open_database(url, create=True) as database:
        add_records(database, records())
    return url


@pytest.fixture
def db(real_url: str) -> Iterator[Database]:
    with open_database(real_url) as database:
        yield database


def test_every_kept_result_is_a_run_on_its_stack(db: Database) -> None:
    runs = load_runs(db)
    assert sorted(run.source for run in runs) == sorted(source for source, _ in documents())
    assert {run.stack for run in runs} == {H100, LAVAPIPE}
    assert sum(run.cases for run in runs) == sum(len(document["cases"]) for _, document in documents())


def source(run: RunInfo | None) -> str | None:
    return None if run is None else run.source


def test_first_failure_all_matches_the_documents(db: Database) -> None:
    answers = first_failures(db)
    found = {(f.case.name, f.stack, source(f.last_pass), source(f.first_failure), f.failing_runs, f.suite_changed)
             for f in answers if f.failing}
    found_left = {(f.case.name, f.stack, source(f.last_pass), source(f.first_failure), f.failing_runs,
                   f.suite_changed): source(f.left) for f in answers if f.left is not None}
    failing, left = expected_first_failures()
    assert found == failing
    assert found_left == left
    assert len(answers) == len(failing) + len(left)  # --all: nothing else
    # Both kinds are there: the newer suite moved cells-*-2/-3 cases to the full tier, and the H100's last run of the
    # older suite (DirectML 1.10.1) failed them (lavapipe's, 1.8.0, passed them); the newer suite's own cases fail on
    # both stacks. So a query that counted the cases that left as failing now would fail this test.
    assert left and failing


def test_a_first_failure_that_ignored_the_change_of_suites_would_fail_the_check(
        db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above, against the query with the rule for cases that left taken out: it answers otherwise."""
    monkeypatch.setattr(queries, "left_suite", lambda rows, current: None)
    wrong = {(f.case.name, f.stack, source(f.last_pass), source(f.first_failure), f.failing_runs, f.suite_changed)
             for f in first_failures(db) if f.failing}
    failing, left = expected_first_failures()
    assert wrong != failing and wrong == failing | set(left)


def test_the_cases_directml_1_10_broke_on_the_h100(db: Database) -> None:
    """Worked out from three documents: the cases DirectML 1.9.0's run passed and 1.10.1's (the next H100 run)
    failed. The newest H100 run (1.15.4, newer suite) passed some, failed some and no longer holds the rest:
    first-failure gives the range 1.9.0 to 1.10.1 to those failing now and to those that left, none to the rest."""
    documents_of = by_source()
    before = {case["id"]: verdict(case) for case in documents_of[str(H100_DML_1_9)]["cases"]}
    after = {case["id"]: verdict(case) for case in documents_of[str(H100_DML_1_10)]["cases"]}
    newest = {case["id"]: verdict(case) for case in documents_of[str(H100_NEW)]["cases"]}
    broke = {case_id for case_id, v in after.items() if v == 0 and before.get(case_id) == 1}
    assert broke  # 1.10.1's run fails hundreds of cases 1.9.0's passes (the version matrix's README)
    answers = [f for f in first_failures(db) if f.stack == H100 and f.case.name in broke]
    assert all((source(f.last_pass), source(f.first_failure)) == (str(H100_DML_1_9), str(H100_DML_1_10))
               for f in answers)
    assert {f.case.name for f in answers if f.failing} == {c for c in broke if newest.get(c) == 0}
    assert {f.case.name for f in answers if f.left} == {c for c in broke if c not in newest}
    gone = min(c for c in broke if c not in newest)
    assert gone.startswith("slice_grad.standard/cells-")  # what the new suites moved to the full tier
    (one,) = [f for f in first_failures(db, case_text=gone) if f.stack == H100]
    assert (one.failing, source(one.left), source(one.latest)) == (False, str(H100_NEW), str(H100_DML_1_10))


def test_timeline_of_a_case_dml_1_10_broke_matches_the_documents(db: Database) -> None:
    case_id = min(entry[0] for entry in expected_first_failures()[1] if entry[2] == str(H100_DML_1_9))
    result = timeline(db, case_id)
    for stack in result.stacks:
        expected = [(source, case["status"], case["closeness"] if case["closeness"] != "inf" else float("inf"),
                     fingerprint(document))
                    for source, document in in_order()[stack.stack]
                    for case in document["cases"] if case["id"] == case_id]
        assert [(row.run.source, row.status, row.closeness, row.run.meta["suite_fingerprint"])
                for row in stack.rows] == expected
        # The newest run of each stack (the newer suite) does not hold it: the one run after it without it.
        assert stack.runs_without == 1
    assert [stack.stack for stack in result.stacks] == [H100, LAVAPIPE]


def expected_changes(runs: list[tuple[str, Document]], value_of: Callable[[Document], str | None]
                     ) -> tuple[dict[str, bool], list[int]]:
    """Each value's latest run among `runs`; the cases whose outcome differs between the runs that hold them (and
    whether those runs are of different suites), and how many cases all of the runs, two or more but not all, and
    one of them hold."""
    latest = {value_of(document): document for _, document in runs}
    outcomes: dict[str, dict[str, str]] = defaultdict(dict)
    suites: dict[str, set[str]] = defaultdict(set)
    for value, document in latest.items():
        for case in document["cases"]:
            outcomes[case["id"]][value] = came_to(case)
            suites[case["id"]].add(fingerprint(document))
    held = [len(found) for found in outcomes.values()]
    return ({case_id: len(suites[case_id]) > 1 for case_id, found in outcomes.items() if len(set(found.values())) > 1},
            [held.count(len(latest)), sum(1 for count in held if 1 < count < len(latest)), held.count(1)])


def test_compare_by_directml_version_matches_the_documents(db: Database) -> None:
    result = compare(db, "directml_version")
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for _, document in documents():
        value = directml_version(document)
        verdicts = [verdict(case) for case in document["cases"]]
        counts[value][0] += 1
        counts[value][1] += verdicts.count(1)
        counts[value][2] += verdicts.count(0)
    assert {v.value: [v.runs, v.passed, v.failed] for v in result.values} == counts
    assert [v.value for v in result.values] == ["1.8.0.0", "1.9.0.0", "1.10.1.0", "1.15.2.0", "1.15.4.0"]
    # Per stack, each version's latest run against the others: the cases whose outcome differs between the runs
    # that hold them. A case one run holds only is not a change of DirectML but of the suite.
    expected, held = set(), {}
    for stack, runs in in_order().items():
        changed, held[stack] = expected_changes(runs, directml_version)
        expected |= {(case_id, stack, suites_differ) for case_id, suites_differ in changed.items()}
    assert {(c.case.name, c.stack, c.suites_differ) for c in result.changes} == expected
    assert {s.stack: [s.held_by_all, s.held_by_some, s.held_by_one] for s in result.stacks} == held
    # Each stack's newest (1.15.4) run is of the newer suite and the others of the older: some cases are in one run
    # only, which a query that took absence for an outcome would list as changes; and some changes are between runs
    # of one suite, some across the two (1.10.1's failures that 1.15.4 passes).
    assert all(counts[2] for counts in held.values())
    assert {suites_differ for _, _, suites_differ in expected} == {True, False}


def test_what_changed_between_directml_1_15_2_and_1_15_4(db: Database) -> None:
    lavapipe = in_order()[LAVAPIPE]
    older_suite = fingerprint(lavapipe[0][1])
    versions = {"1.15.2.0", "1.15.4.0"}
    answers = {}
    for where in ((), (("suite_fingerprint", older_suite),)):
        # Each version's latest run: 1.15.4's is the newer suite's; --where the older suite, the matrix's run.
        result = compare(db, "directml_version", RunFilter(where=where), values=sorted(versions))
        assert [v.value for v in result.values] == ["1.15.2.0", "1.15.4.0"]
        admitted = [(s, d) for s, d in lavapipe if directml_version(d) in versions and all(
            fingerprint(d) == value for _, value in where)]
        changed, held = expected_changes(admitted, directml_version)
        assert {(c.case.name, c.suites_differ) for c in result.changes} == set(changed.items())
        assert [(s.stack, [s.held_by_all, s.held_by_some, s.held_by_one]) for s in result.stacks] == [
            (LAVAPIPE, held)]
        latest = {directml_version(d): d for _, d in admitted}
        assert result.values[0].fingerprint == {b: (r,) for b, r in sorted(latest["1.15.2.0"]["behaviour_fingerprint"]
                                                                             .items())}
        answers[bool(where)] = changed, held
    # On the cases both releases ran nothing changed on lavapipe, on either suite. Across the suites, the newer
    # suite's new cases and the older one's dropped ones are each in one run only: a query that took that for a
    # change would list them. On one suite every case is in both runs.
    assert answers[False][0] == answers[True][0] == {}
    assert answers[False][1][2] > 0 and answers[True][1][2] == 0


def test_flaky_finds_the_cases_whose_retries_disagreed(db: Database) -> None:
    # No two runs of one stack had the same inputs (each its own DirectML.dll, or its own suite), so no flip is
    # counted: the flaky cases are those whose retries disagreed in a run.
    for runs in in_order().values():
        inputs = [(d["backend"]["directml_dll_sha256"], fingerprint(d)) for _, d in runs]
        assert len(set(inputs)) == len(inputs)
    expected = {(case["id"], stack_of(document)) for _, document in documents() for case in document["cases"]
                if case["status"] == "FLAKE"}
    found = flaky(db).flakes
    assert {(f.case.name, f.stack) for f in found} == expected and expected
    assert all(f.flake_statuses >= 1 and f.flips == 0 and f.pairs == 0 for f in found)
