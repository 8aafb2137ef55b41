"""What the history answers, each question a function returning plain dataclasses (dmlconform/report/history.py and
history_html.py draw them).

Runs are ordered by when they started (the document's `started`), then by the order they were added. A stack is
the backend on a device (or what `--meta stack=NAME` named); runs of one stack with one configuration had the same
inputs. Questions about failures start from the case rows that failed (the `failures` table lists only those), so
they read a few thousand rows however many runs the history holds; only the candidates' whole histories are read.

Runs of one stack need not hold the same cases: suites gain cases, lose them to another tier, and change a case's
content under the same id (a regenerated tensor, a mended rule). A run's suite fingerprint hashes every selected
case's id and content, so runs of one fingerprint ran the same cases with the same content; the documents carry no
digest per case (`output_sha256` is what the backend returned, not what it was asked), so a case under one id in
runs of different fingerprints may not be the same test. Hence: verdicts are compared only between runs that hold
the case; a flip counts only within one suite (the configuration includes the fingerprint); closeness is fitted
within one suite; a range to bisect that spans a suite change says so; and a case the stack's newer suite no longer
holds has not failed since it left (docs/history.md, "When the suites change").
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dmlconform.history import HistoryError
from dmlconform.history.database import Database, chunks, placeholders
from dmlconform.history.schema import STATUS_NAMES
from dmlconform.surface.paths import PATH_NAMES, ExecutionPath, split_case_id

DEFAULT_LAST = 50
#: Closeness above this is not finite (an element that had to be exact was off): no trend is drawn through it.
FINITE = 1e300


@dataclass(frozen=True)
class RunFilter:
    """Which runs a question looks at: a stack (part of its name, any case) and metadata that must match."""

    stack: str | None = None
    where: tuple[tuple[str, str], ...] = ()

    def admits(self, run: RunInfo) -> bool:
        if self.stack is not None and self.stack.lower() not in run.stack.lower():
            return False
        return all(run.meta.get(key) == value for key, value in self.where)


@dataclass(frozen=True)
class RunInfo:
    id: int
    digest: str
    stack: str
    configuration: str
    started: str
    started_us: int
    source: str
    cases: int
    passed: int
    failed: int
    meta: dict[str, str]
    summary: dict[str, int]
    fingerprint: dict[str, str]

    @property
    def pass_rate(self) -> float | None:
        judged = self.passed + self.failed
        return self.passed / judged if judged else None


@dataclass(frozen=True)
class CaseInfo:
    id: int
    name: str
    op: str
    dtype: str

    @property
    def path(self) -> str:
        """The execution path it ran on (contract §9), from its id: `suite/case@graph` is the graph path's; a case on
        another path is a case of its own in the history, as in the runs."""
        return split_case_id(self.name)[1].value

    @property
    def suite_id(self) -> str:
        return split_case_id(self.name)[0]


@dataclass(frozen=True)
class CaseRowInfo:
    run: RunInfo
    status: str
    outcome: str
    passed: int | None
    matched: str | None
    closeness: float | None
    max_ulp: int | None
    #: The DirectML release's known issue the case fell under in that run, "ID (release)".
    known_issue: str | None = None


def load_runs(database: Database, runs: RunFilter | None = None) -> list[RunInfo]:
    """Every run the filter admits, in order."""
    meta: dict[int, dict[str, str]] = defaultdict(dict)
    for run_id, key, value in database.query("SELECT run_id, key, value FROM run_meta"):
        meta[run_id][key] = value
    found = []
    for row in database.query(
            "SELECT r.id, r.digest, s.name, r.configuration, r.started, r.started_us, r.source, r.cases, r.passed,"
            " r.failed, r.summary, r.fingerprint FROM runs r JOIN stacks s ON s.id = r.stack_id"
            " ORDER BY r.started_us, r.id"):
        run = RunInfo(int(row[0]), row[1], row[2], row[3], row[4], int(row[5]), row[6], int(row[7]), int(row[8]),
                      int(row[9]), meta.get(int(row[0]), {}), json.loads(row[10]), json.loads(row[11]))
        if runs is None or runs.admits(run):
            found.append(run)
    return found


def by_stack(runs: Iterable[RunInfo]) -> dict[str, list[RunInfo]]:
    stacks: dict[str, list[RunInfo]] = defaultdict(list)
    for run in runs:
        stacks[run.stack].append(run)
    return dict(sorted(stacks.items()))


def _escape_like(text: str) -> str:
    return text.replace("!", "!!").replace("%", "!%").replace("_", "!_")


def find_case(database: Database, text: str) -> CaseInfo:
    """A case by its whole id, or by a part of it that names one case only."""
    rows = database.query("SELECT id, name, op, dtype FROM cases WHERE name = ?", (text,))
    if not rows:
        rows = database.query("SELECT id, name, op, dtype FROM cases WHERE lower(name) LIKE ? ESCAPE '!' "
                              "ORDER BY name LIMIT 6", ("%" + _escape_like(text.lower()) + "%",))
    if not rows:
        raise HistoryError(f"no case {text!r} in the history (`dmlconform history runs` lists what it holds)")
    if len(rows) > 1:
        names = ", ".join(row[1] for row in rows[:5]) + (", …" if len(rows) > 5 else "")
        raise HistoryError(f"{text!r} names several cases ({names}): give the whole id")
    return CaseInfo(int(rows[0][0]), rows[0][1], rows[0][2], rows[0][3])


def _cases(database: Database, case_ids: Iterable[int]) -> dict[int, CaseInfo]:
    found = {}
    for chunk in chunks(sorted(set(case_ids))):
        for row in database.query(f"SELECT id, name, op, dtype FROM cases WHERE id IN {placeholders(len(chunk))}",
                                  chunk):
            found[int(row[0])] = CaseInfo(int(row[0]), row[1], row[2], row[3])
    return found


def _histories(database: Database, case_ids: Iterable[int], runs: dict[int, RunInfo]
               ) -> dict[int, list[CaseRowInfo]]:
    """Each case's rows in the given runs, in run order."""
    found: dict[int, list[CaseRowInfo]] = defaultdict(list)
    for chunk in chunks(sorted(set(case_ids))):
        for case_id, run_id, status, outcome, passed, matched, closeness, max_ulp, known_issue in database.query(
                "SELECT case_id, run_id, status, outcome, passed, matched, closeness, max_ulp, known_issue"
                f" FROM case_results WHERE case_id IN {placeholders(len(chunk))}", chunk):
            run = runs.get(int(run_id))
            if run is not None:
                found[int(case_id)].append(CaseRowInfo(
                    run, STATUS_NAMES[int(status)], STATUS_NAMES[int(outcome)], _int(passed), matched,
                    None if closeness is None else float(closeness), _int(max_ulp), known_issue))
    order = {run_id: position for position, run_id in enumerate(sorted(runs, key=lambda r: _order(runs[r])))}
    for rows in found.values():
        rows.sort(key=lambda row: order[row.run.id])
    return found


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _order(run: RunInfo) -> tuple[int, int]:
    return run.started_us, run.id


