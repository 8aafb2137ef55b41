"""Parsing single tensor elements written in a suite: numbers, nan/inf words, -0.0 and hex bit patterns."""

from __future__ import annotations

import math

import numpy as np

from dmlconform.dtypes import DataType

_FLOAT_WORDS = {"nan": math.nan, "+nan": math.nan, "inf": math.inf, "+inf": math.inf, "-inf": -math.inf,
                "infinity": math.inf, "-infinity": -math.inf, "-0.0": -0.0, "-0": -0.0}


def parse_element(value: object, dtype: DataType) -> int | float | np.generic:
    """One element as a Python int (integer types), float, or a NumPy scalar (hex bit patterns).

    Raises ValueError with a message that names the offending value.
    """
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is a boolean, not a number")
    if isinstance(value, str):
        text = value.strip().lower()
        if text.startswith("0x"):
            return _from_bits(text, dtype)
        if dtype.is_float and text in _FLOAT_WORDS:
            return _FLOAT_WORDS[text]
        try:
            value = int(text) if not dtype.is_float else float(text)
        except ValueError:
            raise ValueError(f"{value!r} is not a number of type {dtype.name}") from None
    if dtype.is_float:
        if not isinstance(value, int | float):
            raise ValueError(f"{value!r} is not a number")
        number = float(value)
        if math.isfinite(number):
            with np.errstate(over="ignore"):
                stored = dtype.numpy.type(number)
            if not np.isfinite(stored):
                raise ValueError(f"{value!r} overflows {dtype.name}; write 'inf' or '-inf' if that is meant")
        return number
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(f"{value!r} is not an integer ({dtype.name})")
        value = int(value)
    if not isinstance(value, int):
        raise ValueError(f"{value!r} is not an integer ({dtype.name})")
    info = np.iinfo(dtype.numpy)
    if not info.min <= value <= info.max:
        raise ValueError(f"{value} is outside the range of {dtype.name} [{info.min}, {info.max}]")
    return value


def _from_bits(text: str, dtype: DataType) -> np.generic:
    digits = text[2:]
    if not digits or len(digits) > dtype.bits // 4:
        raise ValueError(f"hex pattern {text!r} must have 1 to {dtype.bits // 4} digits for {dtype.name}")
    # Hex digits only: int() would also take a sign, underscores and spaces ('0x-e0' is -224, no bit pattern).
    if digits.strip("0123456789abcdefABCDEF"):
        raise ValueError(f"{text!r} is not a hex bit pattern")
    bits = int(digits, 16)
    return np.array([bits], dtype=dtype.bits_dtype).view(dtype.numpy)[0]


def elements_to_array(flat: list[object], dtype: DataType) -> np.ndarray:
    """Convert a flat list of suite elements to an array of exactly `dtype`, bit-preserving for hex."""
    out = np.empty(len(flat), dtype=dtype.numpy)
    for i, item in enumerate(flat):
        try:
            parsed = parse_element(item, dtype)
        except ValueError as exc:
            raise ValueError(f"element {i}: {exc}") from None
        if isinstance(parsed, np.generic):
            out.view(dtype.bits_dtype)[i] = parsed.view(dtype.bits_dtype)
        else:
            out[i] = parsed
    return out
