"""What changed between two runs: status transitions case by case, and how passing cases drifted numerically.

Plain data in (two RunResults), plain data out (a RunDiff); `report/diff.py` renders it. Cases are
compared by what the backend came to (a NOT_REQUIRED, EXPECTED_FAIL or UNEXPECTED_PASS case by its
outcome), so that two runs judged at different levels or with different baselines still compare.

Transitions (piglit's regression/fix, deqp-runner's changed failures):
* regression — matched (PASS, INVALID_OK) before, does not now (FAIL, ERROR, CRASH, TIMEOUT, NOT_SUPPORTED);
  also FLAKE before and failing every run now;
* changed failure — failed before and fails another way now (FAIL→CRASH);
* fix — failed (or was flaky) before, matches now;
* flaky — matched before, FLAKE now (runs disagree; like `run`, not a failure);
* behaviour — matched both times, but another candidate (docs/reference/operators.md) than before;
* new / vanished — in the new run only / in the old run only; not compared — SKIPPED or NOT_RUN on either side.
Regressions and changed failures make `dmlconform diff` exit 1.

A case is compared with the same case on the same execution path (contract §9: its id carries the path,
`suite/case@graph`); a run on other paths than the other's has that path's cases new or vanished, and the diff names
the paths each run asked for and counts the changes per path.

Drift: a case that came to the same status in both runs (PASS→PASS, or FAIL→FAIL) whose max ULP, max
absolute error or closeness (the largest error/allowance ratio: 0 exact, 1 at the limit) moved.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum

from dmlconform.case_result import CaseResult, Status
from dmlconform.compare.tolerance import RuleKind
from dmlconform.run_result import RunResult
from dmlconform.verdicts import by_path, fingerprint, introduced_levels, level_verdicts


class Change(Enum):
    REGRESSION = "regression"
    CHANGED_FAILURE = "changed failure"
    FIX = "fix"
    FLAKY = "flaky"
    BEHAVIOUR = "behaviour"
    NEW = "new"
    VANISHED = "vanished"
    NOT_COMPARED = "not compared"

    @property
    def fails_diff(self) -> bool:
        return self in (Change.REGRESSION, Change.CHANGED_FAILURE)


#: Worst first, for ordering changes and groups.
SEVERITY = (Change.REGRESSION, Change.CHANGED_FAILURE, Change.FLAKY, Change.NOT_COMPARED, Change.VANISHED,
            Change.NEW, Change.BEHAVIOUR, Change.FIX)
_UNKNOWN = (Status.SKIPPED, Status.NOT_RUN)


@dataclass(frozen=True)
class Numbers:
    """How far a case's outputs were from its answer, under its rule."""

    rule: str | None
    max_ulp: int | None
    max_abs_error: float | None
    #: Largest error/allowance ratio; None where unknown (no comparison, or a result written before it).
    closeness: float | None


@dataclass(frozen=True)
class CaseDiff:
    id: str
    op: str
    dtype: str
    level: str
    change: Change
    old_status: str | None
    new_status: str | None
    old_matched: str | None = None
    new_matched: str | None = None
    #: Required at the level the newer run was judged at (or the older, for a vanished case).
    required: bool = True
    message: str = ""
    old: Numbers | None = None
    new: Numbers | None = None
    #: The execution path the case ran on (both runs: the id names it).
    path: str = "operator"


@dataclass(frozen=True)
class Drift:
    id: str
    op: str
    dtype: str
    level: str
    status: str
    old: Numbers
    new: Numbers
    path: str = "operator"

    @property
    def closer(self) -> bool:
        """Nearer its threshold than before (by closeness, else by max ULP)."""
        if self.old.closeness is not None and self.new.closeness is not None:
            return self.new.closeness > self.old.closeness
        return (self.new.max_ulp or 0) > (self.old.max_ulp or 0)

    @property
    def sort_key(self) -> tuple[float, float]:
        new = self.new.closeness if self.new.closeness is not None else -1.0
        old = self.old.closeness if self.old.closeness is not None else -1.0
        return (-new, -(new - old) if math.isfinite(new - old) else -math.inf)


@dataclass(frozen=True)
class FieldChange:
    """A run-level fact that differs: backend version, driver, device, judged level, suite fingerprint, …"""

    name: str
    old: str
    new: str


@dataclass(frozen=True)
class LevelChange:
    level: str
    old_conformant: bool
    new_conformant: bool
    old_matched: int
    old_required: int
    new_matched: int
    new_required: int
    claimed: bool


@dataclass
class Group:
    """The changes and drift of one operator × data type × feature level."""

    op: str
    dtype: str
    level: str
    changes: list[CaseDiff] = field(default_factory=list)
    drift: list[Drift] = field(default_factory=list)

    def count(self, change: Change) -> int:
        return sum(1 for c in self.changes if c.change is change)

    @property
    def sort_key(self) -> tuple[object, ...]:
        # What needs a look first: status changes for the worse, then the case nearest its threshold (one case at
        # 0.9 of its allowance says more than ten at 0.01), then the rest.
        worse = tuple(-self.count(change) for change in SEVERITY[:SEVERITY.index(Change.NEW)])
        closer = -sum(1 for d in self.drift if d.closer)
        nearest = -max((d.new.closeness or 0.0 for d in self.drift), default=0.0)
        rest = tuple(-self.count(change) for change in SEVERITY[SEVERITY.index(Change.NEW):])
        return (*worse, nearest, closer, *rest, self.op, self.dtype, self.level)