def flips_of(verdicts: Sequence[int]) -> int:
    return sum(1 for before, after in itertools.pairwise(verdicts) if before != after)


# -- which cases a run holds ----------------------------------------------------------------------------------------
def suite_of(run: RunInfo) -> str | None:
    """The run's suite fingerprint: equal for two runs exactly when they selected the same cases with the same
    content."""
    return run.meta.get("suite_fingerprint")


def selection(run: RunInfo) -> tuple[str, str] | None:
    """What the run asked for, where its document says: the tier and the -k expression. Two runs of one stack with
    the same selection and different suite fingerprints ran two versions of that selection (the suites were
    regenerated or dmlconform upgraded). None for a run of suite folders (no tier: the document does not name the
    folders) and for a run without its selection's size (what `suite_cases` tells), which is never taken as
    superseding another."""
    tier = run.meta.get("tier")
    if tier is None or suite_of(run) is None or _count(run.meta.get("suite_cases")) is None:
        return None
    return tier, run.meta.get("expression", "")


def _count(text: str | None) -> int | None:
    return int(text) if text is not None and text.isascii() and text.isdigit() else None


@dataclass(frozen=True)
class CurrentSuite:
    """The suite a stack runs one selection from now: the fingerprint of its newest run of that selection."""

    fingerprint: str
    #: The stack's runs of this selection and fingerprint, in order.
    runs: tuple[RunInfo, ...]
    #: Whether those runs hold the whole selection: a whole run does; shards do once one of each is there.
    whole: bool


