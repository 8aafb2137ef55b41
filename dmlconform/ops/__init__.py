"""The five DirectML gradient operators, one module each, and the registry that finds them by name."""

from __future__ import annotations

from dmlconform.ops.average_pooling_grad import AVERAGE_POOLING_GRAD
from dmlconform.ops.base import Operator
from dmlconform.ops.clip_grad import CLIP_GRAD
from dmlconform.ops.clip_grad1 import CLIP_GRAD1
from dmlconform.ops.max_pooling_grad import MAX_POOLING_GRAD
from dmlconform.ops.relu_grad import RELU_GRAD
from dmlconform.ops.resample_grad import RESAMPLE_GRAD
from dmlconform.ops.resample_grad1 import RESAMPLE_GRAD1
from dmlconform.ops.slice_grad import SLICE_GRAD

OPERATORS: dict[str, Operator] = {op.name: op for op in
                                  (RELU_GRAD, CLIP_GRAD1, SLICE_GRAD, MAX_POOLING_GRAD, RESAMPLE_GRAD1,
                                   RESAMPLE_GRAD, CLIP_GRAD, AVERAGE_POOLING_GRAD)}


def find_operator(name: object) -> Operator:
    """Look an operator up by DML name, with or without the DML_OPERATOR_ prefix."""
    key = str(name).upper().removeprefix("DML_OPERATOR_")
    try:
        return OPERATORS[key]
    except KeyError:
        raise KeyError(f"unknown operator {name!r} (known: {', '.join(OPERATORS)})") from None
