"""The reference kernels as they were before issue 11 made them fast: the test oracle for the fast ones.

MaxPoolingGrad as a tap-by-tap scan over the whole tensor (`scan_taps`, which the package keeps for planes with
NaN or -inf and which tests/ops/test_max_pooling_grad.py holds to a brute-force scan) and three bincounts; the
dense ResampleGrad1 (one matrix product per axis, from the package's unchanged per-axis taps), with their full
float64 accumulation arrays (n, f and the coordinate slack come from the package's per-axis code, which the
fast kernels did not change: only outputs, v, M and D are derived anew). `tests/ops/test_fast_kernels.py` holds the fast kernels to these bit for
bit (outputs) and value for value (accumulation data) over many random descriptions. Nothing in the package
imports this module.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from dmlconform.compare.accumulation import Accumulation
from dmlconform.ops.base import Description
from dmlconform.ops.max_pooling_grad import scan_taps
from dmlconform.ops.resample_grad1 import AxisTaps, axis_taps, contribution_counts
from dmlconform.ops.resample_grad1 import apply_dense_transposed as apply_transposed


def max_pooling_grad(desc: Description, inputs: Mapping[str, np.ndarray], variant: str = "nan-sticks"
                     ) -> tuple[np.ndarray, Accumulation]:
    x, dy = inputs["InputTensor"], inputs["InputGradientTensor"]
    with np.errstate(invalid="ignore"):
        winners = scan_taps(x, dy.shape[2:], desc.params, variant).ravel()
    routed = winners >= 0
    target, grads = winners[routed], dy.ravel()[routed].astype(np.float64)
    value = np.bincount(target, weights=grads, minlength=x.size).reshape(x.shape)
    abs_sum = np.bincount(target, weights=np.abs(grads), minlength=x.size).reshape(x.shape)
    count = np.bincount(target, minlength=x.size).reshape(x.shape)
    with np.errstate(over="ignore", invalid="ignore"):
        out = value.astype(dy.dtype)
    return out, Accumulation(value, abs_sum, count)



def resample_taps(desc: Description, variant: str = "literal") -> list[AxisTaps]:
    p = desc.params
    if "RoundingDirection" not in p:  # ResampleGrad (v0): its variant names the readings of its coordinate rules
        return desc.op.taps(desc, variant)  # type: ignore[attr-defined, no-any-return]
    ipo, opo = p["InputPixelOffsets"], p["OutputPixelOffsets"]
    if variant == "swapped":
        ipo, opo = opo, ipo
    dy = desc.tensors["InputGradientTensor"].shape
    dx = desc.output.shape
    return [axis_taps(dx[a], dy[a], p["Scales"][a], ipo[a], opo[a], p["InterpolationMode"],
                      p["RoundingDirection"]) for a in range(len(dx))]


def resample_grad1(desc: Description, inputs: Mapping[str, np.ndarray], variant: str = "literal"
                   ) -> tuple[np.ndarray, Accumulation]:
    dy = inputs["InputGradientTensor"]
    taps = resample_taps(desc, variant)
    weights = [axis.matrix() for axis in taps]
    dy64 = dy.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        value = apply_transposed(dy64, weights)
        abs_sum = apply_transposed(np.abs(dy64), [np.abs(w) for w in weights])
        abs_gradient_sum = apply_transposed(np.abs(dy64), [axis.tap_matrix() for axis in taps])
        out = value.astype(dy.dtype)
    # The coordinate slack came with the oracle work, not with the fast kernels: it is the package's own, whole.
    uncertain = desc.op.coordinate_uncertainty(desc, variant, taps)  # type: ignore[attr-defined]
    count, factors = contribution_counts(taps, uncertain.rounding if uncertain else [None] * len(taps))
    slack = uncertain.slack(dy) if uncertain else 0.0
    return out, Accumulation(value, abs_sum, count, factors, abs_gradient_sum, slack)