def current_suites(members: Sequence[RunInfo]) -> dict[tuple[str, str], CurrentSuite]:
    """Per selection (tier and -k expression), the suite a stack's runs (in order) run it from now."""
    newest: dict[tuple[str, str], RunInfo] = {}
    for run in members:
        key = selection(run)
        if key is not None:
            newest[key] = run
    found = {}
    for key, run in newest.items():
        fingerprint = suite_of(run)
        assert fingerprint is not None  # selection() says so
        runs = tuple(other for other in members if selection(other) == key and suite_of(other) == fingerprint)
        found[key] = CurrentSuite(fingerprint, runs, _whole(runs, _count(run.meta.get("suite_cases")) or 0))
    return found


def _whole(runs: Sequence[RunInfo], size: int) -> bool:
    """Whether these runs of one suite hold every case of its selection (a case missing from a shard not yet added
    has not left the suite)."""
    if any("shard" not in run.meta and run.cases == size for run in runs):
        return True
    shards = {run.meta["shard"]: run.cases for run in runs if "shard" in run.meta}
    return bool(shards) and sum(shards.values()) == size


def left_suite(rows: Sequence[CaseRowInfo], current: dict[tuple[str, str], CurrentSuite]) -> RunInfo | None:
    """Where a case left a stack's suite: the first run of the stack's current suite, for the selection the case
    was last run in, after that run, where that whole suite does not hold the case; None while it is still held
    (or the documents cannot tell). `rows` are the case's rows on the stack, in order."""
    last = rows[-1].run
    key = selection(last)
    suite = current.get(key) if key is not None else None
    if suite is None or not suite.whole or suite.fingerprint == suite_of(last):
        return None
    if any(suite_of(row.run) == suite.fingerprint for row in rows):
        return None  # a run of that suite holds it: the suite's selection has it
    return next((run for run in suite.runs if _order(run) > _order(last)), None)


# -- timeline -------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StackTimeline:
    stack: str
    rows: tuple[CaseRowInfo, ...]
    #: Runs of the stack (of those shown) that did not hold the case.
    runs_without: int


@dataclass(frozen=True)
class Timeline:
    case: CaseInfo
    stacks: tuple[StackTimeline, ...]
    #: The same suite case on the other execution paths the history holds (their ids: `relu@graph`, …).
    other_paths: tuple[str, ...] = ()


def timeline(database: Database, case_text: str, runs: RunFilter | None = None,
             last: int | None = None) -> Timeline:
    """Every run's status and closeness of one case, per stack (the last `last` runs of each stack that held it)."""
    case = find_case(database, case_text)
    admitted = load_runs(database, runs)
    rows = _histories(database, [case.id], {run.id: run for run in admitted}).get(case.id, [])
    stacks = []
    for stack, stack_runs in by_stack(admitted).items():
        mine = [row for row in rows if row.run.stack == stack]
        if not mine:
            continue
        shown = mine[-last:] if last else mine
        since = _order(shown[0].run)
        without = sum(1 for run in stack_runs if _order(run) >= since) - len(shown)
        stacks.append(StackTimeline(stack, tuple(shown), without))
    return Timeline(case, tuple(stacks), _other_paths(database, case))


def _other_paths(database: Database, case: CaseInfo) -> tuple[str, ...]:
    names = [case.suite_id + path.suffix for path in ExecutionPath if case.suite_id + path.suffix != case.name]
    held = {row[0] for row in database.query(f"SELECT name FROM cases WHERE name IN {placeholders(len(names))}",
                                             tuple(names))}
    return tuple(name for name in names if name in held)


#: A case row's execution path in SQL, as split_case_id reads it from the id: the id's last characters, by substr
#: and length, which both databases have (no LIKE: a literal % would be a parameter marker to PostgreSQL's driver).
_PATH_SQL = ("CASE " + " ".join(f"WHEN substr(c.name, length(c.name) - {len(name)}) = '@{name}' THEN '{name}'"
                                for name in PATH_NAMES[1:]) + f" ELSE '{PATH_NAMES[0]}' END")


