"""The `bound` rule of contract v1.1 (§3), element by element. Derivation: docs/tolerances.md.

For an element with `n` terms `t_i = w_i·dy_i`, float64 sum `v`, `M = Σ|t_i|` and golden `g = fl(v)`:

* `n = 0`: only ±0 is right; nothing may appear where nothing lands.
* `n = 1` with weight ±1: the element is a copy, which no legitimate implementation can round: exact.
* otherwise `|actual − g| <= γ_K·M + ½·ulp(g)`, `γ_K = K·u/(1 − K·u)`, `K = (n − 1) + p` with `p = 0`
  when every weight is ±1 and 2 otherwise, unless the case names K.

`γ_K·M` covers any summation order, accumulation in the data type or wider, fused multiply-add, the
weight rounded to the data type and each product rounded once (Higham, *Accuracy and Stability of
Numerical Algorithms*, §3.1 and §4.2); `½·ulp(g)` covers the golden's own single rounding.
"""

from __future__ import annotations

import numpy as np

from dmlconform.compare.ulp import ulp_of
from dmlconform.dtypes import DataType

#: p in K = (n − 1) + p for a term whose weight is not ±1: the weight may be rounded, then the product.
WEIGHT_ROUNDINGS = 2


def default_k(count: np.ndarray, unit_weights: np.ndarray) -> np.ndarray:
    """K = (n − 1) + p per element (meaningful where n >= 1)."""
    return (count.astype(np.float64) - 1) + np.where(unit_weights, 0, WEIGHT_ROUNDINGS)


def gamma(k: np.ndarray | float, dtype: DataType) -> np.ndarray:
    """γ_K = K·u/(1 − K·u); infinite once K·u reaches 1 (no bound is meaningful there)."""
    ku = np.asarray(k, dtype=np.float64) * dtype.unit_roundoff
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(ku < 1, ku / (1 - ku), np.inf)


def must_be_exact(count: np.ndarray, unit_weights: np.ndarray) -> np.ndarray:
    """Elements no legitimate implementation can round: nothing lands there, or one copy does."""
    return (count == 0) | ((count == 1) & unit_weights)


def allowance(golden: np.ndarray, count: np.ndarray, abs_sum: np.ndarray, unit_weights: np.ndarray,
              dtype: DataType, k: float | None = None) -> np.ndarray:
    """The largest |actual − golden| the rule accepts, per element, as float64 (0 means exact).

    All arrays have the same shape. An explicit K replaces the default K only; the exact cases stay
    exact, because they do not depend on how an implementation sums.
    """
    kk = default_k(count, unit_weights) if k is None else np.full(count.shape, float(k))
    with np.errstate(invalid="ignore", over="ignore"):
        allowed = gamma(kk, dtype) * abs_sum + 0.5 * ulp_of(golden)
    return np.where(must_be_exact(count, unit_weights), 0.0, allowed)


def explain(golden: float, count: int, abs_sum: float, unit: bool, dtype: DataType, k: float | None) -> str:
    """One line naming the branch of the rule that decided an element, with its numbers."""
    if count == 0:
        return "±0 (no term lands here)"
    if count == 1 and unit:
        return "exact (one copy, weight ±1)"
    kk = float(default_k(np.array([count]), np.array([unit]))[0]) if k is None else float(k)
    limit = float(allowance(np.array([golden]), np.array([count]), np.array([abs_sum]), np.array([unit]),
                            dtype, k)[0])
    return f"|err| <= {limit:.6g} (γ_K·M + ½ulp, K={kk:g}, n={count}, M={abs_sum:.6g})"
