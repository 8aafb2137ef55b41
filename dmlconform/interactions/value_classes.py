"""Classes of element values that implementations treat differently: specials, signs, zeros, denormals, edges."""

from __future__ import annotations

import numpy as np

from dmlconform.dtypes import DataType

#: IEEE classes, lowest first ("max" is the largest finite magnitude, "normal" every other normal number).
FLOAT_CLASSES = ("-inf", "-max", "-normal", "-denormal", "-0", "+0", "+denormal", "+normal", "+max", "+inf", "nan")
#: Integer classes ("min"/"max" the type's edges; an unsigned type's minimum is its "0").
INT_CLASSES = ("min", "negative", "0", "positive", "max")
ALL_CLASSES = FLOAT_CLASSES + INT_CLASSES


def classes_of(dtype: DataType) -> tuple[str, ...]:
    if dtype.is_float:
        return FLOAT_CLASSES
    return INT_CLASSES if dtype.is_signed else ("0", "positive", "max")


def class_codes(values: np.ndarray) -> np.ndarray:
    """The class of every element as its index in ALL_CLASSES (uint8, the same shape): cheap on large tensors."""
    values = np.asarray(values)
    code = {name: np.uint8(index) for index, name in enumerate(ALL_CLASSES)}
    out = np.empty(values.shape, dtype=np.uint8)
    if values.dtype.kind == "f":
        info = np.finfo(values.dtype)
        magnitude = np.abs(values)
        negative = np.signbit(values)

        def signed(kind: str) -> np.ndarray:
            return np.where(negative, code["-" + kind], code["+" + kind])

        out[...] = signed("normal")
        for kind, where in (("0", magnitude == 0), ("denormal", (magnitude > 0) & (magnitude < info.tiny)),
                            ("max", magnitude == info.max), ("inf", np.isinf(values))):
            out[where] = signed(kind)[where]
        out[np.isnan(values)] = code["nan"]
        return out
    info = np.iinfo(values.dtype)
    out[...] = code["positive"]
    out[values < 0] = code["negative"]
    out[values == 0] = code["0"]
    out[values == info.max] = code["max"]
    if info.min < 0:
        out[values == info.min] = code["min"]
    return out


def classify(values: np.ndarray) -> np.ndarray:
    """The class of every element, as an array of names of the same shape."""
    return np.asarray(ALL_CLASSES, dtype=object)[class_codes(values)]