@dataclass(frozen=True)
class PathCounts:
    """One run's cases on one execution path: how many, matched (passed 1) and failed (passed 0)."""

    cases: int
    passed: int
    failed: int


def path_counts(database: Database, run_ids: Iterable[int]) -> dict[int, dict[str, PathCounts]]:
    """Per run, its cases per execution path (contract §9), in the order operator, graph, in-place."""
    found: dict[int, dict[str, PathCounts]] = defaultdict(dict)
    for chunk in chunks(sorted(set(run_ids))):
        rows = database.query(
            f"SELECT r.run_id, {_PATH_SQL}, COUNT(*), SUM(CASE WHEN r.passed = 1 THEN 1 ELSE 0 END),"
            " SUM(CASE WHEN r.passed = 0 THEN 1 ELSE 0 END) FROM case_results r JOIN cases c ON c.id = r.case_id"
            f" WHERE r.run_id IN {placeholders(len(chunk))} GROUP BY 1, 2", chunk)
        for run_id, path, cases, passed, failed in rows:
            found[int(run_id)][str(path)] = PathCounts(int(cases), int(passed or 0), int(failed or 0))
    return {run_id: {name: paths[name] for name in PATH_NAMES if name in paths} for run_id, paths in found.items()}


# -- first failure --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FirstFailure:
    case: CaseInfo
    stack: str
    #: Failing now: its latest verdict on the stack is a failure, and the stack's suite still holds it.
    failing: bool
    #: Its latest status there (the run `latest`, the last that held it).
    status: str
    latest: RunInfo
    #: The last run that passed it before the failures that go on to its latest verdict (None: it has failed since
    #: it first ran here; while it passes, its latest passing run)...
    last_pass: RunInfo | None
    #: ...and the first run that failed it after that: the range to bisect (None where its latest verdict passed).
    first_failure: RunInfo | None
    #: Runs that judged it since the first failure, all failing.
    failing_runs: int
    #: Runs of the stack between the last pass and the first failure that did not judge it.
    runs_between: int
    #: Changes between pass and fail over all its runs on the stack; more than one: look at `flaky` too.
    flips: int
    judged: int
    #: The last pass and the first failure come from different suites (suite fingerprints): the case may have
    #: changed under its id between them, not only the code under test.
    suite_changed: bool = False
    #: Where the case left the stack's suite: the first run of the stack's newer suite (for the selection the case
    #: was last run in) that does not hold it. Its last verdict is then no news about the stack: not failing now.
    left: RunInfo | None = None


def first_failures(database: Database, runs: RunFilter | None = None,
                   case_text: str | None = None) -> list[FirstFailure]:
    """For each case failing now on a stack (its latest verdict there a failure, and the stack's suite still holds
    it), the last run that passed it and the first that failed it since; then the cases whose latest verdict was a
    failure when they left the stack's suite (`left`, not failing). Given a case, that case on every stack, passing
    or not. Newest failures first."""
    admitted = load_runs(database, runs)
    by_id = {run.id: run for run in admitted}
    if case_text is not None:
        case = find_case(database, case_text)
        cases = {case.id: case}
    else:
        ids = [row[0] for row in database.query("SELECT DISTINCT case_id FROM failures")]
        cases = _cases(database, ids)
    stack_runs = by_stack(admitted)
    position = {run.id: index for members in stack_runs.values() for index, run in enumerate(members)}
    current = {stack: current_suites(members) for stack, members in stack_runs.items()}
    found = []
    for case_id, rows in _histories(database, cases, by_id).items():
        per_stack: dict[str, list[CaseRowInfo]] = defaultdict(list)
        for row in rows:
            per_stack[row.run.stack].append(row)
        for stack, stack_rows in per_stack.items():
            judged = [row for row in stack_rows if row.passed is not None]
            if not judged:
                continue
            failed_last = judged[-1].passed == 0
            if not failed_last and case_text is None:
                continue
            start = len(judged)
            while start > 0 and judged[start - 1].passed == 0:
                start -= 1
            last_pass = judged[start - 1].run if start > 0 else None
            first = judged[start].run if failed_last else None
            between = position[first.id] - position[last_pass.id] - 1 if first and last_pass else 0
            left = left_suite(stack_rows, current[stack])
            found.append(FirstFailure(
                cases[case_id], stack, failed_last and left is None, stack_rows[-1].status, stack_rows[-1].run,
                last_pass if failed_last else judged[-1].run, first, len(judged) - start, between,
                flips_of([row.passed for row in judged if row.passed is not None]), len(judged),
                first is not None and last_pass is not None and suite_of(first) != suite_of(last_pass), left))
    found.sort(key=lambda f: (not f.failing, -(f.first_failure.started_us if f.first_failure else 0), f.stack,
                              f.case.name))
    return found


