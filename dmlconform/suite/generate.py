"""Deterministic tensor generators for `generate:` specs, identical on every platform.

Only the PCG64 bit stream (fixed by NumPy's stability policy for bit generators) and IEEE basic
arithmetic are used; no libm call, whose last bit may differ between platforms. `normal` is
therefore the Irwin-Hall approximation (sum of 12 uniforms - 6), which is plenty for test data.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

import numpy as np

from dmlconform.dtypes import DataType
from dmlconform.values import elements_to_array

DISTRIBUTIONS = ("uniform", "normal", "ints", "ties", "iota", "constant")


#: Elements drawn at a time: what a generator holds besides its output is a few times this, whatever the shape
#: (the draws are elementwise, so the values are the same in any pieces; tests/suite/test_generate.py checks it).
CHUNK = 1 << 16


def _uniform(bits: np.random.PCG64, count: int) -> np.ndarray:
    """`count` uniforms in [0, 1) from the next `count` draws of the stream."""
    raw = bits.random_raw(count)
    return (raw >> np.uint64(11)).astype(np.float64) * 2.0**-53


def _filled(dtype: DataType, count: int, piece: Callable[[int, int], np.ndarray]) -> np.ndarray:
    """An array of `count` elements of dtype, filled CHUNK elements at a time by `piece(start, length)`."""
    out = np.empty(count, dtype=dtype.numpy)
    for start in range(0, count, CHUNK):
        length = min(CHUNK, count - start)
        out[start:start + length] = piece(start, length)
    return out


def _number(spec: Mapping[str, object], key: str, default: float) -> float:
    value = spec.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"generate.{key}: {value!r} is not a number")
    return float(value)


def generate(spec: Mapping[str, object], dtype: DataType, shape: tuple[int, ...]) -> np.ndarray:
    """Values for one tensor. Raises ValueError naming the offending key."""
    if not isinstance(spec, Mapping):
        raise ValueError(f"generate must be a mapping such as {{dist: uniform, seed: 1}}, got {spec!r}")
    dist = spec.get("dist")
    if dist not in DISTRIBUTIONS:
        raise ValueError(f"generate.dist: {dist!r} is not one of {', '.join(DISTRIBUTIONS)}")
    known = {"dist", "seed", "low", "high", "mean", "std", "values", "start", "step", "value"}
    unknown = sorted(set(map(str, spec)) - known)
    if unknown:
        raise ValueError(f"generate.{unknown[0]}: unknown key")
    count = math.prod(shape)
    if dist == "iota":
        start, step = _number(spec, "start", 1), _number(spec, "step", 1)
        return _filled(dtype, count, lambda first, length: _cast(
            start + step * np.arange(first, first + length, dtype=np.float64), dtype)).reshape(shape)
    if dist == "constant":
        value = elements_to_array([spec.get("value", 0)], dtype)
        return np.broadcast_to(value, (count,)).copy().reshape(shape)  # a copy of the bits: NaN payloads kept
    seed = spec.get("seed")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"generate.seed: {seed!r} must be a non-negative integer")
    bits = np.random.PCG64(seed)
    if dist == "ints":
        return _integers(spec, dtype, bits, count).reshape(shape)
    if dist == "ties":
        values = spec.get("values", [-1, 0, 1] if dtype.is_signed else [0, 1, 2])
        if not isinstance(values, list) or not values:
            raise ValueError(f"generate.values: {values!r} must be a non-empty list")
        pool = elements_to_array(values, dtype)
        return _filled(dtype, count, lambda _, length: pool[
            np.floor(_uniform(bits, length) * len(pool)).astype(np.int64)]).reshape(shape)
    if dist == "uniform":
        low, high = _number(spec, "low", -1), _number(spec, "high", 1)

        def draw(length: int) -> np.ndarray:
            return low + (high - low) * _uniform(bits, length)
    else:
        mean, std = _number(spec, "mean", 0), _number(spec, "std", 1)

        def draw(length: int) -> np.ndarray:
            return mean + std * (_uniform(bits, 12 * length).reshape(length, 12).sum(axis=1) - 6.0)

    def piece(_: int, length: int) -> np.ndarray:
        values = draw(length)
        return _cast(np.floor(values) if not dtype.is_float else values, dtype)

    return _filled(dtype, count, piece).reshape(shape)


def _integers(spec: Mapping[str, object], dtype: DataType, bits: np.random.PCG64, count: int) -> np.ndarray:
    low, high = spec.get("low", -10 if dtype.is_signed else 0), spec.get("high", 10)
    for key, value in (("low", low), ("high", high)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"generate.{key}: {value!r} must be an integer")
    if high < low:
        raise ValueError(f"generate.high: {high} is below low {low}")
    span = high - low + 1
    if dtype.is_float:
        return _filled(dtype, count, lambda _, length: _cast(low + np.floor(_uniform(bits, length) * span), dtype))
    info = np.iinfo(dtype.numpy)
    if low < info.min or high > info.max:
        raise ValueError(f"generate: [{low}, {high}] is outside the range of {dtype.name}")

    def piece(_: int, length: int) -> np.ndarray:
        raw = bits.random_raw(length)
        offset = raw % np.uint64(span) if span < 2**64 else raw
        # Wrapping uint64 addition lands on the right value, as the true result fits the type.
        shifted = offset + np.uint64(low % 2**64)
        return shifted.view(np.int64).astype(dtype.numpy) if dtype.is_signed else shifted.astype(dtype.numpy)

    return _filled(dtype, count, piece)


def _cast(values: np.ndarray, dtype: DataType) -> np.ndarray:
    if dtype.is_float:
        with np.errstate(over="ignore"):
            return values.astype(dtype.numpy)
    info = np.iinfo(dtype.numpy)
    return np.clip(values, info.min, info.max).astype(dtype.numpy)
