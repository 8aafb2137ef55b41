"""diff_runs over small results: every kind of transition, drift, grouping and the run-level facts."""

from __future__ import annotations

import math

import pytest

from dmlconform.case_result import CaseResult, Status
from dmlconform.compare.tolerance import Tolerance
from dmlconform.feature_levels import FeatureLevel
from dmlconform.results.diff import Change, classify, closeness_of, diff_runs
from tests.results.helpers import result, run

S = Status


@pytest.mark.parametrize(("old", "new", "change"), [
    (S.PASS, S.FAIL, Change.REGRESSION), (S.PASS, S.CRASH, Change.REGRESSION),
    (S.INVALID_OK, S.FAIL, Change.REGRESSION), (S.PASS, S.NOT_SUPPORTED, Change.REGRESSION),
    (S.FLAKE, S.FAIL, Change.REGRESSION),
    (S.FAIL, S.CRASH, Change.CHANGED_FAILURE), (S.TIMEOUT, S.FAIL, Change.CHANGED_FAILURE),
    (S.FAIL, S.PASS, Change.FIX), (S.CRASH, S.INVALID_OK, Change.FIX), (S.FLAKE, S.PASS, Change.FIX),
    (S.FAIL, S.FLAKE, Change.FIX), (S.PASS, S.FLAKE, Change.FLAKY),
    (S.PASS, S.NOT_RUN, Change.NOT_COMPARED), (S.SKIPPED, S.FAIL, Change.NOT_COMPARED),
    (S.PASS, S.PASS, None), (S.FAIL, S.FAIL, None), (S.NOT_RUN, S.NOT_RUN, None),
])
def test_transitions(old: Status, new: Status, change: Change | None) -> None:
    assert classify(old, new) is change


def _measured(case_id: str, status: Status, max_ulp: int, closeness: float | None, rule: str = "bound",
              op: str = "RESAMPLE_GRAD1", dtype: str = "FLOAT16") -> CaseResult:
    made = result(case_id, status)
    made.op, made.dtype, made.required_level = op, dtype, FeatureLevel.L5_1
    made.tolerance, made.max_ulp, made.max_abs_error, made.closeness = Tolerance.parse(rule), max_ulp, 0.001 * max_ulp, \
        closeness
    return made


def test_a_regression_and_a_drift_closer_to_the_threshold_are_both_named_and_fail_the_diff() -> None:
    old = run([result("s/relu", S.PASS), _measured("s/sum", S.PASS, 0, 0.0), _measured("s/steady", S.PASS, 1, 0.1)])
    new = run([result("s/relu", S.FAIL, message="2 element(s) outside exact"), _measured("s/sum", S.PASS, 3, 0.8),
               _measured("s/steady", S.PASS, 1, 0.1)])
    diff = diff_runs(old, new)
    assert diff.regressed and [c.id for c in diff.changes] == ["s/relu"]
    assert diff.changes[0].change is Change.REGRESSION and diff.changes[0].message == "2 element(s) outside exact"
    assert [(d.id, d.old.closeness, d.new.closeness, d.closer) for d in diff.drift] == [("s/sum", 0.0, 0.8, True)]
    assert diff.unchanged == 1 and diff.compared == 3


def test_drift_alone_and_fixes_do_not_fail_the_diff() -> None:
    old = run([_measured("s/a", S.PASS, 4, 0.9), result("s/b", S.FAIL)])
    new = run([_measured("s/a", S.PASS, 1, 0.2), result("s/b", S.PASS)])
    diff = diff_runs(old, new)
    assert not diff.regressed and diff.count(Change.FIX) == 1
    assert not diff.drift[0].closer


def test_new_vanished_behaviour_and_outcomes_behind_the_overlay() -> None:
    literal, swapped = result("s/cand", S.PASS), result("s/cand", S.PASS)
    literal.matched, swapped.matched = "literal", "swapped"
    above = result("s/high", S.NOT_REQUIRED, outcome=S.FAIL, required=False)
    known = result("s/known", S.EXPECTED_FAIL, outcome=S.CRASH)
    old = run([literal, result("s/gone", S.PASS), result("s/high", S.PASS), result("s/known", S.FAIL)])
    new = run([swapped, result("s/added", S.FAIL), above, known])
    kinds = {c.id: c.change for c in diff_runs(old, new).changes}
    assert kinds == {"s/cand": Change.BEHAVIOUR, "s/gone": Change.VANISHED, "s/added": Change.NEW,
                     "s/high": Change.REGRESSION, "s/known": Change.CHANGED_FAILURE}
    high = next(c for c in diff_runs(old, new).changes if c.id == "s/high")
    assert not high.required and (high.old_status, high.new_status) == ("PASS", "FAIL")


