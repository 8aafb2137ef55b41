"""RESAMPLE_GRAD1 (and RESAMPLE_GRAD v0) through PyTorch: autograd of the forward Resample2 (Resample1), built one
axis at a time.

Resampling is separable, so the forward is a chain of one-axis resamples and its autograd is the gradient.
Per axis, the forward is:
* nothing, where the axis maps output o onto input o (same size, every coordinate an integer): a copy;
* PyTorch's own 1-D upsample where one of its modes computes DirectML's coordinate
  `x = (o - OutputPixelOffset) / Scale - InputPixelOffset` to the same float32 bits:
  `upsample_nearest1d` (NEAREST_NEIGHBOR, DECREASING, offsets 0 and 0), `_upsample_nearest_exact1d`
  (NEAREST_NEIGHBOR, DECREASING, InputPixelOffset 0, OutputPixelOffset -0.5) and `upsample_linear1d` with
  align_corners=False (LINEAR, offsets 0.5 and -0.5). PyTorch multiplies by 1/Scale where DirectML divides
  by Scale, so this is used only where Scale is a power of two (then both are exact); nearest is not used
  where PyTorch ignores the scale (dY of the same or twice the size of dX with another scale), and no mode
  where the last coordinate lies past the input (dY larger than dX·Scale): DirectML clamps it to the edge,
  but PyTorch's CUDA kernels do not (linear reads past the input; nearest's backward drops those gradients,
  as a run on an H100 showed);
* otherwise DirectML's formula written in PyTorch: the coordinate in float32 (a true element-wise division,
  not a multiplication by a reciprocal), the rounding rule (floor or ceil; for v0 floor(x + 0.5) or the other
  readings), the taps clamped to the edge (or, v0's `edges-dropped` reading, dropped), LINEAR weights
  `1 - t` and `t` rounded once to the data type; the forward is `index_select` of the taps times their
  weights, and its autograd is a scatter with `index_add_`. Taps of weight 0 are read (0·inf is NaN), as
  PyTorch's upsample kernels read them: the `zero-weights-read` reading.

Offsets follow the reference's default reading (`swapped`, DirectML's: the gradient's fields are named after its
own tensors) unless a variant names the other (`literal`: they mean the forward's; docs/reference/operators.md); the
operator says which reading a variant names (its `offsets_swapped`, `rounding` and `edges`). v0's round half up is
PyTorch's own `nearest` with forward offsets 0.5 and 0 (floor(o/S)) and `nearest-exact` with 0.5 and -0.5
(floor((o + 0.5)/S)). Everything runs in the data type on the device.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from dmlconform.backends.torch_grads.common import gradient_of
from dmlconform.ops.base import Description
from dmlconform.ops.resample_grad1 import ResampleGrad1

#: PyTorch 1-D upsamples by (mode, rounding, InputPixelOffset, OutputPixelOffset) of DirectML's formula (forward
#: offsets; LINEAR has no rounding, `any`).
TORCH_MODES = {
    ("NEAREST_NEIGHBOR", "DECREASING", 0.0, 0.0): "nearest",
    ("NEAREST_NEIGHBOR", "DECREASING", 0.0, -0.5): "nearest-exact",
    ("NEAREST_NEIGHBOR", "half-up", 0.5, 0.0): "nearest",
    ("NEAREST_NEIGHBOR", "half-up", 0.5, -0.5): "nearest-exact",
    ("LINEAR", "any", 0.5, -0.5): "linear",
}

#: NEAREST_NEIGHBOR's pick per rounding rule, in float32 on the device (floor(x + 0.5) may round the sum: the
#: reference leaves that pick open, dmlconform/ops/_resample_coordinates.py).
PICKS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "DECREASING": torch.floor,
    "INCREASING": torch.ceil,
    "floor": torch.floor,
    "ceil": torch.ceil,
    "half-up": lambda x: torch.floor(x + 0.5),
    "half-down": lambda x: torch.ceil(x - 0.5),
    "half-even": torch.round,
}


def coordinates(n_out: int, scale: float, input_offset: float, output_offset: float, device: torch.device
                ) -> torch.Tensor:
    """x(o) in float32, as DirectML's formula orders it; the division is element by element, so no kernel may
    turn it into a multiplication by 1/Scale."""
    o = torch.arange(n_out, dtype=torch.float32, device=device)
    return (o - output_offset) / torch.full_like(o, scale) - input_offset


def power_of_two(value: float) -> bool:
    return math.frexp(value)[0] == 0.5


def torch_mode(mode: str, rounding: str, scale: float, input_offset: float, output_offset: float, n_in: int,
               n_out: int) -> str | None:
    """PyTorch's upsample that computes this axis exactly as DirectML does, or None."""
    name = TORCH_MODES.get((mode, rounding if mode == "NEAREST_NEIGHBOR" else "any", input_offset, output_offset))
    if name is None or not power_of_two(scale):
        return None
    if name == "nearest" and ((n_out == n_in and scale != 1.0) or (n_out == 2 * n_in and scale != 2.0)):
        return None
    if (n_out - 1 - output_offset) / scale - input_offset >= n_in:
        # The last coordinate lies past the input. DirectML clamps it to the edge; PyTorch's CUDA kernels assume
        # dY is no larger than dX·Scale: linear reads past the input, and nearest's backward (which gathers, per
        # input element, the outputs in [ceil(i·Scale), ceil((i + 1)·Scale))) drops the clamped ones.
        return None
    return name


