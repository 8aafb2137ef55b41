"""SLICE_GRAD through PyTorch: autograd of the forward slice, built from views.

The forward Slice1 is, per dimension, `narrow(offset, size)`, then `flip` where the stride is negative (the
window is walked backwards from its last element), then a positive-step view `[::|stride|]`, then
`narrow(0, count)`; its backward (autograd: `slice_backward`, `flip`, `narrow` backward) scatters dY into
zeros of the forward input's sizes. No index arithmetic of DirectML's formula is written here: PyTorch's
view machinery walks the window.

Integers have no autograd: the same view of an index tensor (`arange`) says which places the slice reads,
and dY is put there with `index_put_` (on the signed type of the same width for unsigned data).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from dmlconform.backends.torch_grads.common import gradient_of
from dmlconform.ops.base import Description


def window_view(t: torch.Tensor, offsets: Sequence[int], sizes: Sequence[int], strides: Sequence[int],
                counts: Sequence[int]) -> torch.Tensor:
    """The forward slice of `t` as a view: `counts` elements per dimension, read as DirectML's Slice1 reads them."""
    for d, (offset, size, stride, count) in enumerate(zip(offsets, sizes, strides, counts, strict=True)):
        t = t.narrow(d, offset, size)
        if stride < 0:
            t = t.flip(d)
        t = t[(slice(None),) * d + (slice(None, None, abs(stride)),)]
        t = t.narrow(d, 0, count)
    return t


def realise(desc: Description, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    dy = inputs["InputGradientTensor"]
    shape = desc.output.shape
    p = desc.params
    window = (p["InputWindowOffsets"], p["InputWindowSizes"], p["InputWindowStrides"], tuple(dy.shape))
    if desc.output.dtype.is_float:
        zeros = torch.zeros(shape, dtype=dy.dtype, device=dy.device)
        return gradient_of(lambda x: window_view(x, *window), zeros, dy)
    places = torch.arange(math.prod(shape), device=dy.device).reshape(shape)
    read = window_view(places, *window).reshape(-1)
    out = torch.zeros(math.prod(shape), dtype=dy.dtype, device=dy.device)
    out.index_put_((read,), dy.reshape(-1))
    return out.reshape(shape)

