"""The SHA-256 digest of what a backend returned for one case (a result's `output_sha256`).

Two runs whose digests agree returned the same bits in every output; a digest that differs says some bit moved,
even where both runs pass within the case's rule (which is what a comparison of, say, two DirectML versions needs
to see). It is defined on bits, not values: float -0.0 and +0.0, or two NaN payloads, digest differently.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping

import numpy as np

#: How a digest is written in a result: 64 lowercase hex digits.
DIGEST_PATTERN = re.compile(r"[0-9a-f]{64}")


def output_sha256(outputs: Mapping[str, np.ndarray], names: Iterable[str]) -> str:
    """SHA-256, as 64 lowercase hex digits, of `outputs[name]` for each name in `names` (the operator's output
    order), each contributing in turn:

    1. a header, UTF-8: the output's name, NUL, its NumPy data type name (``float32``, ``float16``, ``uint64``,
       ...), NUL, its shape as decimal extents joined by ``,`` (empty for a 0-d array), NUL;
    2. its elements in C (row-major) order, each in little-endian byte order: ``nbytes`` bytes, which the header's
       type and shape fix, so the stream reads back unambiguously.

    Raises KeyError for a name `outputs` lacks, TypeError for a value that is not an array of numbers."""
    digest = hashlib.sha256()
    for name in names:
        array = outputs[name]
        if not isinstance(array, np.ndarray) or array.dtype.kind not in "biuf":
            raise TypeError(f"{name}: {type(array).__name__} is not an array of numbers")
        shape = ",".join(str(extent) for extent in array.shape)
        digest.update(f"{name}\0{array.dtype.name}\0{shape}\0".encode())
        # Big-endian arrays (from a .npy written elsewhere) must digest like the same values in native order.
        little = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
        digest.update(little.reshape(-1).view(np.uint8))  # the bytes themselves, not a copy
    return digest.hexdigest()
