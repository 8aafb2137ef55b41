"""The `bound` rule of contract v1.1 (§3), element by element. Derivation: docs/tolerances.md.

For an element with `n` terms `t_i = w_i·dy_i`, float64 sum `v`, `M = Σ|t_i|`, `D = Σ|dy_i|`, golden
`g = fl(v)`, and `f` weight factors that are not ±1 (0 when every weight is ±1):

* `n = 0`: only ±0 is right; nothing may appear where nothing lands.
* `n = 1` and `f = 0`: the element is a copy, which no legitimate implementation can round: exact.
* otherwise `|actual − g| <= γ_K·M + ½·ulp(g) + U` with `K = (n − 1) + p`, `p = max(2f, r)`, and
  `U = (1 + γ_{K+1})·s·(c·n + ½·(2f − 1)·D)` where `f > 0` (else 0), `s` the data type's smallest subnormal,
  `c = ½` (2.5 for FLOAT32 quotients), and `r` the roundings a quotient weight may cost (0 but for
  AveragePoolingGrad's `dy / divisor`, 5).

Three refinements of the contract's text, each derived in docs/tolerances.md and each forced by a
legitimate implementation that the text's formula rejects:
* `p = 2f` generalises the contract's `p = 2` (which is the `f = 1` case): a separable weight
  `w = Π_a w_a` may round each factor and each product of factors once.
* `U` is gradual underflow (Higham §2.1): a product, or a weight rounded to the data type, that lands
  among the subnormals is off by up to `½·s` absolutely, not relatively (a FLOAT32 quotient by 2.5 ULP, `2.5·s`).
* `r`: a term `dy / d` that a division D3D allows within 2.5 ULP of the quotient (the two-step `dy·(1/d)`'s
  bound: a 1-ULP reciprocal, a 0.5-ULP product) is off by up to 5u relative, five roundings, where a weight that
  is a product of factors costs 2f.

`γ_K = K·u/(1 − K·u)`; a case may name K, which replaces the default K only.
"""

from __future__ import annotations

import math

import numpy as np

from dmlconform.compare.accumulation import Accumulation, ElementTerms
from dmlconform.compare.ulp import ulp_of
from dmlconform.dtypes import DataType

#: Roundings per weight factor that is not ±1: the factor itself, and the product that takes it in.
ROUNDINGS_PER_FACTOR = 2
#: How far, in units of the smallest subnormal, a quotient that lands among the subnormals may be off: D3D's 32-bit
#: division is accurate to 2.5 ULP of its result (the two-step x·(1/y) bound), and a subnormal's ULP is the smallest
#: subnormal; its 16-bit operations round to nearest (½), and other types' products do (½).
QUOTIENT_SUBNORMAL_ULPS = {DataType.FLOAT32: 2.5}


def default_k(count: np.ndarray, weight_factors: np.ndarray, quotient_roundings: np.ndarray | int = 0) -> np.ndarray:
    """K = (n − 1) + max(2f, r) per element (meaningful where n >= 1)."""
    return (count.astype(np.float64) - 1) + np.maximum(ROUNDINGS_PER_FACTOR * weight_factors, quotient_roundings)


def gamma(k: np.ndarray | float, dtype: DataType) -> np.ndarray:
    """γ_K = K·u/(1 − K·u); infinite once K·u reaches 1 (no bound is meaningful there)."""
    ku = np.asarray(k, dtype=np.float64) * dtype.unit_roundoff
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(ku < 1, ku / (1 - ku), np.inf)


def must_be_exact(count: np.ndarray, weight_factors: np.ndarray) -> np.ndarray:
    """Elements no legitimate implementation can round: nothing lands there, or one copy does."""
    return (count == 0) | ((count == 1) & (weight_factors == 0))