@dataclass
class RunDiff:
    old_name: str
    new_name: str
    run_changes: list[FieldChange]
    levels: list[LevelChange]
    changes: list[CaseDiff]
    drift: list[Drift]
    groups: list[Group]
    #: Cases in both runs with the same status and the same numbers.
    unchanged: int
    compared: int
    #: The behaviour fingerprint (docs/reference/operators.md) where the two runs differ: behaviour, old reading,
    #: new reading.
    behaviours: list[FieldChange] = field(default_factory=list)
    #: The execution paths each run asked for or has results on, in the order operator, graph, in-place.
    old_paths: tuple[str, ...] = ("operator",)
    new_paths: tuple[str, ...] = ("operator",)

    @property
    def paths(self) -> tuple[str, ...]:
        """Every path of either run, in the order operator, graph, in-place."""
        return tuple(by_path([], (*self.old_paths, *self.new_paths)))

    @property
    def several_paths(self) -> bool:
        return len(self.paths) > 1

    @property
    def paths_differ(self) -> bool:
        return self.old_paths != self.new_paths

    def path_changes(self) -> dict[str, dict[str, int]]:
        """Per path (every path of either run, even one with nothing changed): each kind of change that happened,
        worst first, and `drifted`/`closer` where cases drifted."""
        counts: dict[str, dict[str, int]] = {path: {} for path in self.paths}
        for change in sorted(self.changes, key=lambda c: SEVERITY.index(c.change)):
            per = counts.setdefault(change.path, {})
            per[change.change.value] = per.get(change.change.value, 0) + 1
        for moved in self.drift:
            per = counts.setdefault(moved.path, {})
            per["drifted"] = per.get("drifted", 0) + 1
            if moved.closer:
                per["closer"] = per.get("closer", 0) + 1
        return counts

    @property
    def regressed(self) -> bool:
        return any(c.change.fails_diff for c in self.changes)

    def count(self, change: Change) -> int:
        return sum(1 for c in self.changes if c.change is change)

    @property
    def closer(self) -> list[Drift]:
        return [d for d in self.drift if d.closer]


def effective_outcome(result: CaseResult) -> Status:
    """What the backend came to: the outcome behind NOT_REQUIRED, the baseline overlay and a waiver; FLAKE stays
    FLAKE."""
    if result.status in (Status.NOT_REQUIRED, Status.EXPECTED_FAIL, Status.UNEXPECTED_PASS, Status.WAIVED) and \
            result.outcome:
        return result.outcome
    return result.status


def numbers(result: CaseResult) -> Numbers:
    rule = str(result.tolerance) if result.tolerance else None
    return Numbers(rule, result.max_ulp, result.max_abs_error, closeness_of(result))


def closeness_of(result: CaseResult) -> float | None:
    """The recorded closeness; for results written before it, what max ULP gives under exact and ulp:N."""
    if result.closeness is not None:
        return result.closeness
    if result.tolerance is None or result.max_ulp is None or not effective_outcome(result).matched:
        return None
    if result.tolerance.kind is RuleKind.ULP and result.tolerance.ulps:
        return result.max_ulp / result.tolerance.ulps
    if result.tolerance.kind is RuleKind.EXACT or result.tolerance.kind is RuleKind.ULP:
        return 0.0  # it matched, so every element was exactly right
    return None


def classify(old: Status, new: Status) -> Change | None:
    """The transition from one outcome to another; None when nothing changed."""
    if old in _UNKNOWN or new in _UNKNOWN:
        return None if old == new else Change.NOT_COMPARED
    if old == new:
        return None
    was_matched, is_matched = old.matched, new.matched
    if is_matched:
        return Change.FIX if not was_matched else None  # PASS <-> INVALID_OK cannot happen to one case
    if new is Status.FLAKE:
        return Change.FLAKY if was_matched else Change.FIX
    if was_matched or old is Status.FLAKE:
        return Change.REGRESSION
    return Change.CHANGED_FAILURE


