"""Feature-level verdicts: a backend is conformant at L when every case required at or below L matched."""

from __future__ import annotations

from dataclasses import dataclass

from dmlconform.case_result import CaseResult, Status
from dmlconform.feature_levels import FeatureLevel, training_operators_at
from dmlconform.surface.paths import PATH_NAMES


@dataclass(frozen=True)
class LevelVerdict:
    level: FeatureLevel
    required: int
    matched: int
    claimed: bool  # at or below the level the run targets
    #: Required cases that did not match but are listed in the baseline (EXPECTED_FAIL): still not matches.
    known_failures: int = 0
    #: Required cases that did not match but are covered by a certification waiver (WAIVED): not matches either.
    waived: int = 0
    #: Required cases that did not match because of a known issue of the DirectML release (EXPECTED_FAIL, or WAIVED
    #: in a certification): not matches, and not the device's.
    known_issues: int = 0
    #: The operators whose cases this verdict counted (required at or below the level), in name order.
    operators: tuple[str, ...] = ()

    @property
    def untested(self) -> tuple[str, ...]:
        """DirectML's training operators a device at this level supports and no counted case exercised: the verdict
        says nothing about them (dmlconform has no suite for them yet, or the run's selection left them out)."""
        return tuple(name for name in training_operators_at(self.level) if name not in self.operators)

    @property
    def only_known_issues(self) -> bool:
        """Not conformant, but only because of the DirectML release's own known issues: the device is fine."""
        return not self.conformant and self.failing == self.known_issues

    @property
    def failing(self) -> int:
        return self.required - self.matched

    @property
    def conformant(self) -> bool:
        return self.failing == 0


def coverage_line(verdict: LevelVerdict) -> str:
    """Which of DirectML's training operators the verdict at its level speaks for, and which it does not."""
    supported = training_operators_at(verdict.level)
    covered = [name for name in supported if name in verdict.operators]
    line = (f"  the verdict at {verdict.level} covers {len(covered)} of the {len(supported)} training operators "
            f"DirectML {verdict.level} supports")
    if covered:
        line += f": {', '.join(covered)}"
    if verdict.untested:
        line += f"; not tested: {', '.join(verdict.untested)}"
    return line


def effective_status(result: CaseResult) -> Status:
    """What the case came to, whether or not it was required at the run's level and whatever the CI overlay
    (EXPECTED_FAIL, UNEXPECTED_PASS, FLAKE) or a certification waiver (WAIVED) made of it."""
    return result.outcome if result.outcome is not None else result.status


def level_verdicts(results: list[CaseResult], target: FeatureLevel) -> list[LevelVerdict]:
    """Per level, the cases required at or below it: tallied once per case's own level, then summed up the
    levels in order."""
    tallies: dict[FeatureLevel, list[int]] = {}
    operators: dict[FeatureLevel, set[str]] = {}
    for r in results:
        operators.setdefault(r.required_level, set()).add(r.op)
        tally = tallies.setdefault(r.required_level, [0, 0, 0, 0, 0])
        tally[0] += 1
        # A known failure is known, not conformant: it never counts as a match; nor does a waived one.
        tally[1] += effective_status(r).matched
        known_issue = hit_known_issue(r)
        tally[2] += r.status is Status.EXPECTED_FAIL and not known_issue
        tally[3] += r.status is Status.WAIVED
        tally[4] += known_issue
    verdicts, sums, seen = [], [0, 0, 0, 0, 0], set()
    for level in sorted(FeatureLevel, key=lambda level: level.value):
        sums = [total + own for total, own in zip(sums, tallies.get(level, (0, 0, 0, 0, 0)), strict=True)]
        seen |= operators.get(level, set())
        required, matched, known, waived, issues = sums
        verdicts.append(LevelVerdict(level, required, matched, level <= target, known, waived, issues,
                                     tuple(sorted(seen))))
    return verdicts


def by_path(results: list[CaseResult], asked: tuple[str, ...] = ()) -> dict[str, list[CaseResult]]:
    """The results of each execution path (contract §9), in the order operator, graph, in-place: every path asked
    (`asked`, even one no case applied to) and every path a result names."""
    named = set(asked) | {r.path for r in results}
    groups: dict[str, list[CaseResult]] = {name: [] for name in PATH_NAMES if name in named}
    for result in results:
        groups.setdefault(result.path, []).append(result)
    return groups


def path_verdicts(results: list[CaseResult], target: FeatureLevel,
                  asked: tuple[str, ...] = ()) -> dict[str, list[LevelVerdict]]:
    """The feature-level verdicts of each path's cases on their own: a device may be conformant on the operator path
    and not on the graph path."""
    return {name: level_verdicts(group, target) for name, group in by_path(results, asked).items()}


def target_verdict(verdicts: list[LevelVerdict], target: FeatureLevel) -> LevelVerdict | None:
    """The verdict at the run's target level."""
    return next((v for v in verdicts if v.level == target), None)


