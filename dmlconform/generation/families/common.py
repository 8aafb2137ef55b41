"""What every family builder shares: plans, support-table cells and tensor helpers."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache, partial

import numpy as np

from dmlconform.dtypes import DataType
from dmlconform.feature_levels import FeatureLevel
from dmlconform.generation.description import Family
from dmlconform.generation.draw import Draw
from dmlconform.generation.spec import CaseSpec, TensorSpec
from dmlconform.ops.base import Operator
from dmlconform.suite.tiers import Tier


@dataclass(frozen=True)
class Plan:
    """One case to build: its id, the key that seeds its draw, and the function that builds it from the draw.

    The freezer may reject a draw (a trivial output, say); the runner then draws again with the attempt number
    appended to the key, so the case stays deterministic."""

    id: str
    key: tuple[int, ...]
    make: Callable[[Draw], CaseSpec]


@dataclass(frozen=True, order=True)
class Cell:
    """One (data type, rank) the support table admits, and the lowest level that admits it."""

    level_value: int
    dtype_value: int
    rank: int

    @property
    def dtype(self) -> DataType:
        return DataType(self.dtype_value)

    @property
    def level(self) -> FeatureLevel:
        return FeatureLevel(self.level_value)

    @property
    def label(self) -> str:
        return f"{self.dtype.name.lower()}-r{self.rank}"


def cells(op: Operator) -> list[Cell]:
    """Every (data type, rank) some level of the op's table admits, lowest level first."""
    return list(_cells(op))


@cache
def _cells(op: Operator) -> tuple[Cell, ...]:
    # The pairwise families' candidate builders ask for every candidate: thousands of times per generation.
    low, high = op.support.rank_range
    found = []
    for dtype in op.support.all_dtypes:
        for rank in range(low, high + 1):
            level = op.support.required_level(dtype, rank)
            if level is not None:
                found.append(Cell(level.value, dtype.value, rank))
    return tuple(sorted(found))


def cell_plans(family: Family, tier: Tier, make: Callable[..., CaseSpec],
               label: Callable[[Cell, int], str] | None = None) -> Iterator[Plan]:
    """The plans of a per-cell family: for every cell of the table, the tier's new indexes. `make(draw, cell, case_id,
    index)` builds a case; the id is `<family>-<dtype>-r<rank>[-<label>]-<index>`, the key (data type, rank, index)."""
    for cell in cells(family.op):
        for index in family.new_in(tier):
            middle = f"-{label(cell, index)}" if label is not None else ""
            case_id = f"{family.name}-{cell.label}{middle}-{index}"
            yield Plan(case_id, (cell.dtype_value, cell.rank, index),
                       partial(make, cell=cell, case_id=case_id, index=index))


def tensor(array: np.ndarray) -> TensorSpec:
    return TensorSpec(DataType.from_numpy(array.dtype), tuple(array.shape), array=array)


def generated(dtype: DataType, shape: tuple[int, ...], spec: dict) -> TensorSpec:
    return TensorSpec(dtype, tuple(shape), generate=spec)


def described(dtype: DataType, shape: tuple[int, ...]) -> TensorSpec:
    """A tensor with a data type and sizes and no data: a negative case's output."""
    return TensorSpec(dtype, tuple(shape))


def python_scalar(value: np.generic) -> int | float:
    """A NumPy scalar as the exact Python number YAML writes (floats are written in full precision)."""
    return int(value) if np.issubdtype(type(value), np.integer) else float(value)


def gradient_spec(dtype: DataType, seed: int) -> dict:
    """A `generate:` spec for a large gradient: normal floats, or integers over a range wide enough for hundreds
    of distinct values (zero, in the signed types, at under 1 % of the elements)."""
    if dtype.is_float:
        return {"dist": "normal", "seed": seed, "std": 4}
    info = np.iinfo(dtype.numpy)
    if dtype.is_signed:
        return {"dist": "ints", "seed": seed, "low": max(int(info.min), -1000), "high": min(int(info.max), 1000)}
    return {"dist": "ints", "seed": seed, "low": 1, "high": min(int(info.max), 2000)}