def allowance(golden: np.ndarray, count: np.ndarray, abs_sum: np.ndarray, weight_factors: np.ndarray,
              abs_gradient_sum: np.ndarray, dtype: DataType, k: float | None = None,
              coordinate_slack: np.ndarray | float = 0.0, coordinate_terms: np.ndarray | int = 0,
              quotient_roundings: np.ndarray | int = 0) -> np.ndarray:
    """The largest |actual − golden| the rule accepts, per element, as float64 (0 means exact).

    All arrays have the same shape; `golden` has the data type's own type. An explicit K replaces the
    default K only; the exact cases stay exact, because they do not depend on how anything is summed.

    Where ResampleGrad1's coordinates are not known exactly the element may differ by C (`coordinate_slack`), and
    what it then holds is itself a rounded sum, of up to n + m terms (`coordinate_terms`) of magnitudes up to
    M + C: there the rounding part is γ_K'·(M + C) + ½·ulp(|g| + C) with K' the default K of n + m terms, and
    no element is exact (a copy may become a sum, and an empty element may receive one).
    """
    kk = default_k(count, weight_factors, quotient_roundings) if k is None else np.full(count.shape, float(k))
    smallest = float(np.finfo(dtype.numpy).smallest_subnormal)
    weight_roundings = np.maximum(ROUNDINGS_PER_FACTOR * weight_factors - 1, 0)
    with np.errstate(invalid="ignore", over="ignore"):
        rounding = gamma(kk, dtype) * abs_sum + 0.5 * ulp_of(golden)
        # A product among the subnormals is off by up to ½s; a float32 quotient by D3D's 2.5 ULP of its own, 2.5s.
        per_term = np.where(np.asarray(quotient_roundings) > 0, QUOTIENT_SUBNORMAL_ULPS.get(dtype, 0.5), 0.5)
        underflow = (1 + gamma(kk + 1, dtype)) * smallest * (per_term * count
                                                             + 0.5 * weight_roundings * abs_gradient_sum)
        allowed = rounding + np.where(weight_factors > 0, underflow, 0.0)
        allowed = np.where(must_be_exact(count, weight_factors), 0.0, allowed)
        if np.any(coordinate_slack):
            terms = count + coordinate_terms
            moved_k = np.maximum(default_k(terms, weight_factors, quotient_roundings), kk) if k is None else kk
            largest = np.abs(golden.astype(np.float64)) + coordinate_slack
            moved = gamma(moved_k, dtype) * (abs_sum + coordinate_slack) + 0.5 * ulp_of(largest.astype(dtype.numpy)) \
                + np.where(weight_factors > 0, underflow, 0.0)
            allowed = np.where(np.asarray(coordinate_slack) > 0, np.maximum(allowed, moved), allowed)
    return allowed + coordinate_slack


def allowance_of(golden: np.ndarray, terms: Accumulation, dtype: DataType, k: float | None = None) -> np.ndarray:
    """`allowance` with the fields of accumulation data taken at the same elements as `golden` (1-D each)."""
    return allowance(golden, np.asarray(terms.count), np.asarray(terms.abs_sum), np.asarray(terms.weight_factors),
                     np.asarray(terms.abs_gradient_sum), dtype, k, np.asarray(terms.coordinate_slack),
                     np.asarray(terms.coordinate_terms), np.asarray(terms.quotient_roundings))


def allowance_at(golden: np.ndarray, accumulation: ElementTerms, shape: tuple[int, ...], where: np.ndarray | None,
                 dtype: DataType, k: float | None = None) -> np.ndarray:
    """`allowance` for the flat elements `where` (ascending; all of them when None) of an output of `shape`, reading
    the reference's accumulation data there; `golden` holds those elements' goldens."""
    flat = np.arange(math.prod(shape)) if where is None else where
    return allowance_of(golden, accumulation.at(flat, shape), dtype, k)


def explain_at(golden: np.floating, terms: Accumulation, i: int, dtype: DataType, k: float | None) -> str:
    """`explain` for element `i` of accumulation data taken by `at`."""
    def at(values: object) -> float:
        array = np.asarray(values)
        return float(array if array.ndim == 0 else array[i])  # a scalar field stands for every element

    return explain(golden, int(at(terms.count)), at(terms.abs_sum), int(at(terms.weight_factors)),
                   at(terms.abs_gradient_sum), dtype, k, at(terms.coordinate_slack), int(at(terms.coordinate_terms)),
                   int(at(terms.quotient_roundings)))


def explain(golden: np.floating, count: int, abs_sum: float, weight_factors: int, abs_gradient_sum: float,
            dtype: DataType, k: float | None, coordinate_slack: float = 0.0, coordinate_terms: int = 0,
            quotient_roundings: int = 0) -> str:
    """One line naming the branch of the rule that decided an element, with its numbers."""
    coordinates = f" + C={coordinate_slack:.3g} for coordinates, m={coordinate_terms}" if coordinate_slack else ""
    if not np.isfinite(golden):
        return "only the same infinity" if np.isinf(golden) else "NaN"
    if coordinate_slack:
        limit = float(allowance(np.array([golden], dtype=dtype.numpy), np.array([count]), np.array([abs_sum]),
                                np.array([weight_factors]), np.array([abs_gradient_sum]), dtype, k,
                                np.array([coordinate_slack]), np.array([coordinate_terms]),
                                np.array([quotient_roundings]))[0])
        return f"|err| <= {limit:.6g} (terms may move here{coordinates}, n={count}, M={abs_sum:.6g})"
    if count == 0:
        return "±0 (no term lands here)"
    if count == 1 and weight_factors == 0:
        return "exact (one copy, weight ±1)"
    kk = float(default_k(np.array([count]), np.array([weight_factors]), quotient_roundings)[0]) if k is None \
        else float(k)
    limit = float(allowance(np.array([golden], dtype=dtype.numpy), np.array([count]), np.array([abs_sum]),
                            np.array([weight_factors]), np.array([abs_gradient_sum]), dtype, k,
                            quotient_roundings=np.array([quotient_roundings]))[0])
    return f"|err| <= {limit:.6g} (γ_K·M + ½ulp(g), K={kk:g}, n={count}, M={abs_sum:.6g})"
