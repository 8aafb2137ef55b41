"""DML_OPERATOR_ACTIVATION_RELU_GRAD: dX = X > 0 ? dY : 0 (strict; ±0 gives 0)."""

from __future__ import annotations

import numpy as np

from dmlconform.dtypes import DataType as T
from dmlconform.feature_levels import FeatureLevel as L
from dmlconform.feature_levels import SupportRow, SupportTable
from dmlconform.ops._select import ElementwiseSelectGrad
from dmlconform.ops.base import Description

# The operator page's tables (docs/reference/operators.md). DirectML's feature-level history claims
# 4-D only before 3_1; the operator page says 1 to 8 from 3_0, and the operator page wins.
SUPPORT = SupportTable((
    SupportRow(L.L3_0, 1, 8, frozenset({T.FLOAT32, T.FLOAT16})),
    SupportRow(L.L4_0, 1, 8, frozenset({T.FLOAT32, T.FLOAT16})),
    SupportRow(L.L5_1, 1, 8, frozenset({T.FLOAT32, T.FLOAT16, T.INT32, T.INT16, T.INT8})),
))


class ReluGrad(ElementwiseSelectGrad):
    name = "ACTIVATION_RELU_GRAD"
    support = SUPPORT
    # NaN in X: a select on `X > 0` yields 0 (`nan-zero`); an implementation written as
    # `X <= 0 ? 0 : dY` (PyTorch's threshold_backward) passes dY (`nan-passes`).
    variants = ("nan-zero", "nan-passes")

    def keep(self, x: np.ndarray, desc: Description, variant: str) -> np.ndarray:
        if variant == "nan-passes":
            return ~(x <= 0)
        return x > 0


RELU_GRAD = ReluGrad()