# -- flaky ----------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Flake:
    case: CaseInfo
    stack: str
    #: Runs in the stack's window, and those of them that judged the case.
    window: int
    runs: int
    #: Changes between pass and fail from one run to the next of the same inputs, and how many such pairs there were.
    flips: int
    pairs: int
    passes: int
    failures: int
    #: Runs in which the case's retries disagreed (status FLAKE).
    flake_statuses: int
    #: One letter per run of the window, oldest first: P passed, F failed, - not judged (skipped, not run, not
    #: required), . not in the run (not in its suite or shard), lower case: FLAKE; `|` where the inputs change (the
    #: suite's fingerprint among them: a flip across it is not counted).
    history: str
    first_run: RunInfo
    last_run: RunInfo
    last_failure: RunInfo | None

    @property
    def flip_rate(self) -> float:
        return self.flips / self.pairs if self.pairs else 0.0


@dataclass(frozen=True)
class FlakyResult:
    flakes: tuple[Flake, ...]
    #: Stacks looked at, and the runs in their windows.
    stacks: int
    runs: int
    last: int
    same: tuple[str, ...] = ()


def flaky(database: Database, runs: RunFilter | None = None, last: int = DEFAULT_LAST, same: Sequence[str] = (),
          min_flips: int = 2) -> FlakyResult:
    """Cases whose status flips between runs of one stack with the same inputs (configuration, and the `same`
    metadata keys) at least `min_flips` times over the last `last` runs of the stack, or whose retries disagreed
    in a run (FLAKE). A flip counts between a run and the next one with the same inputs that holds the case: across
    a driver update it is the update's doing, across a suite change (the fingerprint is in the configuration) the
    case may have changed. One flip is a regression or a fix of the code under test (the document does not always
    know its build: `first-failure` shows it); two or more, back and forth, are noise. Highest flip rate first."""
    windows = {stack: members[-last:] for stack, members in by_stack(load_runs(database, runs)).items()}
    by_id = {run.id: run for members in windows.values() for run in members}
    candidates: dict[int, set[str]] = defaultdict(set)
    for chunk in chunks(sorted(by_id)):
        for run_id, case_id in database.query(
                f"SELECT run_id, case_id FROM failures WHERE run_id IN {placeholders(len(chunk))}", chunk):
            candidates[int(case_id)].add(by_id[int(run_id)].stack)
    cases = _cases(database, candidates)

    def inputs(run: RunInfo) -> tuple[str | None, ...]:
        return (run.configuration, *(run.meta.get(key) for key in same))

    flakes = []
    for case_id, rows in _histories(database, candidates, by_id).items():
        mine = {row.run.id: row for row in rows}
        for stack in candidates[case_id]:
            members = windows[stack]
            sequences: dict[tuple[str | None, ...], list[int]] = defaultdict(list)
            for run in members:
                row = mine.get(run.id)
                if row is not None and row.passed is not None:
                    sequences[inputs(run)].append(row.passed)
            flips = sum(flips_of(sequence) for sequence in sequences.values())
            flake_statuses = sum(1 for run in members if run.id in mine and mine[run.id].status == "FLAKE")
            if flips < min_flips and not flake_statuses:
                continue
            verdicts = [verdict for sequence in sequences.values() for verdict in sequence]
            failures = [run for run in members if run.id in mine and mine[run.id].passed == 0]
            history = "".join(("|" if index and inputs(run) != inputs(members[index - 1]) else "")
                              + _letter(mine.get(run.id)) for index, run in enumerate(members))
            flakes.append(Flake(
                cases[case_id], stack, len(members), len(verdicts), flips,
                sum(max(len(sequence) - 1, 0) for sequence in sequences.values()), verdicts.count(1),
                verdicts.count(0), flake_statuses, history, members[0], members[-1],
                failures[-1] if failures else None))
    flakes.sort(key=lambda f: (-f.flip_rate, -f.flips, -f.flake_statuses, f.stack, f.case.name))
    return FlakyResult(tuple(flakes), len(windows), len(by_id), last, tuple(same))


