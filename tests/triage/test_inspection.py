"""Looking at a case element by element agrees with the comparator, and its accumulation data add up."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dmlconform.case import Case
from dmlconform.case_result import Status
from dmlconform.runner import KeepOutputs, run_cases
from dmlconform.triage.dml import describe
from dmlconform.triage.inspection import TERMS_SHOWN, inspect_case, summarise
from tests.oracle.conftest import oracle_share
from tests.oracle.drivers import LEGITIMATE, SimulatedDriver

SUMMING = ("MAX_POOLING_GRAD", "RESAMPLE_GRAD1")


@pytest.fixture(scope="module")
def drifted(scanned_cases: list[Case]):
    """The summing cases run by a legitimate driver that accumulates in the data type (passing, yet off), each with
    its result and its inspection: the oracle's share of them (tests/oracle/conftest.py: cases a simulated driver, an
    element at a time in Python, runs in seconds; the rest of the standard tier's took two minutes of CI)."""
    knobs = next(k for k in LEGITIMATE if k.name == "accumulate-in-data-type")
    cases = [c for c in oracle_share(scanned_cases) if c.op.name in SUMMING and not c.expect_invalid]
    results = run_cases(cases, SimulatedDriver(knobs), keep_outputs=KeepOutputs.ALL).results
    return [(case, result, inspect_case(case, result.actual_outputs))
            for case, result in zip(cases, results, strict=True)]


# Both tests read one module fixture, computed once (the module runs on one pytest-xdist worker: --dist loadfile).
@pytest.mark.slow
@pytest.mark.tier_scan
def test_the_worst_element_ratio_is_the_closeness_the_comparator_recorded(drifted) -> None:
    off = 0
    for case, result, inspection in drifted:
        assert result.status is Status.PASS
        assert inspection.status is Status.PASS and inspection.closeness == result.closeness
        top = max((e.ratio for e in inspection.elements), default=0.0)
        assert top == pytest.approx(result.closeness, rel=1e-12, abs=0), case.full_id
        off += bool(inspection.elements)
    assert off >= 5  # the driver's rounding shows somewhere, or this test shows nothing


@pytest.mark.slow
@pytest.mark.tier_scan
def test_terms_add_up_to_the_reference_sum_and_count(drifted) -> None:
    checked = 0
    for case, _, inspection in drifted:
        for element in inspection.elements:
            data = element.accumulated
            assert data is not None
            if data.terms is None:  # a gradient too large to probe says so
                assert any(note.startswith("terms not listed") for note in inspection.notes), case.full_id
                continue
            if data.terms_total <= TERMS_SHOWN:
                assert math.fsum(t.value for t in data.terms) == pytest.approx(data.value, rel=1e-12, abs=1e-300)
                assert math.fsum(abs(t.value) for t in data.terms) <= data.abs_sum * (1 + 1e-12)
                assert data.terms_total <= data.count
                checked += 1
    assert checked >= 3


def test_a_wrong_element_is_listed_first_with_its_bits_and_an_infinite_ratio(bundled: list[Case]) -> None:
    case = next(c for c in bundled if c.full_id == "seed/relu-grad-formula")
    actual = {"OutputGradientTensor": case.expected["OutputGradientTensor"].copy()}
    actual["OutputGradientTensor"].reshape(-1)[1] = 7
    inspection = inspect_case(case, actual)
    assert inspection.status is Status.FAIL and inspection.differing == 1
    [element] = inspection.elements
    assert element.ratio == math.inf and "(0x40e00000)" in element.actual and element.index == (0, 1)
    assert inspection.histogram[-1].count == 1 and inspection.histogram[0].low == 0


def test_without_outputs_the_case_and_its_default_rule_are_still_described(bundled: list[Case]) -> None:
    case = next(c for c in bundled if c.op.name == "RESAMPLE_GRAD1" and c.expected is not None)
    inspection = inspect_case(case, None)
    assert inspection.status is None and not inspection.elements and inspection.rule_lines[0].startswith("bound")
    lines = describe(case)
    assert lines[0] == "DML_OPERATOR_RESAMPLE_GRAD1 with DML_RESAMPLE_GRAD1_OPERATOR_DESC {"
    assert any("InterpolationMode = DML_INTERPOLATION_MODE_" in line for line in lines)


def test_tensor_summaries_count_special_values() -> None:
    values = np.array([np.nan, np.inf, -0.0, 1e-40, 2.0], dtype=np.float32)
    summary = summarise("actual", "OutputGradientTensor", values)
    assert (summary.nans, summary.infinities, summary.subnormals, summary.zeros) == (1, 1, 1, 1)
    assert summary.maximum == "2" and summary.elements == 5
