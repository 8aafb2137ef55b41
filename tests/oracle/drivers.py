"""Simulated drivers: the five operators derived a second time from the seed pages, with knobs.

Nothing here imports `dmlconform.ops`' references: each operator is written again, as plain loops over
the gradient's elements (the way a shader thread per element would see it), from the DirectML pages
and contract §1. A driver is a `Knobs` value:

* *legitimate variants* change only what the pages and contract §3 leave to the implementation (the
  order and precision of sums, FMA, how weights are rounded, the sign of a zero, which candidate an
  undocumented behaviour follows). Each must pass every bundled case.
* *bugs* (`bug=`) are mistakes a real driver could make. Each must fail at least one bundled case.

A driver runs through the real runner as an in-process backend (`SimulatedDriver`), so what the
mutation figure measures is what `dmlconform run` would report.

The one thing borrowed from the package is description validation (`case.op.validate`): a driver must
refuse what DirectML refuses, and the validation rules are tested on their own (tests/ops/
test_description_rules.py). Bugs that skip validation are listed as such.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

import numpy as np

from dmlconform.backends.base import BackendInfo, Outcome
from dmlconform.case import Case
from dmlconform.feature_levels import HIGHEST
from dmlconform.ops._resample_coordinates import inverts_exactly
from dmlconform.ops.base import DescriptionError
from tests.oracle.arithmetic import Summation, Weight, exact, round_fraction, weight_value

Terms = list[tuple[Weight, np.floating]]


@dataclass(frozen=True)
class Knobs:
    name: str
    summary: str
    summation: Summation = field(default_factory=Summation)
    #: The zero written where the pages say 0 (untouched elements, deselected gradients).
    zero: float = 0.0
    # Which candidate each undocumented behaviour follows (contract §2).
    relu_nan: str = "nan-zero"  # X = NaN: `X > 0 ? dY : 0` gives 0; `X <= 0 ? 0 : dY` passes dY
    clip_nan: str = "nan-passes"  # the documented `X <= Min or X >= Max ? 0 : dY` passes dY
    pool_nan: str = "nan-sticks"  # strict `>` scan
    pool_padding_only: str = "dropped"  # a window with no tap inside the input
    resample_offsets: str = "literal"
    zero_weight_taps: str = "skipped"  # LINEAR taps of weight 0 over an infinite or NaN gradient
    #: preserved; flushed (every input and result); or flushed-in-arithmetic (D3D11's rule: flushed where compared
    #: or summed, kept where only moved, as by ReluGrad's and ClipGrad1's select: what an H100 does).
    fp32_denormals: str = "preserved"
    #: How an fp16 result leaves a wider sum: nearest (IEEE), or toward-zero (D3D's float conversion rule: round
    #: toward zero, a finite value past the range becomes the largest finite one, as DirectML does).
    fp16_conversion: str = "nearest"
    #: How the ResampleGrad1 source coordinate is evaluated in float32 (its order is undocumented).
    coordinates: str = "division"
    #: MaxPoolingGrad with a gradient that is not the pooled size: computed, or refused (DirectML 1.15.4).
    pool_gradient_size: str = "computed"
    #: A named mistake (see BUGS); None for a legitimate driver.
    bug: str | None = None

    @property
    def legitimate(self) -> bool:
        return self.bug is None


class SimulatedDriver:
    """An in-process backend that runs a Knobs driver."""

    thread_safe = True

    def __init__(self, knobs: Knobs) -> None:
        self.knobs = knobs
        self.name = f"simulated:{knobs.name}"

    def info(self) -> BackendInfo:
        return BackendInfo(self.name, "test", "simulated driver", HIGHEST, "claims every level")

    def close(self) -> None:
        pass

    def run(self, case: Case) -> Outcome:
        refusal = self._refusal(case)
        if refusal is not None:
            return Outcome.refused(refusal)
        compute = _OPERATORS[case.op.name]
        output = compute(self.knobs, case.description.params, case.inputs, case.description.output.shape)
        if self.knobs.bug == "fp16-denormals-flushed" and output.dtype == np.float16:
            output = np.where(np.abs(output) < np.finfo(np.float16).tiny, np.float16(0), output)
        return Outcome.ran({"OutputGradientTensor": output})

    def _refusal(self, case: Case) -> str | None:
        bug = self.knobs.bug
        dtype = case.dtype
        if bug == "integer-sums-saturate" and case.op.name in _SUMMING and not dtype.is_float and dtype.bits <= 32:
            return None  # the driver has (saturating) integer paths for the summing operators
        if bug == "clip-refuses-min-above-max" and case.op.name == "ELEMENT_WISE_CLIP_GRAD1":
            params = case.description.params
            if _scalar(params["Min"], dtype.numpy) > _scalar(params["Max"], dtype.numpy):
                return "Min > Max"
        if bug == "slice-accepts-zero-stride" and case.op.name == "SLICE_GRAD" and 0 in \
                case.description.params["InputWindowStrides"]:
            return None
        try:
            case.op.validate(case.description)
        except DescriptionError as exc:
            return str(exc)
        if self.knobs.pool_gradient_size == "refused" and case.op.name == "MAX_POOLING_GRAD" \
                and not _gradient_is_pooled_size(case):
            return "InputGradientTensor.Sizes: not the pooled size"
        return None


def _gradient_is_pooled_size(case: Case) -> bool:
    p = case.description.params
    x = case.description.tensors["InputTensor"].shape[2:]
    dy = case.description.tensors["InputGradientTensor"].shape[2:]
    return all(dy[d] == (x[d] + p["StartPadding"][d] + p["EndPadding"][d]
                         - ((p["WindowSize"][d] - 1) * p["Dilations"][d] + 1)) // p["Strides"][d] + 1
               for d in range(len(x)))


_SUMMING = ("MAX_POOLING_GRAD", "RESAMPLE_GRAD1")


# -- helpers shared by the operators ---------------------------------------------------------------------------
def _scalar(value: Any, dtype: np.dtype) -> np.generic:
    return np.asarray(value).astype(dtype)[()]


def _flushes(knobs: Knobs, dtype: np.dtype, arithmetic: bool) -> bool:
    if dtype != np.float32:
        return False
    return knobs.fp32_denormals == "flushed" or (knobs.fp32_denormals == "flushed-in-arithmetic" and arithmetic)


def _flush(values: np.ndarray, knobs: Knobs, arithmetic: bool = True) -> np.ndarray:
    """D3D's fp32 denormal rule when flushing: a denormal becomes a zero of its sign. `arithmetic`: the values
    are compared or summed (False where they are only moved)."""
    if not _flushes(knobs, values.dtype, arithmetic):
        return values
    tiny = (values != 0) & (np.abs(values) < np.finfo(np.float32).tiny)
    return np.where(tiny, np.copysign(np.float32(0), values), values).astype(values.dtype)


def _zeros(shape: tuple[int, ...], dtype: np.dtype, knobs: Knobs) -> np.ndarray:
    if knobs.bug == "slice-no-zero-fill":
        return np.frombuffer(b"\xab" * (int(np.prod(shape)) * dtype.itemsize), dtype=dtype).reshape(shape).copy()
    return np.full(shape, knobs.zero if dtype.kind == "f" else 0, dtype=dtype)


def _one_ulp_up(value: np.floating) -> np.floating:
    with np.errstate(over="ignore"):  # the largest finite value steps up to infinity: still a wrong copy
        return np.nextafter(value, value.dtype.type(np.inf))


def _through_float64(values: np.ndarray, knobs: Knobs) -> np.ndarray:
    """The `int64-through-float64` bug: 64-bit integers copied through a double."""
    if knobs.bug == "int64-through-float64" and values.dtype.kind in "iu" and values.dtype.itemsize == 8:
        with np.errstate(over="ignore", invalid="ignore"):
            return values.astype(np.float64).astype(values.dtype)
    return values


def _fp16_result(value: np.floating, terms: Terms, knobs: Knobs) -> np.floating:
    """Bugs in how a float16 result is produced from its sum."""
    if value.dtype != np.float16 or (knobs.bug != "fp16-double-rounding" and knobs.fp16_conversion == "nearest"):
        return value
    if not all(np.isfinite(v) for _, v in terms):
        return value
    exact_sum = sum((weight_value(w) * exact(v) for w, v in terms), Fraction(0))
    if knobs.bug == "fp16-double-rounding":
        return round_fraction(exact(round_fraction(exact_sum, np.dtype(np.float32))), np.dtype(np.float16))
    # Truncation (round toward zero) never overflows: a sum past the largest fp16 value gives that value.
    nearest = round_fraction(exact_sum, np.dtype(np.float16))
    if not np.isfinite(nearest) or abs(exact(nearest)) > abs(exact_sum):
        return np.nextafter(nearest, np.float16(0))
    return nearest


def _finish_sums(terms_per_element: dict[int, Terms], shape: tuple[int, ...], dtype: np.dtype,
                 knobs: Knobs) -> np.ndarray:
    out = _zeros(shape, dtype, knobs).ravel()
    if knobs.bug == "denormal-where-nothing-lands":
        empty = [i for i in range(out.size) if i not in terms_per_element]
        if empty:
            out[empty[0]] = np.finfo(dtype).smallest_subnormal
    copied_one = False
    for index in sorted(terms_per_element):
        terms = terms_per_element[index]
        if dtype.kind in "iu":  # only a driver that wrongly accepts integer types gets here
            info = np.iinfo(dtype)
            out[index] = min(max(sum(int(v) for _, v in terms), info.min), info.max)
            continue
        value = knobs.summation.total(terms, dtype)
        value = _fp16_result(value, terms, knobs)
        if knobs.bug == "one-ulp-on-a-copy" and not copied_one and len(terms) == 1 and weight_value(terms[0][0]) == 1 \
                and np.isfinite(value) and value != 0:
            value, copied_one = _one_ulp_up(value), True
        out[index] = value
    return _flush(out.reshape(shape), knobs)


# -- ACTIVATION_RELU_GRAD ----------------------------------------------------------------------------------------
def relu_grad(knobs: Knobs, params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
              shape: tuple[int, ...]) -> np.ndarray:
    x, dy = _flush(inputs["InputTensor"], knobs), _flush(inputs["InputGradientTensor"], knobs, arithmetic=False)
    x, dy = _through_float64(x, knobs), _through_float64(dy, knobs)
    out = _zeros(shape, dy.dtype, knobs)
    zero = out.dtype.type(knobs.zero if out.dtype.kind == "f" else 0)
    for i in np.ndindex(shape):
        xi, gi = x[i], dy[i]
        if knobs.bug == "relu-ge":
            keep = xi >= 0
        elif knobs.bug == "relu-reads-gradient":
            keep = gi > 0
        elif knobs.relu_nan == "nan-passes":
            keep = not xi <= 0
        else:
            keep = xi > 0
        if knobs.bug == "relu-multiplies-by-mask":
            with np.errstate(invalid="ignore"):
                out[i] = gi * out.dtype.type(keep)
        else:
            out[i] = gi if keep else zero
    if knobs.bug == "one-ulp-on-a-copy":
        _bump_first_copy(out)
    return _flush(out, knobs, arithmetic=knobs.bug == "relu-multiplies-by-mask")


def _bump_first_copy(out: np.ndarray) -> None:
    flat = out.reshape(-1)
    for j in range(flat.size):
        if out.dtype.kind == "f" and np.isfinite(flat[j]) and flat[j] != 0:
            flat[j] = _one_ulp_up(flat[j])
            return


# -- ELEMENT_WISE_CLIP_GRAD1 -------------------------------------------------------------------------------------
def clip_grad1(knobs: Knobs, params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
               shape: tuple[int, ...]) -> np.ndarray:
    x, dy = _flush(inputs["InputTensor"], knobs), _flush(inputs["InputGradientTensor"], knobs, arithmetic=False)
    dy = _through_float64(dy, knobs)
    # Min and Max are compared as X is: a flush of the comparison's inputs flushes them too.
    low, high = (_flush(np.asarray(_scalar(params[n], x.dtype)), knobs)[()] for n in ("Min", "Max"))
    if knobs.bug == "clip-min-max-swapped":
        low, high = high, low
    if knobs.bug == "clip-compares-in-float32":
        x, low, high = x.astype(np.float32), np.float32(low), np.float32(high)
    if knobs.bug == "int64-through-float64" and x.dtype.kind in "iu" and x.dtype.itemsize == 8:
        x, low, high = x.astype(np.float64), np.float64(low), np.float64(high)
    out = _zeros(shape, dy.dtype, knobs)
    zero = out.dtype.type(knobs.zero if out.dtype.kind == "f" else 0)
    for i in np.ndindex(shape):
        xi = x[i]
        below = xi < low if knobs.bug == "clip-passes-at-min" else xi <= low
        above = xi > high if knobs.bug == "clip-passes-at-max" else xi >= high
        keep = (xi > low) & (xi < high) if knobs.clip_nan == "nan-zero" else not (below or above)
        out[i] = dy[i] if keep else zero
    return _flush(out, knobs, arithmetic=False)


# -- SLICE_GRAD --------------------------------------------------------------------------------------------------
def slice_grad(knobs: Knobs, params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
               shape: tuple[int, ...]) -> np.ndarray:
    dy = _through_float64(inputs["InputGradientTensor"], knobs)
    out = _zeros(shape, dy.dtype, knobs)
    offsets, sizes, strides = (params[n] for n in ("InputWindowOffsets", "InputWindowSizes", "InputWindowStrides"))
    for c in np.ndindex(dy.shape):
        target = []
        for d, (offset, size, stride) in enumerate(zip(offsets, sizes, strides, strict=True)):
            if knobs.bug == "slice-negative-stride-starts-at-offset" or (knobs.bug == "slice-ignores-stride-sign"):
                start = offset
            else:
                start = offset if stride > 0 else offset + size - 1
            step = abs(stride) if knobs.bug == "slice-ignores-stride-sign" else stride
            if knobs.bug == "slice-accepts-zero-stride" and step == 0:
                step = 1
            position = start + step * c[d]
            if knobs.bug == "slice-offset-off-by-one":
                position += 1
            target.append(position % shape[d])
        out[tuple(target)] = dy[c]
    if knobs.bug == "one-ulp-on-a-copy":
        _bump_first_copy(out)
    return out


# -- MAX_POOLING_GRAD --------------------------------------------------------------------------------------------
def _window_taps(knobs: Knobs, o: tuple[int, ...], params: Mapping[str, Any], spatial: tuple[int, ...]
                 ) -> Iterator[tuple[tuple[int, ...], bool]]:
    """Each tap of window `o` in row-major order: its position and whether it lies inside the input."""
    strides = list(params["Strides"])
    if knobs.bug == "pool-strides-swapped-between-axes":
        strides = strides[::-1]
    dilations = [1] * len(spatial) if knobs.bug == "pool-dilation-ignored" else params["Dilations"]
    start = [0] * len(spatial) if knobs.bug == "pool-start-padding-ignored" else params["StartPadding"]
    for k in itertools.product(*(range(w) for w in params["WindowSize"])):
        p = tuple(o[d] * strides[d] - start[d] + k[d] * dilations[d] for d in range(len(spatial)))
        inside = all(0 <= p[d] < spatial[d] for d in range(len(spatial)))
        if knobs.bug == "pool-negative-tap-wraps" and all(-spatial[d] <= p[d] < spatial[d] for d in range(len(p))):
            p, inside = tuple(p[d] % spatial[d] for d in range(len(p))), True
        yield p, inside


def _better(v: np.floating, best: np.floating | None, knobs: Knobs) -> bool:
    if best is None:
        return True
    if knobs.bug == "pool-ties-go-to-last":
        return bool(v >= best) or (knobs.pool_nan != "nan-sticks" and bool(np.isnan(v)))
    rule = knobs.pool_nan
    if rule == "nan-wins":
        return bool(v > best) or (bool(np.isnan(v)) and not bool(np.isnan(best)))
    if rule == "nan-wins-last":
        return bool(v > best) or bool(np.isnan(v))
    if rule == "nan-ignored":
        return bool(v > best) or (bool(np.isnan(best)) and not bool(np.isnan(v)))
    return bool(v > best)


def max_pooling_grad(knobs: Knobs, params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
                     shape: tuple[int, ...]) -> np.ndarray:
    x, dy = (_flush(inputs[n], knobs) for n in ("InputTensor", "InputGradientTensor"))
    spatial = x.shape[2:]
    windows = dy.shape[2:]
    if knobs.bug in ("pool-end-padding-ignored", "pool-gradient-beyond-pooled-size-ignored"):
        end = [0] * len(spatial) if knobs.bug == "pool-end-padding-ignored" else params["EndPadding"]
        windows = tuple(min(windows[d], max(0, (spatial[d] + params["StartPadding"][d] + end[d]
                                                 - ((params["WindowSize"][d] - 1) * params["Dilations"][d] + 1))
                                           // params["Strides"][d] + 1)) for d in range(len(spatial)))
    terms: dict[int, Terms] = {}
    with np.errstate(invalid="ignore"):
        for n, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
            for o in itertools.product(*(range(w) for w in windows)):
                winner, best = None, None
                first_tap = None
                for p, inside in _window_taps(knobs, o, params, spatial):
                    first_tap = p if first_tap is None else first_tap
                    if not inside and knobs.bug != "pool-padding-competes":
                        continue
                    value = x[(n, c, *p)] if inside else x.dtype.type(0)
                    if _better(value, best, knobs):
                        winner, best = (p if inside else None), value
                if winner is None and knobs.pool_padding_only == "edge-clamped" and first_tap is not None \
                        and best is None:
                    winner = tuple(min(max(first_tap[d], 0), spatial[d] - 1) for d in range(len(spatial)))
                if winner is None:
                    continue
                flat = int(np.ravel_multi_index((n, c, *winner), x.shape))
                term = ((Fraction(1),), dy[(n, c, *o)])
                if knobs.bug == "pool-overlaps-overwrite":
                    terms[flat] = [term]
                else:
                    terms.setdefault(flat, []).append(term)
    return _finish_sums(terms, shape, dy.dtype, knobs)


# -- RESAMPLE_GRAD1 ----------------------------------------------------------------------------------------------
def _coordinate(knobs: Knobs, o: int, scale: float, ipo: float, opo: float, n_in: int, n_out: int,
                mode: str) -> float:
    """The forward's source coordinate for output `o`, as the driver computes it (float32 by the contract)."""
    f = np.float64 if knobs.bug == "resample-coordinate-in-float64" else np.float32
    if knobs.bug == "resample-offsets-ignored":
        ipo = opo = 0.0
    if knobs.bug == "resample-offset-signs-flipped":
        ipo, opo = -ipo, -opo
    if knobs.bug == "resample-scale-from-sizes":
        scale = n_out / n_in
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if knobs.bug == "resample-scale-inverted":
            x = (f(o) - f(opo)) * f(scale) - f(ipo)
        elif knobs.bug == "resample-half-pixel-off":
            x = (f(o) + f(0.5) - f(opo)) / f(scale) - f(0.5) - f(ipo)
        elif knobs.coordinates == "reciprocal" or (knobs.coordinates == "linear-reciprocal-1-ulp"
                                                    and mode == "LINEAR"):
            r = f(1) / f(scale)  # (o − OPO)·(1/S) − IPO, 1/S a float32 constant
            if knobs.coordinates == "linear-reciprocal-1-ulp" and not inverts_exactly(scale):
                r = np.nextafter(r, f(np.inf))  # D3D's reciprocal is 1 ULP: one ULP high where 1/S rounds
            x = (f(o) - f(opo)) * r - f(ipo)
        elif knobs.coordinates in ("division-low", "division-high") and np.isfinite(f(scale)) \
                and np.isfinite(f(opo)):
            # D3D allows a float32 division 2.5 ULP: an inexact quotient 2 ULP from the nearest float32, toward
            # zero or away; an exact one exact (as both real stacks keep it).
            shifted = f(o) - f(opo)
            quotient = exact(shifted) / exact(f(scale))
            q = round_fraction(quotient, np.dtype(np.float32))
            if exact(q) != quotient:
                toward = f(0) if knobs.coordinates == "division-low" else f(np.inf) * np.sign(q)
                q = np.nextafter(np.nextafter(q, toward), toward)
            x = q - f(ipo)
        elif knobs.coordinates == "folded":  # o·(1/S) − (OPO·(1/S) + IPO): offsets folded into one bias
            r = f(1) / f(scale)
            x = f(o) * r - (f(opo) * r + f(ipo))
        elif knobs.coordinates == "divided-bias":  # o/S − (OPO/S + IPO)
            x = f(o) / f(scale) - (f(opo) / f(scale) + f(ipo))
        else:
            x = (f(o) - f(opo)) / f(scale) - f(ipo)
    return float(x)


