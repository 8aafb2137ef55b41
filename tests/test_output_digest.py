"""`output_sha256`: equal for bit-identical outputs however they are laid out, different for any bit that differs
(also where the values compare equal), and set on results by the runner (the first repeat's)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from dmlconform.backends.base import Outcome
from dmlconform.backends.numpy_backend import NumpyBackend
from dmlconform.case import Case
from dmlconform.cli import bundled_suites
from dmlconform.feature_levels import FeatureLevel
from dmlconform.output_digest import DIGEST_PATTERN, output_sha256
from dmlconform.runner import run_case
from dmlconform.suite.loader import load_paths
from tests.runner.test_runner import Scripted, reference_outputs


@pytest.fixture(scope="module")
def relu() -> Case:
    return next(case for case in load_paths([bundled_suites() / "seed"]) if case.id == "relu-grad-formula")


def test_the_definition_byte_for_byte() -> None:
    """Name, NUL, NumPy type name, NUL, extents joined by commas, NUL, then the little-endian bytes in C order."""
    a = np.array([[1.0, -2.0]], dtype=np.float32)
    b = np.array(7, dtype=np.uint16)
    expected = hashlib.sha256(b"A\0float32\x001,2\0" + a.astype("<f4").tobytes() + b"B\0uint16\0\0" + b"\x07\x00")
    assert output_sha256({"A": a, "B": b}, ["A", "B"]) == expected.hexdigest()
    assert DIGEST_PATTERN.fullmatch(expected.hexdigest())


def test_two_backends_returning_the_same_bits_give_one_digest(relu: Case) -> None:
    """The reference backend, and a backend that returns the same values as a Fortran-ordered, big-endian copy."""
    ours = run_case(relu, NumpyBackend(), FeatureLevel.L6_4)

    def other_layout(case: Case) -> Outcome:
        outputs = reference_outputs(case)
        return Outcome.ran({name: np.asfortranarray(array.astype(array.dtype.newbyteorder(">")))
                            for name, array in outputs.items()})

    theirs = run_case(relu, Scripted(other_layout), FeatureLevel.L6_4)
    assert ours.output_sha256 is not None and DIGEST_PATTERN.fullmatch(ours.output_sha256)
    assert theirs.output_sha256 == ours.output_sha256


def test_one_flipped_bit_gives_another_digest(relu: Case) -> None:
    ours = run_case(relu, NumpyBackend(), FeatureLevel.L6_4)

    def one_bit_off(case: Case) -> Outcome:
        outputs = {name: array.copy() for name, array in reference_outputs(case).items()}
        array = outputs[case.op.outputs[0]]
        array.reshape(-1).view(np.uint32)[0] ^= 1  # the last mantissa bit of the first element
        return Outcome.ran(outputs)

    flipped = run_case(relu, Scripted(one_bit_off), FeatureLevel.L6_4)
    assert flipped.output_sha256 is not None and flipped.output_sha256 != ours.output_sha256


def test_negative_and_positive_zero_differ_though_they_compare_equal() -> None:
    plus, minus = np.zeros(4, dtype=np.float32), np.zeros(4, dtype=np.float32)
    minus[2] = -0.0
    assert np.array_equal(plus, minus)
    assert output_sha256({"Y": plus}, ["Y"]) != output_sha256({"Y": minus}, ["Y"])


@pytest.mark.parametrize(("outputs", "other"), [
    ({"Y": np.zeros(4, np.float32)}, {"Y": np.zeros(4, np.int32)}),  # the same bytes as another type
    ({"Y": np.zeros((2, 2), np.float32)}, {"Y": np.zeros(4, np.float32)}),  # ... or another shape
    ({"Y": np.zeros(2, np.float32)}, {"Z": np.zeros(2, np.float32)}),  # ... or under another name
])
def test_type_shape_and_name_are_part_of_it(outputs: dict, other: dict) -> None:
    assert output_sha256(outputs, list(outputs)) != output_sha256(other, list(other))


def test_no_digest_without_outputs_and_the_first_repeat_s_with_repeats(relu: Case) -> None:
    refused = run_case(relu, Scripted(lambda case: Outcome.refused("E_INVALIDARG")), FeatureLevel.L6_4)
    missing = run_case(relu, Scripted(lambda case: Outcome.ran({})), FeatureLevel.L6_4)
    assert refused.output_sha256 is None and missing.output_sha256 is None
    calls: list[int] = []

    def second_run_off(case: Case) -> Outcome:
        calls.append(1)
        outputs = {name: array.copy() for name, array in reference_outputs(case).items()}
        if len(calls) == 2:
            outputs[case.op.outputs[0]].reshape(-1)[0] += 1
        return Outcome.ran(outputs)

    repeated = run_case(relu, Scripted(second_run_off), FeatureLevel.L6_4, repeat=2)
    assert repeated.moved_count == 1  # the second run is the one reported (it did not match) ...
    assert repeated.output_sha256 == run_case(relu, NumpyBackend(), FeatureLevel.L6_4).output_sha256  # ... not digested
