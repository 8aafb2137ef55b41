"""RESAMPLE_GRAD (v0) through PyTorch: autograd of the forward Resample1, ResampleGrad1's realisation
(torch_grads/resample_grad1.py) with v0's coordinate rules.

DirectML's v0 NEAREST_NEIGHBOR picks floor(x + 0.5): PyTorch's own `upsample_nearest1d` where the forward's offsets
are 0.5 and 0 (floor(o/S)) and `_upsample_nearest_exact1d` where they are 0.5 and -0.5 (half-pixel, floor((o + 0.5)/S)),
for a power-of-two scale; elsewhere the formula written in PyTorch with floor(x + 0.5) in float32. A variant's other
readings (floor, ceil, half-down, half-even; LINEAR taps dropped past the edges; the literal offsets) take the same
path with their rule.
"""

from __future__ import annotations

import torch

from dmlconform.backends.torch_grads import resample_grad1
from dmlconform.ops.base import Description


def realise(desc: Description, inputs: dict[str, torch.Tensor], variant: str | None = None) -> torch.Tensor:
    return resample_grad1.realise(desc, inputs, variant)