def _axis_taps(knobs: Knobs, x: float, n_in: int, mode: str, rounding: str) -> list[tuple[int, Fraction]]:
    """The forward's taps along one axis for coordinate x: (input index, weight), clamped to the edge."""
    if not np.isfinite(x):  # an infinite coordinate (an infinite scale or offset) is beyond an edge;
        x = 0.0 if np.isnan(x) else min(max(x, -1.0), float(n_in))  # a buggy NaN one lands somewhere

    def clamp(i: int) -> int | None:
        if knobs.bug == "resample-edge-taps-dropped" and not 0 <= i < n_in:
            return None
        return min(max(i, 0), n_in - 1)

    if mode == "NEAREST_NEIGHBOR":
        if knobs.bug == "resample-nearest-rounds-half-even":
            pick = int(np.rint(x))
        else:
            increasing = rounding == "INCREASING"
            if knobs.bug == "resample-rounding-swapped":
                increasing = not increasing
            pick = int(np.ceil(x)) if increasing else int(np.floor(x))
        index = clamp(pick)
        return [] if index is None else [(index, Fraction(1))]
    low = int(np.floor(x))
    t = exact(x) - low
    weights = (t, 1 - t) if knobs.bug == "resample-linear-weights-swapped" else (1 - t, t)
    taps = []
    for position, weight in zip((low, low + 1), weights, strict=True):
        index = clamp(position)
        if index is not None and (weight != 0 or knobs.zero_weight_taps == "read"):
            taps.append((index, weight))
    return taps