def _letter(row: CaseRowInfo | None) -> str:
    if row is None:
        return "."
    if row.passed is None:
        return "-"
    letter = "P" if row.passed else "F"
    return letter.lower() if row.status == "FLAKE" else letter


# -- drift ----------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Drift:
    case: CaseInfo
    stack: str
    #: Runs in the window that compared the case (closeness known and finite).
    runs: int
    first: float
    last: float
    highest: float
    #: Least-squares slope of closeness per run, and the rise it makes over the runs that compared the case.
    slope: float
    rise: float
    #: Runs until the fitted line reaches 1 (the allowance), at this slope; None where it is there already.
    runs_to_limit: float | None
    #: Closeness in each run of the window, oldest first (None: not compared there, or a run of another suite).
    values: tuple[float | None, ...]
    first_run: RunInfo
    last_run: RunInfo
    #: The suite fingerprint of the runs the line goes through (closeness of another suite's version of the case
    #: may be under another allowance or input: it is not on this line).
    suite: str | None = None


def drift(database: Database, runs: RunFilter | None = None, last: int = DEFAULT_LAST,
          min_rise: float = 0.1) -> list[Drift]:
    """Cases whose closeness (error over allowance: 1 is the limit) rises over the last `last` runs of a stack while
    they pass: a least-squares line through the runs of one suite that matched them rises by `min_rise` or more
    (failing runs are first-failure's). Nearest to the limit first."""
    found = []
    for stack, members in by_stack(load_runs(database, runs)).items():
        window = members[-last:]
        suites: dict[str | None, list[RunInfo]] = defaultdict(list)
        for run in window:
            suites[suite_of(run)].append(run)
        for suite, suite_runs in suites.items():
            found += _drift_within(database, stack, window, suite, suite_runs, min_rise)
    found.sort(key=lambda d: (-d.last, -d.rise, d.stack, d.case.name))
    return found


def _drift_within(database: Database, stack: str, window: list[RunInfo], suite: str | None,
                  suite_runs: list[RunInfo], min_rise: float) -> list[Drift]:
    """The drifting cases of one stack's window, through its runs of one suite (positions and slope count those
    runs)."""
    if len(suite_runs) < 3:
        return []
    ids = [run.id for run in suite_runs]
    rows = database.query(
        "WITH w AS (SELECT id AS run_id, ROW_NUMBER() OVER (ORDER BY started_us, id) AS pos FROM runs"
        f" WHERE id IN {placeholders(len(ids))})"
        " SELECT c.case_id, COUNT(*), SUM(w.pos), SUM(w.pos * w.pos), SUM(c.closeness), SUM(w.pos * c.closeness),"
        " MIN(w.pos), MAX(w.pos) FROM w JOIN case_results c ON c.run_id = w.run_id"
        " WHERE c.passed = 1 AND c.closeness IS NOT NULL AND c.closeness < ? GROUP BY c.case_id"
        " HAVING COUNT(*) >= 3 AND MAX(c.closeness) > MIN(c.closeness)", (*ids, FINITE))
    rising: dict[int, tuple[float, float, float]] = {}
    for case_id, count, sx, sxx, sy, sxy, low, high in rows:
        n, sx, sxx, sy, sxy = int(count), float(sx), float(sxx), float(sy), float(sxy)
        denominator = n * sxx - sx * sx
        if denominator <= 0:
            continue
        slope = (n * sxy - sx * sy) / denominator
        rise = slope * (int(high) - int(low))
        if slope > 0 and rise >= min_rise:
            rising[int(case_id)] = (slope, rise, (sy - slope * sx) / n + slope * int(high))
    if not rising:
        return []
    cases = _cases(database, rising)
    found = []
    for case_id, rows_of_case in _histories(database, rising, {run.id: run for run in suite_runs}).items():
        values = {row.run.id: row.closeness for row in rows_of_case if row.passed == 1}
        series = tuple(value if value is not None and value < FINITE else None
                       for value in (values.get(run.id) for run in window))
        known = [value for value in series if value is not None]
        slope, rise, fitted_last = rising[case_id]
        found.append(Drift(cases[case_id], stack, len(known), known[0], known[-1], max(known), slope, rise,
                           (1 - fitted_last) / slope if fitted_last < 1 else None, series, window[0], window[-1],
                           suite))
    return found


