"""Both promises of the oracle, on the bundled cases (the standard tier), through the real runner.

A right answer passes: every legitimate simulated driver gets PASS or INVALID_OK on every case of the operators
its knobs touch (a tier scan: the smoke tier in the test command, the standard tier in .ci/run). A wrong answer
fails: every simulated bug gets FAIL on at least one case; the cases are tried cheapest first and the first FAIL is
enough. Both run on the oracle's share of the tier (tests/oracle/conftest.py:
every case up to ORACLE_COST, which is nearly all of them).
"""

from __future__ import annotations

import numpy as np
import pytest

from dmlconform.backends.base import OutcomeKind
from dmlconform.case import Case
from dmlconform.case_result import Status
from dmlconform.compare.comparator import judge
from dmlconform.dtypes import DataType
from dmlconform.feature_levels import HIGHEST
from dmlconform.ops import find_operator
from dmlconform.ops.base import Description, TensorDesc
from dmlconform.runner import run_case, run_cases
from tests.oracle.conftest import REPO
from tests.oracle.drivers import (
    BUGGY,
    KNOB_OPERATORS,
    LEGITIMATE,
    STRAIGHT,
    UNCATCHABLE,
    Knobs,
    SimulatedDriver,
    operators_affected,
)

ACCEPTED = (Status.PASS, Status.INVALID_OK)

pytestmark = pytest.mark.slow  # about 65 runs of a simulated driver over the standard tier


def in_scope(knobs: Knobs, cases: list[Case]) -> list[Case]:
    return [case for case in cases if case.op.name in operators_affected(knobs)]


def test_the_oracle_runs_on_nearly_every_case_and_every_knob_has_a_scope(bundled_cases, oracle_cases):
    assert len(oracle_cases) >= 0.9 * len(bundled_cases)
    fields = set(Knobs.__dataclass_fields__) - {"name", "summary", "bug"}
    assert fields == set(KNOB_OPERATORS)


# Every legitimate driver over every case is most of this module's time (~45 s of CPU on the standard tier): a tier
# scan, on the smoke tier in the test command and on the standard tier in .ci/run's scan step. A bug needs only one
# failing case, found early, so the test below keeps the standard tier everywhere.
@pytest.mark.tier_scan
@pytest.mark.parametrize("knobs", LEGITIMATE, ids=lambda k: k.name)
def test_every_legitimate_variant_passes_every_bundled_case(knobs, scanned_oracle_cases):
    cases = in_scope(knobs, scanned_oracle_cases)
    assert cases
    results = run_cases(cases, SimulatedDriver(knobs)).results
    rejected = [f"{r.id}: {r.status.value} {r.message}" for r in results if r.status not in ACCEPTED]
    assert not rejected, "\n".join(rejected[:10])


@pytest.mark.parametrize("knobs", BUGGY, ids=lambda k: k.name)
def test_every_bug_fails_at_least_one_bundled_case(knobs, oracle_cases):
    driver = SimulatedDriver(knobs)
    for case in in_scope(knobs, oracle_cases):
        result = run_case(case, driver, HIGHEST)
        assert result.status in (*ACCEPTED, Status.FAIL), f"{case.full_id}: a bug should show as FAIL, not " \
                                                          f"{result.status.value} ({result.message})"
        if result.status is Status.FAIL:
            return
    pytest.fail(f"{knobs.name} survives every bundled case")