def resample_grad1(knobs: Knobs, params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
                   shape: tuple[int, ...]) -> np.ndarray:
    dy = _flush(inputs["InputGradientTensor"], knobs)
    mode, rounding = params["InterpolationMode"], params["RoundingDirection"]
    scales = list(params["Scales"])
    ipo, opo = list(params["InputPixelOffsets"]), list(params["OutputPixelOffsets"])
    if knobs.resample_offsets == "swapped":
        ipo, opo = opo, ipo
    if knobs.bug == "resample-axes-reversed":
        scales, ipo, opo = scales[::-1], ipo[::-1], opo[::-1]
    per_axis = []
    for a, (n_in, n_out) in enumerate(zip(shape, dy.shape, strict=True)):
        per_axis.append([_axis_taps(knobs, _coordinate(knobs, o, scales[a], ipo[a], opo[a], n_in, n_out, mode),
                                    n_in, mode, rounding) for o in range(n_out)])
    terms: dict[int, Terms] = {}
    for o in np.ndindex(dy.shape):
        for combination in itertools.product(*(per_axis[a][o[a]] for a in range(len(shape)))):
            weight = tuple(w for _, w in combination)
            flat = int(np.ravel_multi_index(tuple(i for i, _ in combination), shape))
            terms.setdefault(flat, []).append((weight, dy[o]))
    return _finish_sums(terms, shape, dy.dtype, knobs)