# -- compare --------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ValueSummary:
    value: str
    runs: int
    stacks: tuple[str, ...]
    passed: int
    failed: int
    #: Behaviour -> the readings its runs gave (one, where they agree).
    fingerprint: dict[str, tuple[str, ...]]

    @property
    def pass_rate(self) -> float | None:
        judged = self.passed + self.failed
        return self.passed / judged if judged else None


@dataclass(frozen=True)
class CaseChange:
    case: CaseInfo
    stack: str
    #: Value -> what the case came to in that value's latest run on the stack, for the values whose run holds the
    #: case (a run that does not hold it is no outcome: its suite had no such case).
    outcomes: dict[str, str]
    #: The runs compared come from different suites (suite fingerprints): the case may differ in content under its
    #: id, and the change may be the suite's, not the value's.
    suites_differ: bool = False


@dataclass(frozen=True)
class StackComparison:
    """One stack's part of a comparison: the runs whose cases were compared, and the cases not all of them hold."""

    stack: str
    #: Value -> its latest run on the stack.
    runs: dict[str, RunInfo]
    #: Cases all those runs hold; those two or more of them hold, not all (compared between those); those one holds
    #: (not compared: nothing to compare with).
    held_by_all: int
    held_by_some: int
    held_by_one: int
    #: Different suite fingerprints among the runs.
    suites: int