def test_changes_are_worst_first_and_groups_put_regressions_first() -> None:
    old = run([result("s/fix", S.FAIL), _measured("s/drift", S.PASS, 0, 0.0, op="MAX_POOLING_GRAD"),
               result("s/reg", S.PASS)])
    new = run([result("s/fix", S.PASS), _measured("s/drift", S.PASS, 2, 0.5, op="MAX_POOLING_GRAD"),
               result("s/reg", S.CRASH)])
    new.results[0].op = "SLICE_GRAD"
    diff = diff_runs(old, new)
    assert [c.change for c in diff.changes] == [Change.REGRESSION, Change.FIX]
    assert diff.groups[0].count(Change.REGRESSION) == 1
    assert [g.op for g in diff.groups][-1] == "SLICE_GRAD"  # a fix alone ranks last


def test_run_level_facts_and_verdicts_that_changed() -> None:
    old, new = run([result("s/a", S.PASS)], version="1.0"), run([result("s/a", S.FAIL)], version="2.0")
    diff = diff_runs(old, new)
    assert [(f.name, f.old, f.new) for f in diff.run_changes] == [("backend version", "1.0", "2.0")]
    level = next(level for level in diff.levels if level.level == "3_0")
    assert (level.old_conformant, level.new_conformant) == (True, False)


def test_closeness_of_results_written_before_it_comes_from_max_ulp_where_the_rule_allows() -> None:
    under_ulp = _measured("s/a", S.PASS, 3, None, rule="ulp:4")
    assert closeness_of(under_ulp) == 0.75
    assert closeness_of(_measured("s/b", S.PASS, 0, None, rule="exact")) == 0.0
    assert closeness_of(_measured("s/c", S.PASS, 2, None, rule="bound")) is None
    assert closeness_of(_measured("s/d", S.FAIL, 9, math.inf, rule="exact")) == math.inf


def test_an_unchanged_run_has_no_changes_and_no_drift() -> None:
    results = [_measured("s/a", S.PASS, 2, 0.4), result("s/b", S.FAIL)]
    diff = diff_runs(run(results), run(results))
    assert not diff.changes and not diff.drift and diff.unchanged == 2 and not diff.regressed


def test_the_behaviour_fingerprints_of_two_stacks_are_compared_reading_by_reading() -> None:
    def probing(case_id: str, behaviour: str, matched: str | None, status: S = S.PASS) -> CaseResult:
        r = result(case_id, status)
        r.behaviour, r.matched, r.matched_all = behaviour, matched, [matched] if matched else []
        return r

    same = [probing("s/offsets", "resample-offset-convention", "swapped")]
    old = run([*same, probing("s/den-x", "fp32-denormal-input", "preserved"),
               probing("s/den-both", "fp32-denormal-input-and-gradient", "preserved")])
    new = run([*same, probing("s/den-x", "fp32-denormal-input", "flushed"),
               probing("s/den-both", "fp32-denormal-input-and-gradient", None, S.FAIL)])
    changes = {c.name: (c.old, c.new) for c in diff_runs(old, new).behaviours}
    assert changes == {"fp32-denormal-input": ("preserved", "flushed"),
                       "fp32-denormal-input-and-gradient": ("preserved", "none (FAIL)")}
    assert diff_runs(old, old).behaviours == []


def test_the_summary_line_counts_in_words() -> None:
    from dmlconform.report.diff import summary_line

    old = run([result("s/a", S.FAIL, 0), result("s/b", S.FAIL, 1), result("s/c", S.PASS, 2), result("s/d", S.PASS, 3)])
    new = run([result("s/a", S.PASS, 0), result("s/b", S.PASS, 1), result("s/e", S.PASS, 4), result("s/f", S.PASS, 5)])
    line = summary_line(diff_runs(old, new))
    assert line.startswith("2 vanished, 2 new, 2 fixes;"), line
    assert summary_line(diff_runs(run([result("s/a", S.FAIL)]), run([result("s/a", S.PASS)]))).startswith("1 fix;")
