"""Feature-level verdicts (dmlconform/verdicts.py) against their definition, case by case."""

from __future__ import annotations

import random

import pytest

from dmlconform.case_result import CaseResult, Status
from dmlconform.feature_levels import TRAINING_OPERATORS, FeatureLevel
from dmlconform.ops import OPERATORS
from dmlconform.verdicts import LevelVerdict, coverage_line, effective_status, level_verdicts, target_verdict


def by_definition(results: list[CaseResult], target: FeatureLevel) -> list[LevelVerdict]:
    """Per level, the cases required at or below it, counted one level at a time."""
    return [LevelVerdict(level, sum(1 for r in results if r.required_level <= level),
                         sum(1 for r in results if r.required_level <= level and effective_status(r).matched),
                         level <= target,
                         sum(1 for r in results if r.required_level <= level and r.status is Status.EXPECTED_FAIL),
                         sum(1 for r in results if r.required_level <= level and r.status is Status.WAIVED),
                         operators=tuple(sorted({r.op for r in results if r.required_level <= level})))
            for level in FeatureLevel]


def random_results(seed: int) -> list[CaseResult]:
    rng = random.Random(seed)
    levels = rng.sample(list(FeatureLevel), k=rng.randint(1, 5))
    results = []
    for i in range(rng.randint(0, 60)):
        status = rng.choice(list(Status))
        outcome = rng.choice([None, None, Status.PASS, Status.FAIL]) if status is Status.NOT_REQUIRED else None
        op = rng.choice(["ACTIVATION_RELU_GRAD", "SLICE_GRAD", "RESAMPLE_GRAD1"])
        results.append(CaseResult(f"case{i}", op, "FLOAT32", 4, rng.choice(levels), status,
                                  outcome=outcome))
    return results


@pytest.mark.parametrize("seed", range(40))
def test_level_verdicts_count_every_case_required_at_or_below_each_level(seed: int) -> None:
    results = random_results(seed)
    target = random.Random(seed).choice(list(FeatureLevel))
    assert level_verdicts(results, target) == by_definition(results, target)


def test_a_failure_at_a_low_level_fails_every_level_above_it() -> None:
    results = [CaseResult("a", "RELU_GRAD", "FLOAT32", 4, FeatureLevel.L2_0, Status.FAIL),
               CaseResult("b", "CLIP_GRAD1", "FLOAT32", 4, FeatureLevel.L4_0, Status.PASS),
               CaseResult("c", "CLIP_GRAD1", "FLOAT32", 4, FeatureLevel.L4_0, Status.EXPECTED_FAIL)]
    verdicts = {v.level: v for v in level_verdicts(results, FeatureLevel.L4_0)}
    assert verdicts[FeatureLevel.L1_0].conformant and verdicts[FeatureLevel.L1_0].required == 0
    assert (verdicts[FeatureLevel.L2_0].required, verdicts[FeatureLevel.L2_0].failing) == (1, 1)
    assert (verdicts[FeatureLevel.L4_0].required, verdicts[FeatureLevel.L4_0].matched,
            verdicts[FeatureLevel.L4_0].known_failures) == (3, 1, 1)
    assert not any(v.conformant for level, v in verdicts.items() if level.value >= FeatureLevel.L2_0.value)
    assert verdicts[FeatureLevel.L4_0].claimed and not verdicts[FeatureLevel.L4_1].claimed


def test_the_comparison_with_the_definition_can_fail() -> None:
    """A plausible bug, counting each level's own cases only, differs from the definition."""
    results = [*random_results(3), CaseResult("x", "RELU_GRAD", "FLOAT32", 4, FeatureLevel.L1_0, Status.PASS)]
    own_level_only = [LevelVerdict(v.level, sum(1 for r in results if r.required_level is v.level), v.matched,
                                   v.claimed, v.known_failures, v.waived) for v in level_verdicts(results, FeatureLevel.L6_4)]
    assert own_level_only != by_definition(results, FeatureLevel.L6_4)