_OPERATORS = {
    "ACTIVATION_RELU_GRAD": relu_grad,
    "ELEMENT_WISE_CLIP_GRAD1": clip_grad1,
    "SLICE_GRAD": slice_grad,
    "MAX_POOLING_GRAD": max_pooling_grad,
    "RESAMPLE_GRAD1": resample_grad1,
}


# -- the catalogue -----------------------------------------------------------------------------------------------
STRAIGHT = Knobs("straight", "every sum exact, rounded once (the contract's model, written again)")

LEGITIMATE: tuple[Knobs, ...] = (
    STRAIGHT,
    Knobs("reverse-order", "sums in reverse order", Summation(order="reverse")),
    Knobs("pairwise-order", "pairwise (tree) summation", Summation(order="pairwise")),
    Knobs("accumulate-in-data-type", "products and partial sums rounded to the data type (fp16 in fp16)",
          Summation(accumulate="data")),
    Knobs("accumulate-in-data-type-reverse", "the same, in reverse order", Summation(order="reverse", accumulate="data")),
    Knobs("accumulate-in-data-type-pairwise", "the same, pairwise", Summation(order="pairwise", accumulate="data")),
    Knobs("accumulate-in-float32", "fp16 data summed in fp32, rounded once at the end",
          Summation(accumulate="float32")),
    Knobs("fma-in-data-type", "acc = fma(w, dy, acc) in the data type", Summation(accumulate="data", fma=True)),
    Knobs("fma-in-float32", "acc = fma(w, dy, acc) in fp32", Summation(accumulate="float32", fma=True)),
    Knobs("weights-in-float32", "resample weights computed and multiplied in fp32",
          Summation(accumulate="float32", weights="float32")),
    Knobs("weights-in-data-type", "resample weights rounded to the data type, products and sums too",
          Summation(accumulate="data", weights="data")),
    Knobs("per-axis-weights-in-float32", "separable weights: per-axis factors multiplied in fp32, sums in fp32",
          Summation(accumulate="float32", weights="per-axis-float32")),
    Knobs("per-axis-weights-in-data-type", "separable weights: per-axis factors multiplied in the data type",
          Summation(accumulate="data", weights="per-axis-data")),
    Knobs("negative-zeros", "-0 written wherever the pages say 0", zero=-0.0),
    Knobs("other-nan-readings", "ReluGrad passes dY at NaN, ClipGrad1 zeroes it, MaxPoolingGrad's last NaN wins",
          relu_nan="nan-passes", clip_nan="nan-zero", pool_nan="nan-wins-last"),
    Knobs("first-nan-wins", "MaxPoolingGrad: the first NaN of a window wins", pool_nan="nan-wins"),
    Knobs("nan-ignored", "MaxPoolingGrad: NaN wins only if every tap is NaN (HLSL max)", pool_nan="nan-ignored"),
    Knobs("edge-clamped-windows", "padding-only windows send their gradient to the nearest edge element",
          pool_padding_only="edge-clamped"),
    Knobs("swapped-offsets", "ResampleGrad1 reads its offsets with the other convention", resample_offsets="swapped"),
    Knobs("zero-weight-taps-read", "LINEAR taps of weight 0 are multiplied anyway (0·inf = NaN)",
          zero_weight_taps="read"),
    Knobs("fp32-denormals-flushed", "fp32 denormal inputs and results flushed to signed zero (D3D allows it)",
          fp32_denormals="flushed"),
    Knobs("fp32-denormals-flushed-in-arithmetic", "fp32 denormals flushed where compared or summed, kept where a "
          "select only moves them (D3D11's rule; DirectML on an H100)", fp32_denormals="flushed-in-arithmetic"),
    Knobs("fp16-sums-converted-toward-zero", "fp16 sums accumulated wider, converted by D3D's rule (toward zero, "
          "a finite sum past 65504 gives 65504; DirectML on lavapipe and an H100)", fp16_conversion="toward-zero"),
    Knobs("coordinates-by-reciprocal", "ResampleGrad1 coordinates as (o − OPO)·(1/S) − IPO, sums in fp32",
          Summation(accumulate="float32"), coordinates="reciprocal"),
    Knobs("coordinates-folded", "ResampleGrad1 coordinates as o·(1/S) − (OPO·(1/S) + IPO)", coordinates="folded"),
    Knobs("coordinates-division-2-ulp-low", "ResampleGrad1 coordinates by a division 2 ULP toward zero where the "
          "quotient is inexact (D3D allows 2.5 ULP)", coordinates="division-low"),
    Knobs("coordinates-division-2-ulp-high", "ResampleGrad1 coordinates by a division 2 ULP away from zero where the "
          "quotient is inexact (D3D allows 2.5 ULP)", coordinates="division-high"),
    Knobs("coordinates-divided-bias", "ResampleGrad1 coordinates as o/S − (OPO/S + IPO)",
          coordinates="divided-bias"),
    Knobs("linear-coordinates-by-a-1-ulp-reciprocal", "ResampleGrad1 LINEAR coordinates as (o − OPO)·r − IPO with r "
          "one ULP above the float32 1/S (D3D's reciprocal is 1 ULP), even where the quotient is a float32 value "
          "(DirectML 1.15.4's LINEAR weights on lavapipe)", coordinates="linear-reciprocal-1-ulp"),
    Knobs("refuses-gradient-not-pooled-size", "MaxPoolingGrad refuses a gradient that is not the pooled size "
          "(as DirectML 1.15.4 does)", pool_gradient_size="refused"),
)

