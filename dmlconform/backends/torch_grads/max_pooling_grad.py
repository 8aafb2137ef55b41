"""MAX_POOLING_GRAD through PyTorch: `max_pool2d`/`max_pool3d` with indices, then their backward kernel.

DirectML's windows do not all fit PyTorch's pooling parameters: StartPadding and EndPadding may differ, may
exceed half the window, and dY may be larger (or smaller) than the pooled size. So the padding is made
explicit: X is placed at offset StartPadding in a canvas just long enough for the last tap of the last
window, `(out - 1)·stride + (window - 1)·dilation + 1` per spatial dimension (X is cut where no tap reaches
it), and pooled with padding 0. Then window o reads canvas places `o·stride + k·dilation`, which is
DirectML's `o·stride - StartPadding + k·dilation` shifted by StartPadding.

Padding must never win, even over a -inf in X. The window maxima are therefore found on float64 keys:
X's values exactly (FLOAT16 and FLOAT32 widen exactly), with -inf moved to -DBL_MAX, and the padding -inf.
Order, ties and NaN are PyTorch's: a strict `>` scan in row-major order (ties go to the lowest flat index,
as DirectML's), and `isnan(v)` wins, so the last NaN of a window wins (`nan-wins-last`; with one NaN it
is `nan-wins`). A window of padding alone keeps its first tap, which lies in the padding: its gradient is
cut off with the padding (the `dropped` reading).

The gradient itself is `aten.max_pool{2,3}d_with_indices_backward` -- the kernel autograd calls for
max_pool -- on dY in its own data type, so overlapping windows add in the device's FLOAT16 or FLOAT32
arithmetic (on CUDA each element gathers its windows and accumulates in float32, then rounds once).
"""

from __future__ import annotations

import torch

from dmlconform.ops.base import Description


def realise(desc: Description, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    x, dy = inputs["InputTensor"], inputs["InputGradientTensor"]
    p = desc.params
    spatial, pooled = tuple(x.shape[2:]), tuple(dy.shape[2:])
    windows = list(zip(pooled, p["Strides"], p["WindowSize"], p["Dilations"], p["StartPadding"], spatial,
                       strict=True))
    canvas_sizes = [(o - 1) * s + (k - 1) * d + 1 for o, s, k, d, _, _ in windows]
    reached = [min(n, max(0, length - a)) for (_, _, _, _, a, n), length in zip(windows, canvas_sizes, strict=True)]
    dx = torch.zeros_like(x)
    if 0 in reached:  # every tap lies in the padding: nothing is routed anywhere
        return dx
    place = (slice(None), slice(None), *(slice(a, a + r) for (_, _, _, _, a, _), r in
                                         zip(windows, reached, strict=True)))
    cut = (slice(None), slice(None), *(slice(0, r) for r in reached))

    keys = x.to(torch.float64)
    keys = torch.where(keys == -torch.inf, torch.finfo(torch.float64).min, keys)
    canvas = torch.full((*x.shape[:2], *canvas_sizes), -torch.inf, dtype=torch.float64, device=x.device)
    canvas[place] = keys[cut]
    kernel, stride, dilation = list(p["WindowSize"]), list(p["Strides"]), list(p["Dilations"])
    zero_padding = [0] * len(spatial)
    if len(spatial) == 2:
        pool, backward = torch.nn.functional.max_pool2d, torch.ops.aten.max_pool2d_with_indices_backward
    else:
        pool, backward = torch.nn.functional.max_pool3d, torch.ops.aten.max_pool3d_with_indices_backward
    _, indices = pool(canvas, kernel, stride, 0, dilation, ceil_mode=False, return_indices=True)
    like = torch.empty(canvas.shape, dtype=dy.dtype, device=dy.device)
    routed = backward(dy.contiguous(), like, kernel, stride, zero_padding, dilation, False, indices)
    dx[cut] = routed[place]
    return dx