def diff_runs(old: RunResult, new: RunResult) -> RunDiff:
    before = {r.id: r for r in old.results}
    after = {r.id: r for r in new.results}
    changes: list[CaseDiff] = []
    drift: list[Drift] = []
    unchanged = compared = 0
    for case_id, now in after.items():
        was = before.get(case_id)
        if was is None:
            changes.append(_case_diff(now, Change.NEW, None, now))
            continue
        compared += 1
        old_status, new_status = effective_outcome(was), effective_outcome(now)
        change = classify(old_status, new_status)
        if change is None and new_status.matched and was.matched != now.matched:
            change = Change.BEHAVIOUR
        if change is not None:
            changes.append(_case_diff(now, change, was, now))
            continue
        old_numbers, new_numbers = numbers(was), numbers(now)
        if old_status is new_status and _moved(old_numbers, new_numbers):
            drift.append(Drift(case_id, now.op, now.dtype, now.required_level.label, new_status.value, old_numbers,
                               new_numbers, now.path))
        else:
            unchanged += 1
    for case_id, was in before.items():
        if case_id not in after:
            changes.append(_case_diff(was, Change.VANISHED, was, None))
    changes.sort(key=lambda c: (SEVERITY.index(c.change), c.id))
    drift.sort(key=lambda d: (*d.sort_key, d.id))
    return RunDiff(_run_name(old), _run_name(new), _run_changes(old, new), _level_changes(old, new), changes, drift,
                   _groups(changes, drift), unchanged, compared, _behaviour_changes(old, new), _paths_of(old),
                   _paths_of(new))


def _paths_of(run: RunResult) -> tuple[str, ...]:
    """The paths a run asked for (its settings) and those its results name."""
    return tuple(by_path(run.results, run.paths))


def _case_diff(result: CaseResult, change: Change, was: CaseResult | None, now: CaseResult | None) -> CaseDiff:
    return CaseDiff(
        result.id, result.op, result.dtype, result.required_level.label, change,
        effective_outcome(was).value if was else None, effective_outcome(now).value if now else None,
        was.matched if was else None, now.matched if now else None, result.required,
        (now or was or result).message, numbers(was) if was else None, numbers(now) if now else None, result.path)


def _moved(old: Numbers, new: Numbers) -> bool:
    def same(a: float | None, b: float | None) -> bool:
        return a == b or (a is not None and b is not None and math.isnan(a) and math.isnan(b))

    return not (old.max_ulp == new.max_ulp and same(old.max_abs_error, new.max_abs_error)
                and (old.closeness is None or new.closeness is None or same(old.closeness, new.closeness)))


def _groups(changes: list[CaseDiff], drift: list[Drift]) -> list[Group]:
    groups: dict[tuple[str, str, str], Group] = {}
    for change in changes:
        groups.setdefault((change.op, change.dtype, change.level), Group(change.op, change.dtype, change.level)
                          ).changes.append(change)
    for moved in drift:
        groups.setdefault((moved.op, moved.dtype, moved.level), Group(moved.op, moved.dtype, moved.level)
                          ).drift.append(moved)
    return sorted(groups.values(), key=lambda g: g.sort_key)


def _run_name(run: RunResult) -> str:
    info = run.backend
    driver = info.extra.get("driver_version") or info.extra.get("driver")
    return f"{info.name} {info.version} on {info.device}" + (f", driver {driver}" if driver else "")


def _run_changes(old: RunResult, new: RunResult) -> list[FieldChange]:
    def facts(run: RunResult) -> dict[str, str]:
        info = run.backend
        found = {"backend": info.name, "backend version": info.version, "device": info.device,
                 "claimed feature level": info.feature_level.label, "judged at": run.target_level.label,
                 "tool version": run.tool_version,
                 "suite fingerprint": run.suite.fingerprint[:16] if run.suite else "unknown"}
        found |= {f"backend {key}": str(value) for key, value in sorted(info.extra.items())}
        # The paths asked are the diff's own line (RunDiff.old_paths, new_paths), not a setting's text.
        found |= {f"setting {key}": str(value) for key, value in sorted(run.settings.items()) if key != "paths"}
        return found

    before, after = facts(old), facts(new)
    changes: list[FieldChange] = []
    for name in list(before) + [n for n in after if n not in before]:
        was, now = before.get(name, "—"), after.get(name, "—")
        # A setting the backend also reports (the harness command) is said once.
        if was != now and not any((c.old, c.new) == (was, now) for c in changes):
            changes.append(FieldChange(name, was, now))
    return changes


def _behaviour_changes(old: RunResult, new: RunResult) -> list[FieldChange]:
    """Each undocumented behaviour whose reading differs between the runs (a stack against another, or a driver
    against its last version), as `fingerprint` words it: a candidate, `mixed: …` or `undecided: …`."""
    before, after = fingerprint(old.results), fingerprint(new.results)
    return [FieldChange(name, before.get(name, "—"), after.get(name, "—"))
            for name in sorted(set(before) | set(after)) if before.get(name) != after.get(name)]


def _level_changes(old: RunResult, new: RunResult) -> list[LevelChange]:
    """The verdict at each level where a case of either run becomes required."""
    before = {v.level: v for v in level_verdicts(old.results, old.target_level)}
    shown = set(introduced_levels(old.results)) | set(introduced_levels(new.results))
    levels = []
    for verdict in level_verdicts(new.results, new.target_level):
        was = before[verdict.level]
        if verdict.level not in shown:
            continue
        levels.append(LevelChange(verdict.level.label, was.conformant, verdict.conformant, was.matched, was.required,
                                  verdict.matched, verdict.required, verdict.claimed))
    return levels