#: Each bug: (name, what a real driver would have done).
BUGS: tuple[tuple[str, str], ...] = (
    ("relu-ge", "ReluGrad passes the gradient at X = 0 (`>=`)"),
    ("clip-passes-at-min", "ClipGrad1 passes the gradient at X = Min"),
    ("clip-passes-at-max", "ClipGrad1 passes the gradient at X = Max"),
    ("clip-min-max-swapped", "ClipGrad1 reads Min as Max and Max as Min"),
    ("slice-negative-stride-starts-at-offset", "SliceGrad starts a negative-stride window at its offset"),
    ("slice-no-zero-fill", "SliceGrad leaves untouched output elements as they were"),
    ("slice-offset-off-by-one", "SliceGrad writes one element past each position"),
    ("pool-ties-go-to-last", "MaxPoolingGrad sends ties to the last index (`>=`)"),
    ("pool-padding-competes", "MaxPoolingGrad lets a padding tap (value 0) win"),
    ("pool-dilation-ignored", "MaxPoolingGrad ignores Dilations"),
    ("pool-overlaps-overwrite", "MaxPoolingGrad overwrites instead of adding where windows overlap"),
    ("pool-end-padding-ignored", "MaxPoolingGrad sizes its loop without EndPadding, dropping the last windows"),
    ("pool-strides-swapped-between-axes", "MaxPoolingGrad applies the strides to the wrong axes"),
    ("resample-rounding-swapped", "ResampleGrad1 swaps INCREASING and DECREASING"),
    ("resample-offsets-ignored", "ResampleGrad1 ignores both pixel offsets"),
    ("resample-offset-signs-flipped", "ResampleGrad1 adds the offsets it should subtract"),
    ("resample-linear-weights-swapped", "ResampleGrad1 gives weight t to floor(x) and 1 - t to floor(x) + 1"),
    ("resample-edge-taps-dropped", "ResampleGrad1 drops taps outside the input instead of clamping them"),
    ("resample-half-pixel-off", "ResampleGrad1 adds ONNX's half-pixel shift on top of DML's offsets"),
    ("resample-scale-inverted", "ResampleGrad1 multiplies by the scale instead of dividing"),
    ("one-ulp-on-a-copy", "one copied element comes out 1 ULP high"),
    ("denormal-where-nothing-lands", "the smallest denormal appears in an element nothing reaches"),
    ("int64-through-float64", "64-bit integers are copied and compared through a double"),
    ("integer-sums-saturate", "the summing operators accept integer types (and saturate their sums)"),
    # Our own: mistakes a real driver could make, beyond the list.
    ("relu-multiplies-by-mask", "ReluGrad computes dY·(X > 0): NaN and inf gradients leak where X <= 0"),
    ("relu-reads-gradient", "ReluGrad tests the gradient's sign instead of X's"),
    ("clip-compares-in-float32", "ClipGrad1 compares integers after converting them to float32"),
    ("clip-refuses-min-above-max", "ClipGrad1 refuses Min > Max, which the pages define (every element 0)"),
    ("slice-ignores-stride-sign", "SliceGrad walks negative strides forwards"),
    ("slice-accepts-zero-stride", "SliceGrad accepts stride 0 instead of refusing it"),
    ("pool-start-padding-ignored", "MaxPoolingGrad ignores StartPadding"),
    ("pool-negative-tap-wraps", "MaxPoolingGrad indexes a tap before the input from the other end"),
    ("pool-gradient-beyond-pooled-size-ignored", "MaxPoolingGrad ignores dY elements past the pooled size"),
    ("resample-nearest-rounds-half-even", "ResampleGrad1 NEAREST rounds to nearest instead of floor/ceil"),
    ("resample-axes-reversed", "ResampleGrad1 applies each axis' scale and offsets to the mirrored axis"),
    ("resample-scale-from-sizes", "ResampleGrad1 derives the scale from the tensor sizes"),
    ("fp16-denormals-flushed", "fp16 denormals flushed to zero (D3D requires them preserved)"),
)

