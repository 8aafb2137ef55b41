"""Shared shape of the element-wise select gradients (ReluGrad, ClipGrad1): dX = keep(X) ? dY : 0."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from dmlconform.ops.base import Description, Operator, Reference


class ElementwiseSelectGrad(Operator):
    inputs = ("InputTensor", "InputGradientTensor")
    same_sizes = ("InputTensor", "InputGradientTensor", "OutputGradientTensor")

    def keep(self, x: np.ndarray, desc: Description, variant: str) -> np.ndarray:
        """Boolean mask of the elements whose incoming gradient passes through."""
        raise NotImplementedError

    def reference(self, desc: Description, inputs: Mapping[str, np.ndarray], variant: str | None = None
                  ) -> Reference:
        x, dy = inputs["InputTensor"], inputs["InputGradientTensor"]
        keep = self.keep(x, desc, variant or self.variants[0])
        # A select, not a multiply: a zeroed element is +0 even where dY is negative, NaN or infinite.
        out = np.where(keep, dy, np.zeros((), dtype=dy.dtype))
        return Reference({"OutputGradientTensor": out})