@dataclass(frozen=True)
class Comparison:
    key: str
    values: tuple[ValueSummary, ...]
    #: Cases whose outcome differs between the runs of different values on a stack that hold them.
    changes: tuple[CaseChange, ...]
    #: Runs the filter admitted that have no such key.
    runs_without: int
    #: The stacks that ran more than one value.
    stacks: tuple[StackComparison, ...] = ()


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """1.9.0 before 1.15.4; numbers as numbers."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", text) if part)


def compare(database: Database, key: str, runs: RunFilter | None = None,
            values: Sequence[str] | None = None) -> Comparison:
    """Pass rate and behaviour fingerprint per value of a metadata key (driver_version, directml_version, branch,
    ...), and the cases whose outcome differs between values on one stack (each value's latest run there), compared
    between the runs that hold them: a case in one value's run only is a change of the suite, not of the value."""
    admitted = load_runs(database, runs)
    with_key = [run for run in admitted if key in run.meta and (values is None or run.meta[key] in values)]
    groups: dict[str, list[RunInfo]] = defaultdict(list)
    for run in with_key:
        groups[run.meta[key]].append(run)
    summaries = []
    for value in sorted(groups, key=natural_key):
        members = groups[value]
        readings: dict[str, set[str]] = defaultdict(set)
        for run in members:
            for behaviour, reading in run.fingerprint.items():
                readings[behaviour].add(reading)
        summaries.append(ValueSummary(value, len(members), tuple(sorted({run.stack for run in members})),
                                      sum(run.passed for run in members), sum(run.failed for run in members),
                                      {b: tuple(sorted(r)) for b, r in sorted(readings.items())}))
    latest: dict[str, dict[str, RunInfo]] = defaultdict(dict)
    for run in with_key:  # in order: the last one seen is the latest
        latest[run.stack][run.meta[key]] = run
    changes, stacks = [], []
    for stack, chosen in sorted(latest.items()):
        if len(chosen) < 2:
            continue
        value_of = {run.id: value for value, run in chosen.items()}
        outcomes: dict[int, dict[str, str]] = defaultdict(dict)
        for chunk in chunks(sorted(value_of)):
            for run_id, case_id, outcome in database.query(
                    f"SELECT run_id, case_id, outcome FROM case_results WHERE run_id IN {placeholders(len(chunk))}",
                    chunk):
                outcomes[int(case_id)][value_of[int(run_id)]] = STATUS_NAMES[int(outcome)]
        held = [len(found) for found in outcomes.values()]
        order = sorted(chosen, key=natural_key)
        stacks.append(StackComparison(stack, {value: chosen[value] for value in order}, held.count(len(chosen)),
                                      sum(1 for count in held if 1 < count < len(chosen)), held.count(1),
                                      len({suite_of(run) for run in chosen.values()})))
        differing = {case_id: found for case_id, found in outcomes.items() if len(set(found.values())) > 1}
        cases = _cases(database, differing)
        changes += [CaseChange(cases[case_id], stack, {value: found[value] for value in order if value in found},
                               len({suite_of(chosen[value]) for value in found}) > 1)
                    for case_id, found in sorted(differing.items(), key=lambda item: cases[item[0]].name)]
    return Comparison(key, tuple(summaries), tuple(changes), len(admitted) - len(with_key), tuple(stacks))


# -- runs and prune -------------------------------------------------------------------------------------------------
def recent_runs(database: Database, runs: RunFilter | None = None, last: int | None = DEFAULT_LAST) -> list[RunInfo]:
    """The last `last` runs the filter admits (all where None), oldest first."""
    admitted = load_runs(database, runs)
    return admitted[-last:] if last else admitted


@dataclass(frozen=True)
class Pruned:
    #: Stack -> runs kept, runs removed.
    stacks: dict[str, tuple[int, int]]
    runs_removed: int
    case_rows_removed: int
    dry_run: bool


def prune(database: Database, keep: int, runs: RunFilter | None = None, dry_run: bool = False) -> Pruned:
    """Keep the last `keep` runs of each stack (of the stacks the filter names); remove the rest, in one
    transaction."""
    stacks, doomed = {}, []
    with database.write():
        for stack, members in by_stack(load_runs(database, RunFilter(runs.stack) if runs else None)).items():
            cut = max(len(members) - keep, 0)
            doomed += members[:cut]
            stacks[stack] = (len(members) - cut, cut)
        if not dry_run:
            ids = [run.id for run in doomed]
            for chunk in chunks(ids):
                for table, column in (("failures", "run_id"), ("case_results", "run_id"), ("run_meta", "run_id"),
                                      ("runs", "id")):
                    database.query(f"DELETE FROM {table} WHERE {column} IN {placeholders(len(chunk))}", chunk)
    return Pruned(stacks, len(doomed), sum(run.cases for run in doomed), dry_run)


# -- the page -------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StackSeries:
    stack: str
    runs: tuple[RunInfo, ...]
    #: Operator -> its pass rate in each run (None: none of its cases judged there).
    operators: dict[str, tuple[float | None, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class HistoryReport:
    database: str
    runs: int
    stacks: tuple[StackSeries, ...]
    flaky: FlakyResult
    first_failures: tuple[FirstFailure, ...]
    drift: tuple[Drift, ...]
    last: int


def history_report(database: Database, runs: RunFilter | None = None, last: int = DEFAULT_LAST) -> HistoryReport:
    """What the page shows: per stack its last runs with the pass rate of each and of each operator, the flaky
    cases, the first failures and the cases drifting towards their allowance."""
    admitted = load_runs(database, runs)
    series = []
    for stack, members in by_stack(admitted).items():
        window = members[-last:]
        counts: dict[str, dict[int, tuple[int, int]]] = defaultdict(dict)
        for chunk in chunks([run.id for run in window]):
            for run_id, op, passed, judged in database.query(
                    "SELECT c.run_id, k.op, SUM(c.passed), COUNT(c.passed) FROM case_results c"
                    f" JOIN cases k ON k.id = c.case_id WHERE c.run_id IN {placeholders(len(chunk))}"
                    " GROUP BY c.run_id, k.op", chunk):
                counts[op][int(run_id)] = (int(passed or 0), int(judged))
        operators = {op: tuple(_rate(found.get(run.id)) for run in window) for op, found in sorted(counts.items())}
        series.append(StackSeries(stack, tuple(window), operators))
    return HistoryReport(database.shown, len(admitted), tuple(series), flaky(database, runs, last),
                         tuple(first_failures(database, runs)), tuple(drift(database, runs, last)), last)


def _rate(counts: tuple[int, int] | None) -> float | None:
    return counts[0] / counts[1] if counts and counts[1] else None


def finite(value: float | None) -> float | None:
    """For JSON: None for what is not a finite number."""
    return value if value is not None and math.isfinite(value) else None