#: Mistakes that no rule accepting the legitimate variants can catch, with the reason (docs/tolerances.md §6).
INSIDE_THE_BOUND: tuple[tuple[str, str, str], ...] = (
    ("fp16-double-rounding", "fp16 sums rounded to fp32, then to fp16",
     "this is what `accumulate-in-float32` does to its last partial sum; wherever it differs from the golden "
     "the element has n >= 2 or a weight that rounds, and the contract lets such an element be 1 ULP off"),
    ("resample-coordinate-in-float64", "ResampleGrad1 computes coordinates in float64 instead of float32",
     "D3D's float32 division may be 2.5 ULP off, so a float32 coordinate may land wherever the float64 one does: "
     "the two differ only within γ_7·A of an integer, where a NEAREST pick is open and a LINEAR weight has slack "
     "(an H100 picked as float64 would at x = 0.5/0.33333334 + 0.5; docs/tolerances.md §5b)"),
)


#: Which operators' code reads each knob (see the functions above): a driver that differs from `straight` only in
#: knobs an operator never reads computes exactly what `straight` computes for that operator, so running it there
#: proves nothing new. Every knob is listed; tests/oracle/test_mutants.py checks that.
_ALL = frozenset({"ACTIVATION_RELU_GRAD", "ELEMENT_WISE_CLIP_GRAD1", "SLICE_GRAD", "MAX_POOLING_GRAD",
                  "RESAMPLE_GRAD1"})
