"""What the operators' models share: the support table's (data type, rank) cells as feature values."""

from __future__ import annotations

from dmlconform.dtypes import DataType
from dmlconform.interactions.model import Feature
from dmlconform.ops import find_operator


def support_cells(op_name: str) -> list[tuple[DataType, int]]:
    """Every (data type, rank) some feature level of the operator's table admits."""
    support = find_operator(op_name).support
    low, high = support.rank_range
    return sorted(((dtype, rank) for dtype in support.all_dtypes for rank in range(low, high + 1)
                   if support.required_level(dtype, rank) is not None), key=lambda cell: (cell[0].value, cell[1]))


def dtype_feature(op_name: str) -> Feature:
    names = sorted({dtype.name for dtype, _ in support_cells(op_name)})
    return Feature("dtype", tuple(names), "the tensors' data type")


def rank_feature(op_name: str) -> Feature:
    ranks = sorted({rank for _, rank in support_cells(op_name)})
    return Feature("rank", tuple(str(rank) for rank in ranks), "the tensors' dimension count")
