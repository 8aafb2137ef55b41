"""The DML tensor data types in scope and how each maps onto NumPy."""

from __future__ import annotations

from enum import Enum

import numpy as np


class DataType(Enum):
    """DML_TENSOR_DATA_TYPE without the prefix; the value is the DML enum value."""

    FLOAT32 = 1
    FLOAT16 = 2
    UINT32 = 3
    UINT16 = 4
    UINT8 = 5
    INT32 = 6
    INT16 = 7
    INT8 = 8
    FLOAT64 = 9
    UINT64 = 10
    INT64 = 11

    @classmethod
    def parse(cls, name: object) -> DataType:
        if not isinstance(name, str):
            raise ValueError(f"data type must be a name such as FLOAT32, got {name!r}")
        key = name.upper().removeprefix("DML_TENSOR_DATA_TYPE_")
        try:
            return cls[key]
        except KeyError:
            known = ", ".join(d.name for d in cls)
            raise ValueError(f"unknown data type {name!r} (known: {known})") from None

    @property
    def numpy(self) -> np.dtype:
        return _NUMPY_DTYPES[self]

    @property
    def is_float(self) -> bool:
        return self in _FLOATS

    @property
    def is_signed(self) -> bool:
        return self.is_float or self.name.startswith("INT")

    @property
    def bits(self) -> int:
        return self.numpy.itemsize * 8

    @property
    def unit_roundoff(self) -> float:
        """u = 2^-p for a p-bit significand; integers have none."""
        if not self.is_float:
            raise ValueError(f"{self.name} has no unit roundoff")
        return float(np.finfo(self.numpy).eps) / 2

    @property
    def bits_dtype(self) -> np.dtype:
        """The unsigned integer type of the same width, for bit-level views."""
        return np.dtype(f"u{self.numpy.itemsize}")

    @classmethod
    def from_numpy(cls, dtype: np.dtype) -> DataType:
        for member, numpy_dtype in _NUMPY_DTYPES.items():
            if numpy_dtype == dtype:
                return member
        raise ValueError(f"NumPy type {dtype} has no DML data type")


_NUMPY = {
    DataType.FLOAT64: "float64",
    DataType.FLOAT32: "float32",
    DataType.FLOAT16: "float16",
    DataType.INT64: "int64",
    DataType.INT32: "int32",
    DataType.INT16: "int16",
    DataType.INT8: "int8",
    DataType.UINT64: "uint64",
    DataType.UINT32: "uint32",
    DataType.UINT16: "uint16",
    DataType.UINT8: "uint8",
}
#: Made once: the generator and the loader ask a data type for its NumPy type millions of times.
_NUMPY_DTYPES = {member: np.dtype(name) for member, name in _NUMPY.items()}
_FLOATS = (DataType.FLOAT16, DataType.FLOAT32, DataType.FLOAT64)
