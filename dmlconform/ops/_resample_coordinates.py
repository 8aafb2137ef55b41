"""How precisely a ResampleGrad1 source coordinate is known, and what that costs a sum or a pick.

docs/reference/operators.md writes the forward's source coordinate as `x = (o − OPO)/S − IPO`, computed in
float32. The order of that evaluation is undocumented (DirectML's pages do not say whether 1/Scale is precomputed):
a shader may divide, or multiply by a float32 reciprocal of the scale, fold both offsets into one
bias, and fuse the last multiply-add. Each order rounds differently, and D3D's float32 division and
reciprocal are not even correctly rounded (D3D11 floating-point rules: 2.5 ULP and 1 ULP). Real DirectML
(1.15.4, under Wine) follows none of the orders bit for bit, on lavapipe nor on an NVIDIA H100: on LINEAR
float32 cases its results sat up to 81 ULP from the division form's golden, and on NEAREST_NEIGHBOR
knife-edge coordinates the two stacks picked different inputs from each other and from every order
(examples/dml_harness/results/DECISIONS.md).

So a coordinate counts as exact only where every modelled order gives the same float32 value and its
real value is a float32 value, and, for LINEAR, only where the scale is a power of two (or infinite): DirectML's
LINEAR weights, read off one output at a time on 288 axes, put 62 of the 393 coordinates that pass the first two
tests with any other scale up to 1.7 u·A from their exact value (18.5 as 18.500002 at S = 0.75: the 1-ULP
reciprocal D3D allows), and none of the 2,117 with a power-of-two scale; its NEAREST_NEIGHBOR picks at such whole
coordinates were the exact ones, 388 of 388 (examples/dml_harness/investigate/resample_linear_weights.py).
Elsewhere a coordinate is known to within `Δx = γ_7(u32)·A`,
`A = (|o| + |OPO|)/|S| + |IPO|`: the division order rounds the subtraction (u), divides within 2.5 ULP
(at most 5u relative) and rounds the last subtraction (u), 7u in all, each term at most A; the
reciprocal orders stay within that (a 1-ULP reciprocal is 2u, then three roundings).

For LINEAR, a coordinate off by `δ` moves each tap weight by at most `δ` (weights are `1 − t` and `t`,
`t = x − floor(x)`), so a term `w·dy` moves by at most `|dy|·Σ_a Δx_a` over the axes of its weight, and a
coordinate within `Δx` of an integer may put a tap of weight up to `Δx` on the element beyond it. The
reference adds that up per element as *coordinate slack*. NEAREST_NEIGHBOR picks one element, so an
uncertain coordinate matters only where `x ± Δx` straddles an integer (`ambiguous_picks`: a real value
such as `0.5/0.33333334 + 0.5 = 1.99999995`, which the division rounds to 2 and an H100 computes as
1.9999999): that gradient may land on either element, and both get its `|dy|` as slack. Anywhere else the
pick is fixed, so a wrong rounding direction (floor for ceil) still moves a gradient by a whole element.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import numpy as np

from dmlconform.dtypes import DataType

#: The error of D3D's float32 evaluation of a coordinate, in units of u·A: a rounded subtraction, a division within
#: 2.5 ULP (5u), a rounded subtraction.
COORDINATE_ROUNDINGS = 7
_U32 = DataType.FLOAT32.unit_roundoff


def _fma32(a: np.ndarray, b: np.ndarray | np.floating, c: np.ndarray | np.floating) -> np.ndarray:
    """float32 fused multiply-add: a·b is exact in float64 (24 + 24 bits); the sum rounds there only
    when its operands are 29 binades apart, far beyond any coordinate's."""
    return (a.astype(np.float64) * np.float64(b) + np.asarray(c, dtype=np.float64)).astype(np.float32)


def evaluation_orders(n_out: int, scale: float, input_offset: float, output_offset: float) -> np.ndarray:
    """x(o) as each modelled order evaluates it in float32, shape [orders, n_out]; row 0 is the contract's."""
    f32 = np.float32
    o = np.arange(n_out, dtype=np.float32)
    s, ipo, opo = f32(scale), f32(input_offset), f32(output_offset)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        r = f32(1) / s
        shifted = o - opo
        division = shifted / s - ipo
        reciprocal = shifted * r - ipo
        reciprocal_fused = _fma32(shifted, r, -ipo)
        bias = f32(opo * r) + ipo
        bias_fused = _fma32(np.array([opo]), r, ipo)[0]
        folded = o * r - bias
        folded_fused = _fma32(o, r, -bias_fused)
        divided_bias = o / s - (opo / s + ipo)
    return np.stack([division, reciprocal, reciprocal_fused, folded, folded_fused, divided_bias]).astype(np.float32)


def exactly_representable(n_out: int, scale: float, input_offset: float, output_offset: float) -> np.ndarray:
    """Whether the real value of (o − OPO)/S − IPO (float32 operands) is a float32 value, per coordinate: where
    it is not, every evaluation rounds, and D3D's division and reciprocal are not even correctly rounded."""
    f32 = np.float32
    s, ipo, opo = (Fraction(float(f32(v))) if np.isfinite(f32(v)) else None
                   for v in (scale, input_offset, output_offset))
    if s is None or ipo is None or opo is None:
        return np.ones(n_out, dtype=bool)  # infinite parameters: the coordinates are ±inf or the offset's clamp
    out = np.empty(n_out, dtype=bool)
    for o in range(n_out):
        x = (o - opo) / s - ipo
        out[o] = Fraction(float(f32(float(x)))) == x
    return out


