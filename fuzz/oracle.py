"""numpy's own .npy reader as the fuzz harnesses' oracle: what it makes of a header, bounded to the header."""

from __future__ import annotations

import io
import math
import warnings

import numpy as np

from dmlconform.dtypes import DataType
from dmlconform.ops.base import TensorDesc

#: Declarations larger than this are not taken from a header: the harness declares its default instead.
MAX_DECLARED_ELEMENTS = 1 << 18
DEFAULT = TensorDesc(DataType.FLOAT32, (4,))


def numpy_header(data: bytes) -> tuple[tuple[int, ...], bool, np.dtype] | None:
    """(shape, fortran_order, dtype) as numpy reads the header of these .npy bytes, or None where it refuses."""
    stream = io.BytesIO(data)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            version = np.lib.format.read_magic(stream)
            if version == (1, 0):
                return np.lib.format.read_array_header_1_0(stream)
            if version in ((2, 0), (3, 0)):
                return np.lib.format.read_array_header_2_0(stream)
    except Exception:  # the oracle's refusal, whatever numpy raises: only our own reader is held to a contract
        return None
    return None


def declaration(data: bytes) -> TensorDesc:
    """What a case would declare for this .npy: its header's type and shape where numpy reads them as a DML
    tensor of reasonable size, else FLOAT32 [4]."""
    header = numpy_header(data)
    if header is None:
        return DEFAULT
    shape, _, dtype = header
    try:
        dml = DataType.from_numpy(dtype)
    except (ValueError, TypeError):
        return DEFAULT
    if not all(isinstance(size, int) and size >= 0 for size in shape) or math.prod(shape) > MAX_DECLARED_ELEMENTS:
        return DEFAULT
    return TensorDesc(dml, tuple(shape))


def numpy_reads(data: bytes) -> np.ndarray | None:
    """The array np.load makes of .npy bytes (only called once our reader accepted them, so bounded), or None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.load(io.BytesIO(data), allow_pickle=False)
    except Exception:
        return None
