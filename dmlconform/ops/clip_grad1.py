"""DML_OPERATOR_ELEMENT_WISE_CLIP_GRAD1: dX = (X <= Min or X >= Max) ? 0 : dY (both bounds excluded)."""

from __future__ import annotations

import numpy as np

from dmlconform.dtypes import DataType as T
from dmlconform.feature_levels import FeatureLevel as L
from dmlconform.feature_levels import SupportRow, SupportTable
from dmlconform.ops._select import ElementwiseSelectGrad
from dmlconform.ops.base import Description, Param, ParamKind, check_min_max_dtype

SUPPORT = SupportTable((
    SupportRow(L.L5_0, 1, 8, frozenset({T.FLOAT32, T.FLOAT16, T.INT64, T.INT32, T.INT16, T.INT8,
                                        T.UINT64, T.UINT32, T.UINT16, T.UINT8})),
))


class ClipGrad1(ElementwiseSelectGrad):
    name = "ELEMENT_WISE_CLIP_GRAD1"
    support = SUPPORT
    params = (Param("Min", ParamKind.SCALAR), Param("Max", ParamKind.SCALAR))
    # NaN in X: the documented pseudo-code zeroes only on `<=`/`>=`, so NaN passes dY (`nan-passes`);
    # an implementation written as `Min < X < Max ? dY : 0` yields 0 (`nan-zero`), as DirectML 1.15.4 does on
    # both stacks measured, hence the default.
    variants = ("nan-zero", "nan-passes")
    # The page: "OutputTensor is permitted to alias *InputTensor* during binding". There is no OutputTensor; the one
    # output is OutputGradientTensor, and InputTensor is the one input the sentence names (docs/api-surface.md).
    in_place = ("OutputGradientTensor", "InputTensor")

    def check_rules(self, desc: Description) -> None:
        check_min_max_dtype(desc)

    def keep(self, x: np.ndarray, desc: Description, variant: str) -> np.ndarray:
        low, high = (np.array(desc.params[k]).astype(x.dtype) for k in ("Min", "Max"))
        if variant == "nan-zero":
            return (x > low) & (x < high)
        return ~((x <= low) | (x >= high))


CLIP_GRAD1 = ClipGrad1()
