"""Helpers shared by the operator tests: build validated descriptions and compare arrays bit-for-bit."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from dmlconform.dtypes import DataType
from dmlconform.ops import find_operator
from dmlconform.ops.base import Description, TensorDesc

REPO = Path(__file__).resolve().parents[2]
SEED_SUITE = REPO / "test_vectors" / "seed" / "seed_examples.yaml"


def make_description(op_name: str, params: dict, dtype: str | DataType, validate: bool = True,
                     **shapes: tuple[int, ...] | list[int]) -> Description:
    """A description from DML field names; every tensor has `dtype`. Validated unless told otherwise."""
    op = find_operator(op_name)
    dt = dtype if isinstance(dtype, DataType) else DataType.parse(dtype)
    tensors = {name: TensorDesc(dt, tuple(shape)) for name, shape in shapes.items()}
    desc = Description(op, op.parse_params(params, dt), tensors)
    if validate:
        op.validate(desc)
    return desc


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal dtype, shape and bits, except that any NaN matches any NaN."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "f":
        nan_a, nan_b = np.isnan(a), np.isnan(b)
        if not np.array_equal(nan_a, nan_b):
            return False
        bits = np.dtype(f"u{a.dtype.itemsize}")
        return bool(np.array_equal(a[~nan_a].view(bits), b[~nan_b].view(bits)))
    return bool(np.array_equal(a, b))


@pytest.fixture
def describe() -> Callable[..., Description]:
    return make_description


@pytest.fixture(name="same_bits")
def same_bits_fixture() -> Callable[[np.ndarray, np.ndarray], bool]:
    return same_bits


@pytest.fixture(scope="session")
def seed_cases() -> dict:
    """The hand-typed seed examples, by case id."""
    from dmlconform.suite.loader import load_paths

    return {case.id: case for case in load_paths([SEED_SUITE])}