def inverts_exactly(scale: float) -> bool:
    """Whether 1/S is a float32 value (S a power of two, or infinite), so that no order of evaluation rounds it."""
    s = np.float32(scale)
    return bool(np.isinf(s) or np.frexp(s)[0] == 0.5)


def uncertainty(n_out: int, scale: float, input_offset: float, output_offset: float,
                linear: bool = False) -> np.ndarray:
    """Δx per output coordinate (float64): 0 where every modelled order agrees and the real value is a float32
    value (for `linear` weights, besides, only where the scale inverts exactly), else γ_7(u32)·A."""
    orders = evaluation_orders(n_out, scale, input_offset, output_offset)
    # An infinite coordinate clamps to an edge in every order.
    infinite = ~np.isfinite(orders[0])
    if linear and not inverts_exactly(scale):
        agree = infinite
    else:
        agree = (np.all(orders == orders[0], axis=0)
                 & exactly_representable(n_out, scale, input_offset, output_offset)) | infinite
    with np.errstate(invalid="ignore"):
        scale_a = (np.arange(n_out) + abs(output_offset)) / abs(scale) + abs(input_offset)
    k = COORDINATE_ROUNDINGS * _U32
    return np.where(agree, 0.0, k / (1 - k) * scale_a)


#: NEAREST_NEIGHBOR's pick from a coordinate, per rounding rule: ResampleGrad1's two RoundingDirections, and the
#: readings of ResampleGrad (v0), whose page names no rule (dmlconform/ops/resample_grad.py). The half rules are
#: applied to the coordinate's float32 value exactly (x ± 0.5 is exact in float64).
PICKS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "DECREASING": np.floor,
    "INCREASING": np.ceil,
    "floor": np.floor,
    "ceil": np.ceil,
    "half-up": lambda x: np.floor(x + 0.5),
    "half-down": lambda x: np.ceil(x - 0.5),
    "half-even": np.rint,
}


def pick(x: np.ndarray, rounding: str) -> np.ndarray:
    """The element NEAREST_NEIGHBOR picks for coordinate x under the rounding rule, before the clamp (float64)."""
    return PICKS[rounding](np.asarray(x, dtype=np.float64))


def rounding_slack(x: np.ndarray, rounding: str) -> np.ndarray:
    """How far a float32 evaluation of a half rule's x ± 0.5 may lie from the exact sum (0 where it is exact, and for
    every other rule): floor(x + 0.5) with the sum in float32 picks 1 at x = 0.49999997 (the sum rounds to 1.0),
    where the rule picks 0. x − 0.5 never rounds for x ≥ 0.25, nor x + 0.5 above 0.5."""
    shift = {"half-up": 0.5, "half-down": -0.5}.get(rounding)
    x = np.asarray(x, dtype=np.float64)
    if shift is None:
        return np.zeros(x.shape)
    with np.errstate(invalid="ignore", over="ignore"):
        exact = x + shift
        rounded = (x.astype(np.float32) + np.float32(shift)).astype(np.float64)
        return np.where(np.isfinite(exact), np.abs(rounded - exact), 0.0)


def ambiguous_picks(x: np.ndarray, delta: np.ndarray, rounding: str) -> np.ndarray:
    """NEAREST_NEIGHBOR: coordinates whose pick depends on the order of evaluation."""
    return (delta > 0) & (pick(x - delta, rounding) != pick(x + delta, rounding))


def reach(x: np.ndarray, delta: np.ndarray, n_in: int) -> np.ndarray:
    """R[o, i] = 1 where a LINEAR tap of non-zero weight may land on input i (clamped to the edge) for a
    coordinate anywhere in x(o) ± Δx(o): inputs floor(x − Δx) to ceil(x + Δx). An infinite coordinate (an infinite
    offset) reaches the edge it is clamped to: the bounds are clipped before they become integers, which ±inf
    cannot."""
    low = np.clip(np.floor(x - delta), -1, n_in).astype(np.int64)
    high = np.clip(np.ceil(x + delta), -1, n_in).astype(np.int64)
    out = np.zeros((x.size, n_in))
    for o in range(x.size):
        out[o, np.clip(np.arange(low[o], high[o] + 1), 0, n_in - 1)] = 1.0
    return out


def pick_reach(x: np.ndarray, delta: np.ndarray, n_in: int, rounding: str) -> np.ndarray:
    """R[o, i] = 1 where NEAREST_NEIGHBOR may pick input i (clamped) for a coordinate within x(o) ± Δx(o)."""
    low = np.clip(pick(x - delta, rounding), 0, n_in - 1).astype(np.int64)
    high = np.clip(pick(x + delta, rounding), 0, n_in - 1).astype(np.int64)
    out = np.zeros((x.size, n_in))
    for o in range(x.size):
        out[o, low[o]:high[o] + 1] = 1.0
    return out
