"""The issue's own trials: the seed examples with one wrong element must FAIL on every path."""

from __future__ import annotations

import numpy as np
import pytest

from dmlconform.backends.base import BackendInfo, Outcome
from dmlconform.case import Case
from dmlconform.case_result import Status
from dmlconform.feature_levels import HIGHEST
from dmlconform.runner import run_case
from tests.oracle.conftest import REPO


class FixedOutputs:
    """A backend that answers with given arrays, to put one exact wrong value through the runner."""

    name = "fixed"

    def __init__(self, output: np.ndarray) -> None:
        self.output = output

    def info(self) -> BackendInfo:
        return BackendInfo(self.name, "test", "none", HIGHEST)

    def run(self, case: Case) -> Outcome:
        return Outcome.ran({"OutputGradientTensor": self.output})

    def close(self) -> None:
        pass


@pytest.fixture(scope="module")
def seed() -> dict[str, Case]:
    from dmlconform.suite.loader import load_paths

    return {case.id: case for case in load_paths([REPO / "test_vectors" / "seed" / "seed_examples.yaml"])}


def _status(case: Case, output: np.ndarray) -> Status:
    return run_case(case, FixedOutputs(output), HIGHEST).status


def _first_answer(case: Case) -> np.ndarray:
    return next(iter(case.answers().values()))["OutputGradientTensor"].copy()


def test_max_pooling_seed_with_one_copied_gradient_one_ulp_off_fails(seed):
    case = seed["max-pooling-grad-2x2"]
    good = _first_answer(case)
    assert _status(case, good) is Status.PASS
    for index in [(0, 0, 2, 1), (0, 0, 2, 2)]:  # 4 and 5: single copies (index 4 sums 1 + 2)
        for direction in (np.inf, -np.inf):
            bad = good.copy()
            bad[index] = np.nextafter(bad[index], np.float32(direction))
            assert _status(case, bad) is Status.FAIL, (index, direction)


def test_max_pooling_seed_sum_of_two_may_round_once_but_no_further(seed):
    # Index 4 receives 1 + 2: n = 2 unit-weight terms, K = 1, M = 3, so the allowance is
    # γ_1·3 + ½ulp(3) = 1.8e-7 + 1.2e-7 = 3.0e-7: one ULP of 3 (2.4e-7) is a legitimate rounding, two are not.
    case = seed["max-pooling-grad-2x2"]
    good = _first_answer(case)
    one_off, two_off = good.copy(), good.copy()
    one_off[0, 0, 1, 1] = np.nextafter(np.float32(3), np.float32(4))
    two_off[0, 0, 1, 1] = np.nextafter(one_off[0, 0, 1, 1], np.float32(4))
    assert _status(case, one_off) is Status.PASS
    assert _status(case, two_off) is Status.FAIL


def test_resample_seed_with_a_denormal_where_nothing_lands_fails(seed):
    case = seed["resample-grad1-nearest"]
    good = _first_answer(case)
    assert _status(case, good) is Status.PASS
    for index in [(1, 0), (1, 1)]:
        bad = good.copy()
        bad[index] = np.float32(1.4e-45)
        assert _status(case, bad) is Status.FAIL, index
        bad[index] = np.float32(-1.4e-45)
        assert _status(case, bad) is Status.FAIL, index
    signed = good.copy()
    signed[1, 0] = np.float32(-0.0)
    assert _status(case, signed) is Status.PASS  # ±0 where the pages say 0
