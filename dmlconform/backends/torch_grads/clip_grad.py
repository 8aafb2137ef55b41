"""ELEMENT_WISE_CLIP_GRAD (v0) through PyTorch: autograd of `hardtanh` for floats, a select for integers, each against
the FLOAT bounds as the tensors' type holds them (DirectML's reading, the reference's default).

The page: `(X <= Min or X >= Max) ? 0 : dY`, both bounds excluded. `torch.clamp`'s backward passes dY AT the bounds
(`Min <= X <= Max`, since pytorch PR #7049), so it is not used (tests/ops/test_against_torch.py shows the difference);
`hardtanh`'s backward is the page's formula exactly, as for ClipGrad1 (clip_grad1.py), NaN in X included: it passes
dY there (the `nan-passes` reading), which the backend writes itself because the CPU's vectorised path does not.

PyTorch's own reading of a float bound is not DirectML's: `clamp` or `hardtanh` on a FLOAT16 tensor compares X with
the bound as a float (0.99995 stays above X = 1.0, where DirectML's bound is the half 1.0), and on an integer tensor
promotes to float32 (an INT32 above 2^24 rounds). So the bounds are converted here first, as DirectML converts them
(examples/dml_harness/investigate/clip_grad_bounds.py): FLOAT16 clamped to ±65504 and rounded by torch to the nearest
half; an integer type clamped and truncated toward zero, NaN to what x64's conversion makes of it. A NaN bound on float
tensors is compared by torch directly (`Min < X < Max`, false everywhere beside NaN): hardtanh's backward there
differs between its vectorised and scalar paths.
"""

from __future__ import annotations

import math

import torch

from dmlconform.backends.torch_grads.common import gradient_of, ordered_integers, ordered_scalar, pass_where
from dmlconform.dtypes import DataType
from dmlconform.ops.base import Description

#: x64's conversion of NaN to each integer type (the sign bit of the register it converts through, cut to the type).
_NAN_AS = {DataType.INT32: -(2**31), DataType.INT64: -(2**63), DataType.UINT64: 2**63}


def _integer_bound(bound: float, dtype: DataType) -> int:
    import numpy as np

    info = np.iinfo(dtype.numpy)
    if math.isnan(bound):
        return _NAN_AS.get(dtype, 0)
    if math.isinf(bound):
        return int(info.max) if bound > 0 else int(info.min)
    return min(max(math.trunc(bound), int(info.min)), int(info.max))


def _float_bound(bound: float, dtype: DataType) -> float:
    if dtype is DataType.FLOAT16 and not math.isnan(bound):
        return float(torch.tensor(min(max(bound, -65504.0), 65504.0), dtype=torch.float32).to(torch.float16))
    return bound


def realise(desc: Description, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    x, dy = inputs["InputTensor"], inputs["InputGradientTensor"]
    dtype = desc.output.dtype
    low, high = float(desc.params["Min"]), float(desc.params["Max"])
    if dtype.is_float:
        low, high = _float_bound(low, dtype), _float_bound(high, dtype)
        if math.isnan(low) or math.isnan(high):
            return pass_where((x > low) & (x < high), dy)
        grad = gradient_of(lambda t: torch.ops.aten.hardtanh(t, low, high), x, dy)
        return torch.where(torch.isnan(x), dy, grad)
    ordered = ordered_integers(x, dtype)
    lo, hi = (ordered_scalar(_integer_bound(b, dtype), dtype, x.device) for b in (low, high))
    return pass_where((ordered > lo) & (ordered < hi), dy)