def _same_elements(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Bit for bit, except that any NaN equals any NaN and +0 equals -0 (the contract's float equality)."""
    same = a.view(f"u{a.itemsize}") == b.view(f"u{b.itemsize}")
    if a.dtype.kind == "f":
        same |= (np.isnan(a) & np.isnan(b)) | ((a == 0) & (b == 0))
    return same


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.all(_same_elements(a, b)))


def _differs(case: Case, output: np.ndarray) -> bool:
    """Whether `output` differs from every answer of the case."""
    return not any(_same_bits(answer["OutputGradientTensor"], output) for answer in case.answers().values())


def test_the_second_derivation_reproduces_every_golden_bit_for_bit(oracle_cases):
    # The straight driver is the contract written again without dmlconform.ops: exact sums rounded once.
    driver = SimulatedDriver(STRAIGHT)
    for case in oracle_cases:
        outcome = driver.run(case)
        if case.expect_invalid:
            assert outcome.kind is OutcomeKind.REFUSED, case.full_id
            continue
        assert not _differs(case, outcome.outputs["OutputGradientTensor"]), case.full_id


@pytest.mark.parametrize("knobs", [k for k in LEGITIMATE if k is not STRAIGHT], ids=lambda k: k.name)
def test_every_legitimate_variant_uses_its_freedom_somewhere(knobs, oracle_cases):
    """A variant that never leaves the golden's bits (or the default candidate) would prove nothing."""
    driver = SimulatedDriver(knobs)
    for case in in_scope(knobs, oracle_cases):
        if case.expect_invalid:
            continue
        outcome = driver.run(case)
        if outcome.kind is OutcomeKind.REFUSED:  # a refusal candidate (a description DirectML may refuse)
            return
        output = outcome.outputs["OutputGradientTensor"]
        default = next(iter(case.answers().values()))["OutputGradientTensor"]
        if not np.array_equal(output.view(f"u{output.itemsize}"), default.view(f"u{default.itemsize}")):
            return
    pytest.fail(f"{knobs.name} produced the default answer bit for bit on every case")


def _double_rounding_witness() -> Case:
    """A LINEAR fp16 case whose element 0 sums to 1.69482419…, just above the fp16 midpoint 1.6943359375 +
    2^-11 but within half an fp32 ULP of it: rounded once it is 1.694, through fp32 it is 1.695. Found by
    a search; no bundled case happens to contain such a sum."""
    op = find_operator("RESAMPLE_GRAD1")
    params = {"InterpolationMode": "LINEAR", "RoundingDirection": "DECREASING", "Scales": [3.0],
              "InputPixelOffsets": [0.0], "OutputPixelOffsets": [0.0]}
    f16 = DataType.FLOAT16
    desc = Description(op, op.parse_params(params, f16), {"InputGradientTensor": TensorDesc(f16, (3,)),
                                                          "OutputGradientTensor": TensorDesc(f16, (3,))})
    dy = np.array([1.1689453125, 0.374267578125, 0.8291015625], dtype=np.float16)
    golden = op.reference(desc, {"InputGradientTensor": dy}).outputs
    return Case("oracle", "double-rounding-witness", REPO / "tests", desc, {"InputGradientTensor": dy}, golden)


def _uncatchable(name: str) -> Knobs:
    return next(knobs for knobs in UNCATCHABLE if knobs.name == name)


def test_double_rounding_is_a_one_ulp_change_where_the_contract_lets_an_element_round(oracle_cases):
    """fp16 sums rounded twice survive by construction (docs/tolerances.md §6); show that they change only that."""
    driver = SimulatedDriver(_uncatchable("fp16-double-rounding"))
    changed = 0
    for case in [*oracle_cases, _double_rounding_witness()]:
        if case.expect_invalid or case.expected is None:
            continue
        output = driver.run(case).outputs["OutputGradientTensor"]
        expected = case.expected["OutputGradientTensor"]
        reference = case.op.reference(case.description, case.inputs)
        accumulation = reference.accumulation.get("OutputGradientTensor")
        if accumulation is None:
            assert np.array_equal(output.view(np.uint8), expected.view(np.uint8)), case.full_id
            continue
        moved = np.flatnonzero(~_same_elements(expected, output))
        count = np.broadcast_to(accumulation.count, expected.shape).ravel()[moved]
        factors = np.broadcast_to(accumulation.weight_factors, expected.shape).ravel()[moved]
        assert np.all((count >= 2) | (factors >= 1)), case.full_id
        verdict = judge(expected, output, case.dtype, case.tolerance or case.op.default_tolerance(
            case.description, reference), accumulation)
        assert verdict.passed and (verdict.max_ulp or 0) <= 1, case.full_id
        changed += moved.size
    assert changed > 0, "fp16-double-rounding never changed an element: it is not exercised"


def test_coordinates_in_float64_move_only_what_a_d3d_float32_evaluation_may_move(oracle_cases):
    """ResampleGrad1 coordinates computed in float64 differ from every correctly rounded float32 order only at
    coordinates within γ_7·A of an integer, which D3D's 2.5-ULP division may put on either side (docs/tolerances.md
    §5b): every case passes, and the cases it changes have such coordinates."""
    from dmlconform.ops.resample_grad1 import RESAMPLE_GRAD1

    driver, straight = SimulatedDriver(_uncatchable("resample-coordinate-in-float64")), SimulatedDriver(STRAIGHT)
    changed = 0
    for case in in_scope(driver.knobs, oracle_cases):
        result = run_case(case, driver, HIGHEST)
        assert result.status in ACCEPTED, f"{case.full_id}: {result.status.value} {result.message}"
        if case.expect_invalid:
            continue
        ours, theirs = (d.run(case).outputs["OutputGradientTensor"] for d in (driver, straight))
        if not _same_bits(ours, theirs):
            changed += 1
            known = RESAMPLE_GRAD1.uncertain_coordinates(case.description, driver.knobs.resample_offsets)
            assert any(delta.any() for _, delta in known), case.full_id
    assert changed > 0, "float64 coordinates never changed an output: they are not exercised"
