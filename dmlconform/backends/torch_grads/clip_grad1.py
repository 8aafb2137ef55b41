"""ELEMENT_WISE_CLIP_GRAD1 through PyTorch: autograd of `hardtanh` for floats, a select for integers.

DirectML passes dY only strictly inside the bounds: `(X <= Min or X >= Max) ? 0 : dY`. `torch.clamp`'s
backward passes it AT the bounds too (`Min <= X <= Max`), so clamp is not used. `hardtanh(X, Min, Max)` is
the same function as clamp in the forward, and its backward is `hardtanh_backward`:
`(X <= Min || X >= Max) ? 0 : dY` on the CPU and CUDA -- DirectML's formula exactly, a NaN in X included
(it passes dY: the `nan-passes` reading) -- except that on the CPU its vectorised path, which large tensors
take, zeroes some NaN positions that the scalar path passes (the generated nan-x cases showed one tensor with
both readings). The backend therefore writes dY at NaN positions itself, which is what the documented formula
and the scalar kernel do. `aten.hardtanh` is called rather than `F.hardtanh`, whose Python
wrapper refuses Min > Max; the pages define that case (every gradient of a number is zeroed) and the kernel
computes it as written. Min and Max are values of the data type, so passing them as Python floats is exact.

Integers have no autograd: the comparison runs directly, in a signed type that keeps the data type's
order (see `common`), so INT64 and UINT64 near their limits compare exactly.
"""

from __future__ import annotations

import torch

from dmlconform.backends.torch_grads.common import gradient_of, ordered_integers, ordered_scalar, pass_where
from dmlconform.ops.base import Description


def realise(desc: Description, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    x, dy = inputs["InputTensor"], inputs["InputGradientTensor"]
    low, high = desc.params["Min"], desc.params["Max"]
    dtype = desc.output.dtype
    if dtype.is_float:
        grad = gradient_of(lambda t: torch.ops.aten.hardtanh(t, float(low), float(high)), x, dy)
        return torch.where(torch.isnan(x), dy, grad)
    ordered = ordered_integers(x, dtype)
    outside = (ordered <= ordered_scalar(low, dtype, x.device)) | (ordered >= ordered_scalar(high, dtype, x.device))
    return pass_where(~outside, dy)