def _behaviour_case(number: int, behaviour: str, *matched: str, status: Status = Status.PASS) -> CaseResult:
    return CaseResult(f"c{number}", "MAX_POOLING_GRAD", "FLOAT32", 4, FeatureLevel.parse("3_0"), status,
                      matched=matched[0] if matched else None, matched_all=matched, behaviour=behaviour)


def test_a_nan_reading_of_a_not_pooled_size_case_is_filed_under_the_nan_behaviour() -> None:
    """The reference computes every not-pooled-size case; two of them hold NaN and match `nan-ignored`: that is a
    reading of maxpool-nan-input, and `computed` for the gradient's size (it read `computed ×81, nan-ignored ×2`)."""
    from dmlconform.verdicts import fingerprint

    size, nan = "maxpool-gradient-not-pooled-size", "maxpool-nan-input"
    results = [_behaviour_case(n, size, "computed") for n in range(81)]
    results += [_behaviour_case(81, size, "nan-ignored"), _behaviour_case(82, size, "nan-ignored", "nan-sticks")]
    results += [_behaviour_case(83, nan, "nan-ignored")]
    assert fingerprint(results) == {size: "computed", nan: "nan-ignored"}
    # DirectML refuses them all: the NaN reading is then not known from these cases.
    refused = [_behaviour_case(n, size, "refused") for n in range(3)]
    assert fingerprint([*refused, _behaviour_case(9, nan, "nan-ignored")]) == {size: "refused", nan: "nan-ignored"}
    assert fingerprint([*refused, _behaviour_case(8, size, "nan-ignored")]) == {size: "mixed: computed ×1, refused ×3",
                                                                               nan: "nan-ignored"}
    failed = _behaviour_case(7, size, status=Status.FAIL)
    assert fingerprint([failed]) == {size: "none (FAIL)"}


def test_a_verdict_names_the_training_operators_its_level_supports_and_the_run_did_not_test() -> None:
    """A run of ReluGrad cases alone says 'conformant at 3_0' about ReluGrad only: the verdict names the other
    operators 3_0 requires (AveragePoolingGrad, ..., Adam) as not tested, and at 5_1 ResampleGrad1 too."""
    results = [CaseResult(f"relu{i}", "ACTIVATION_RELU_GRAD", "FLOAT32", 4, FeatureLevel.L3_0, Status.PASS)
               for i in range(3)]
    verdicts = {v.level: v for v in level_verdicts(results, FeatureLevel.L5_1)}
    assert verdicts[FeatureLevel.L3_0].conformant
    assert verdicts[FeatureLevel.L3_0].operators == ("ACTIVATION_RELU_GRAD",)
    assert verdicts[FeatureLevel.L3_0].untested == ("AVERAGE_POOLING_GRAD", "MAX_POOLING_GRAD", "RESAMPLE_GRAD",
                                                    "SLICE_GRAD", "ADAM_OPTIMIZER")
    assert "RESAMPLE_GRAD1" in verdicts[FeatureLevel.L5_1].untested
    assert "RESAMPLE_GRAD1" not in verdicts[FeatureLevel.L5_0].untested  # introduced at 5_1
    line = coverage_line(verdicts[FeatureLevel.L3_0])
    assert "covers 1 of the 6 training operators DirectML 3_0 supports: ACTIVATION_RELU_GRAD" in line
    assert line.endswith("not tested: AVERAGE_POOLING_GRAD, MAX_POOLING_GRAD, RESAMPLE_GRAD, SLICE_GRAD, ADAM_OPTIMIZER")


def test_a_run_of_every_training_operator_leaves_none_untested() -> None:
    results = [CaseResult(name, name, "FLOAT32", 4, level, Status.PASS) for name, level in TRAINING_OPERATORS.items()]
    verdict = target_verdict(level_verdicts(results, FeatureLevel.L6_4), FeatureLevel.L6_4)
    assert verdict is not None and verdict.untested == ()
    assert "not tested" not in coverage_line(verdict)


@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_every_operator_is_a_training_operator_introduced_where_its_support_table_begins(name: str) -> None:
    assert TRAINING_OPERATORS.get(name) is OPERATORS[name].introduced
