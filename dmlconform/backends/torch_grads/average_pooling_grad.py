"""AVERAGE_POOLING_GRAD through PyTorch: autograd of `avg_pool2d`/`avg_pool3d`.

PyTorch pads symmetrically, at most half a window, and sizes its output by the floor formula or, with `ceil_mode`,
by the ceiling one (a last window that starts inside the input or its start padding). Its divisor is the window's
positions inside `[-padding, In + padding)` with `count_include_pad` (ATen's `cpu_avg_pool`: `hend = min(hstart + kH,
H + padH)`, the window clipped to the padded input: the `clipped-to-padding` reading), the positions in the input
without it, or `divisor_override` for every window.

IncludePadding TRUE is expressed whatever the padding: the padding is made explicit, X's gradient is taken on a
canvas that is the padded input ([-StartPadding, In + EndPadding), or In + StartPadding for `end-padding-as-start`),
pooled with padding 0 and `count_include_pad` (so a window's divisor is its positions in the canvas), `ceil_mode`
where dY is one window longer than the floor formula gives, and `divisor_override` = the window's size for
`full-window`. IncludePadding FALSE needs PyTorch's own padding (the canvas would count as input): it is expressed
where StartPadding = EndPadding <= window / 2 on every axis. Cases PyTorch cannot size or pad that way (a gradient
smaller or two larger than its sizes, a window larger than the padded input, asymmetric padding without
IncludePadding, a 3-D input smaller than the window without IncludePadding (avg_pool3d checks the unpadded input),
`in-bounds-overhang` past the padded input) raise TorchUnsupported, naming why.

The gradient is computed in the data type on the device (FLOAT16 stays float16): what its kernels produce; but
`avg_pool3d` has no float16 kernel on the CPU, so there FLOAT16 is computed in float32 and rounded once (what a
legitimate FLOAT16 implementation may do).
"""

from __future__ import annotations

import math

import torch

from dmlconform.backends.torch_grads.common import TorchUnsupported
from dmlconform.ops.base import Description

CLIPPED, FULL, IN_BOUNDS, END_AS_START = ("clipped-to-padding", "full-window", "in-bounds-overhang",
                                          "end-padding-as-start")


def _sizes(extent: int, window: int, stride: int, padding: int) -> tuple[int, int]:
    """PyTorch's output sizes without and with ceil_mode (ATen's pooling_output_shape)."""
    floor = (extent + 2 * padding - window) // stride + 1
    ceil = -(-(extent + 2 * padding - window) // stride) + 1
    if (ceil - 1) * stride >= extent + padding:
        ceil -= 1
    return floor, ceil


def _ceil_mode(extents: list[int], outs: list[int], window: list[int], strides: list[int], padding: list[int]) -> bool:
    """Whether PyTorch gets dY's spatial sizes without (False) or with (True) ceil_mode; TorchUnsupported if neither."""
    for mode in (False, True):
        if all(_sizes(n, k, s, p)[mode] == o for n, o, k, s, p in zip(extents, outs, window, strides, padding,
                                                                       strict=True)):
            return mode
    sizes = [_sizes(n, k, s, p) for n, k, s, p in zip(extents, window, strides, padding, strict=True)]
    raise TorchUnsupported(f"avg_pool sizes its output {sizes} (floor, ceil) per axis, not dY's {outs}")


def realise(desc: Description, inputs: dict[str, torch.Tensor], variant: str | None = None) -> torch.Tensor:
    reading = variant or CLIPPED
    dy = inputs["InputGradientTensor"]
    if dy.dtype == torch.float16 and dy.device.type == "cpu" and dy.dim() == 5:
        wide = realise(desc, {"InputGradientTensor": dy.to(torch.float32)}, variant)
        return wide.to(torch.float16)
    p = desc.params
    dx_shape = tuple(desc.tensors["OutputGradientTensor"].shape)
    extent, out = list(dx_shape[2:]), list(dy.shape[2:])
    window, strides = list(p["WindowSize"]), list(p["Strides"])
    start, end = list(p["StartPadding"]), list(p["EndPadding"])
    dims = len(extent)
    pool = torch.nn.functional.avg_pool2d if dims == 2 else torch.nn.functional.avg_pool3d
    if p["IncludePadding"]:
        if reading == IN_BOUNDS and any((o - 1) * s + k > a + n + e for o, s, k, a, n, e in
                                        zip(out, strides, window, start, extent, end, strict=True)):
            raise TorchUnsupported("in-bounds-overhang: no avg_pool divisor counts the input alone past the padding")
        tail = start if reading == END_AS_START else end
        canvas = [a + n + t for a, n, t in zip(start, extent, tail, strict=True)]
        if any(c < k for c, k in zip(canvas, window, strict=True)):
            raise TorchUnsupported("a window larger than the padded input: avg_pool refuses it")
        ceil = _ceil_mode(canvas, out, window, strides, [0] * dims)
        x = torch.zeros((*dx_shape[:2], *canvas), dtype=dy.dtype, device=dy.device, requires_grad=True)
        override = math.prod(window) if reading == FULL else None
        pooled = pool(x, window, strides, 0, ceil_mode=ceil, count_include_pad=True, divisor_override=override)
        (grad,) = torch.autograd.grad(pooled, x, dy)
        return grad[(slice(None), slice(None), *(slice(a, a + n) for a, n in zip(start, extent, strict=True)))]

    if any(a != e or 2 * a > k for a, e, k in zip(start, end, window, strict=True)):
        raise TorchUnsupported("IncludePadding FALSE needs avg_pool's own padding: the same at both ends, at most half "
                               f"a window (StartPadding {start}, EndPadding {end}, WindowSize {window})")
    if dims == 3 and any(n < k for n, k in zip(extent, window, strict=True)):
        raise TorchUnsupported(f"avg_pool3d refuses an input {extent} smaller than its window {window}, padded or not")
    ceil = _ceil_mode(extent, out, window, strides, start)
    x = torch.zeros(dx_shape, dtype=dy.dtype, device=dy.device, requires_grad=True)
    pooled = pool(x, window, strides, start, ceil_mode=ceil, count_include_pad=False)
    (grad,) = torch.autograd.grad(pooled, x, dy)
    return grad
