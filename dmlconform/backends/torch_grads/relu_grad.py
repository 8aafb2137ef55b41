"""ACTIVATION_RELU_GRAD through PyTorch: autograd of `torch.relu` for floats, a select for integers.

`torch.relu`'s backward is `threshold_backward(dY, relu(X), 0)`: `relu(X) <= 0 ? 0 : dY`, a select, so X = ±0
gives 0 and a NaN or infinite dY where X <= 0 gives 0, as DirectML's `X > 0 ? dY : 0` does. Where X is NaN,
relu(X) is NaN and the gradient passes: PyTorch follows the `nan-passes` reading (docs/reference/operators.md).
Integers (INT8, INT16, INT32) have no autograd; the select `X > 0` runs directly in the data type.
"""

from __future__ import annotations

import torch

from dmlconform.backends.torch_grads.common import gradient_of, pass_where
from dmlconform.ops.base import Description


def realise(desc: Description, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    x, dy = inputs["InputTensor"], inputs["InputGradientTensor"]
    if desc.output.dtype.is_float:
        return gradient_of(torch.relu, x, dy)
    return pass_where(x > 0, dy)