def hit_known_issue(result: CaseResult) -> bool:
    """The case failed as a known issue of the DirectML release says: EXPECTED_FAIL, or WAIVED in a certification."""
    return result.known_issue is not None and result.status in (Status.EXPECTED_FAIL, Status.WAIVED)


def known_issue_cases(results: list[CaseResult]) -> tuple[dict[str, list[CaseResult]], list[CaseResult]]:
    """The cases that hit each known issue (by issue id, in the order issues are first hit), and the cases of known
    issues that did not reproduce (UNEXPECTED_PASS)."""
    hits: dict[str, list[CaseResult]] = {}
    for result in results:
        if hit_known_issue(result) and result.known_issue is not None:
            hits.setdefault(result.known_issue.id, []).append(result)
    passes = [r for r in results if r.known_issue is not None and r.status is Status.UNEXPECTED_PASS]
    return hits, passes


def introduced_levels(results: list[CaseResult]) -> list[FeatureLevel]:
    """The levels at which at least one case becomes required, in order."""
    return sorted({r.required_level for r in results}, key=lambda level: level.value)


#: AveragePoolingGrad's readings of a window's divisor (dmlconform/ops/average_pooling_grad.py: its variants).
AVERAGE_POOLING_READINGS = ("clipped-to-padding", "full-window", "in-bounds-overhang", "end-padding-as-start")

#: A behaviour whose cases may list, beside their own candidates, the readings of another behaviour they also probe:
#: a MaxPoolingGrad case whose gradient is not the pooled size and whose X holds NaN is refused (DirectML) or computed,
#: and then its answer is one of MaxPoolingGrad's NaN readings. Such a case reads `computed` for its own behaviour and
#: the NaN reading for maxpool-nan-input, never a NaN reading for the gradient's size.
NESTED_BEHAVIOURS: dict[str, tuple[str, str, frozenset[str]]] = {
    "maxpool-gradient-not-pooled-size": ("computed", "maxpool-nan-input",
                                         frozenset({"nan-ignored", "nan-sticks", "nan-wins", "nan-wins-last"})),
    # AveragePoolingGrad: a gradient of another size, or a window larger than the padded input, is refused or
    # computed, and computed its divisors follow one of the readings of OC-AP1 and OC-AP3 (avgpool-divisor).
    **{behaviour: ("computed", "avgpool-divisor", frozenset(AVERAGE_POOLING_READINGS)) for behaviour in
       ("avgpool-gradient-not-pooled-size", "avgpool-window-beyond-padded-input")},
}


def behaviour_readings(behaviour: str, candidate: str) -> dict[str, str]:
    """What a case of `behaviour` that matched `candidate` says, per behaviour: {behaviour: candidate}, or for a
    candidate of a nested behaviour (NESTED_BEHAVIOURS) the reading of each of the two."""
    nested = NESTED_BEHAVIOURS.get(behaviour)
    if nested is not None and candidate in nested[2]:
        return {behaviour: nested[0], nested[1]: candidate}
    return {behaviour: candidate}


def fingerprint(results: list[CaseResult]) -> dict[str, str]:
    """Per undocumented behaviour, the candidate(s) consistent with every case that probes it.

    Cases of one behaviour can disagree legitimately (D3D flushes fp32 denormals in arithmetic but not in
    data movement, so a select and a sum may differ): then each candidate is listed with its case count. A case
    that probes two behaviours (NESTED_BEHAVIOURS) counts for each with its reading of that behaviour."""
    consistent: dict[str, set[str] | None] = {}
    tallies: dict[str, dict[str, int]] = {}
    for r in results:
        if not r.behaviour:
            continue
        matched: dict[str, set[str]] = {r.behaviour: set()}
        for candidate in r.matched_all:
            for name, reading in behaviour_readings(r.behaviour, candidate).items():
                matched.setdefault(name, set()).add(reading)
        labels = behaviour_readings(r.behaviour, r.matched) if r.matched else \
            {r.behaviour: f"none ({effective_status(r).value})"}
        for name, readings in matched.items():
            seen = consistent.get(name)
            consistent[name] = readings if seen is None else seen & readings
        for name, label in labels.items():
            tally = tallies.setdefault(name, {})
            tally[label] = tally.get(label, 0) + 1
    verdicts = {}
    for name, names in consistent.items():
        if names and len(names) == 1:
            verdicts[name] = next(iter(names))
        elif names:
            verdicts[name] = "undecided: " + " or ".join(sorted(names))
        elif len(tallies[name]) == 1:  # every case of it failed the same way: nothing followed, nothing mixed
            verdicts[name] = next(iter(tallies[name]))
        else:
            verdicts[name] = "mixed: " + ", ".join(f"{label} ×{count}" for label, count in
                                                   sorted(tallies[name].items()))
    return verdicts