KNOB_OPERATORS: dict[str, frozenset[str]] = {
    "summation": frozenset(_SUMMING),
    "zero": _ALL,
    "relu_nan": frozenset({"ACTIVATION_RELU_GRAD"}),
    "clip_nan": frozenset({"ELEMENT_WISE_CLIP_GRAD1"}),
    "pool_nan": frozenset({"MAX_POOLING_GRAD"}),
    "pool_padding_only": frozenset({"MAX_POOLING_GRAD"}),
    "resample_offsets": frozenset({"RESAMPLE_GRAD1"}),
    "zero_weight_taps": frozenset({"RESAMPLE_GRAD1"}),
    "fp32_denormals": frozenset({"ACTIVATION_RELU_GRAD", "ELEMENT_WISE_CLIP_GRAD1", "MAX_POOLING_GRAD",
                                 "RESAMPLE_GRAD1"}),
    "coordinates": frozenset({"RESAMPLE_GRAD1"}),
    "fp16_conversion": frozenset(_SUMMING),
    "pool_gradient_size": frozenset({"MAX_POOLING_GRAD"}),
}
#: Bugs whose code sits in one operator's function, by name prefix; any other bug may show anywhere.
_BUG_PREFIXES = {"relu-": "ACTIVATION_RELU_GRAD", "clip-": "ELEMENT_WISE_CLIP_GRAD1", "slice-": "SLICE_GRAD",
                 "pool-": "MAX_POOLING_GRAD", "resample-": "RESAMPLE_GRAD1"}
_BUGS_EVERYWHERE = {"slice-no-zero-fill"}  # `_zeros` serves every operator


def operators_affected(knobs: Knobs) -> frozenset[str]:
    """The operators on which this driver can differ from `straight`."""
    if knobs.bug is not None:
        if knobs.bug == "integer-sums-saturate":
            return frozenset(_SUMMING)
        for prefix, op in _BUG_PREFIXES.items():
            if knobs.bug.startswith(prefix) and knobs.bug not in _BUGS_EVERYWHERE:
                return frozenset({op})
        return _ALL
    changed = [name for name in KNOB_OPERATORS if name != "bug" and getattr(knobs, name) != getattr(STRAIGHT, name)]
    return frozenset().union(*(KNOB_OPERATORS[name] for name in changed)) if changed else _ALL


def _bug(name: str, summary: str) -> Knobs:
    return replace(STRAIGHT, name=name, summary=summary, bug=name)


BUGGY: tuple[Knobs, ...] = tuple(_bug(name, summary) for name, summary in BUGS)
UNCATCHABLE: tuple[Knobs, ...] = tuple(_bug(name, summary) for name, summary, _ in INSIDE_THE_BOUND)