def is_copy(x: torch.Tensor, mode: str, rounding: str, n_in: int) -> bool:
    if x.numel() != n_in:
        return False
    o = torch.arange(n_in, dtype=torch.float32, device=x.device)
    if mode == "LINEAR":
        return bool(torch.equal(x, o))
    return bool(torch.equal(PICKS[rounding](x), o))


def upsample(name: str, scale: float, n_out: int, axis: int) -> Callable[[torch.Tensor], torch.Tensor]:
    op = {"nearest": lambda t: torch.ops.aten.upsample_nearest1d(t, [n_out], scale),
          "nearest-exact": lambda t: torch.ops.aten._upsample_nearest_exact1d(t, [n_out], scale),
          "linear": lambda t: torch.ops.aten.upsample_linear1d(t, [n_out], False, scale)}[name]

    def forward(t: torch.Tensor) -> torch.Tensor:
        moved = t.movedim(axis, -1)
        lead = moved.shape[:-1]
        resampled = op(moved.reshape(1, -1, moved.shape[-1]))
        return resampled.reshape(*lead, n_out).movedim(-1, axis)
    return forward


def gather(x: torch.Tensor, mode: str, rounding: str, n_in: int, axis: int, rank: int, dtype: torch.dtype,
           edges: str = "clamped") -> Callable[[torch.Tensor], torch.Tensor]:
    """DirectML's forward along one axis from its float32 coordinates: taps, clamping (or, `edges` dropped, LINEAR
    taps outside the input weighted 0) and weights."""
    last = float(n_in - 1)
    if mode == "NEAREST_NEIGHBOR":
        picked = PICKS[rounding](x).clamp(0.0, last).long()
        return lambda t: t.index_select(axis, picked)
    x = torch.where(torch.isfinite(x), x, x.clamp(-1.0, float(n_in)))  # an infinite coordinate clamps to an edge
    low = torch.floor(x)
    fraction = x - low  # exact: the fractional part of a float32 is a float32
    taps = [low.clamp(0.0, last).long(), (low + 1).clamp(0.0, last).long()]
    shape = [1] * rank
    shape[axis] = x.numel()
    factors = [1 - fraction, fraction]
    if edges == "dropped":
        factors = [torch.where((tap >= 0) & (tap <= last), f, torch.zeros_like(f))
                   for tap, f in zip((low, low + 1), factors, strict=True)]
    weights = [f.to(dtype).reshape(shape) for f in factors]
    return lambda t: weights[0] * t.index_select(axis, taps[0]) + weights[1] * t.index_select(axis, taps[1])


def realise(desc: Description, inputs: dict[str, torch.Tensor], variant: str | None = None) -> torch.Tensor:
    dy = inputs["InputGradientTensor"]
    p = desc.params
    op = desc.op
    if not isinstance(op, ResampleGrad1):
        raise TypeError(f"{op.name} is not a resample gradient")
    mode, rounding, edges = p["InterpolationMode"], op.rounding(desc, variant), op.edges(variant)
    ipo, opo = p["InputPixelOffsets"], p["OutputPixelOffsets"]
    if op.offsets_swapped(variant):
        ipo, opo = opo, ipo
    dx_shape, rank = desc.output.shape, len(desc.output.shape)
    steps: list[Callable[[torch.Tensor], torch.Tensor]] = []
    for axis in range(rank):
        n_in, n_out, scale = dx_shape[axis], dy.shape[axis], p["Scales"][axis]
        x = coordinates(n_out, scale, ipo[axis], opo[axis], dy.device)
        if is_copy(x, mode, rounding, n_in):
            continue
        name = torch_mode(mode, rounding, scale, ipo[axis], opo[axis], n_in, n_out) if edges == "clamped" else None
        steps.append(upsample(name, scale, n_out, axis) if name else gather(x, mode, rounding, n_in, axis, rank,
                                                                             dy.dtype, edges))

    def forward(t: torch.Tensor) -> torch.Tensor:
        for step in steps:
            t = step(t)
        return t

    if not steps:
        return dy.clone()
    return gradient_of(forward, torch.zeros(dx_shape, dtype=dy.dtype, device=dy.device), dy)
