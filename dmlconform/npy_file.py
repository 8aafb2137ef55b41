"""Reading `.npy` data no further than its header allows, the header checked before a byte of data is read.

A `.npy` file (alone, or a member of an `.npz` archive) starts with a header that says its data type, shape and
order. An untrusted file may declare anything: numpy's own reader allocates what the header declares, and an
archive member inflates as far as its compressed stream goes. Here the header is parsed first (strictly: the
header of a plain array of numbers, as `numpy.save` and other writers produce it), the caller compares it with
what it expects, and only then is the data read: exactly the bytes the header declares, into one array.

Every refusal is an `NpyError` whose message says what is wrong (the caller names the file).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

MAGIC = b"\x93NUMPY"
#: numpy's own bound on the headers it parses (numpy.lib.format's max_header_size); real headers are < 200 bytes.
MAX_HEADER_BYTES = 10_000
#: Data is read in pieces of this size, so a reader never asks a stream for more than this at once.
CHUNK_BYTES = 1 << 22

#: `read(n)` returns up to n bytes, and b"" only at the end of the data.
Read = Callable[[int], bytes]

#: One entry of the header's dict, as Python reads it (numpy's own parser is ast.literal_eval): only spaces between
#: tokens (Python's tokenizer refuses a vertical tab, which `\s` would take), sizes without leading zeros, and a
#: shape of one size only with its comma (`(4)` is the number 4, not a tuple).
_KEY_VALUE = re.compile(r"""[ ]*(['"])(descr|fortran_order|shape)\1[ ]*:[ ]*(
    (['"])(?P<descr>[<>|=]?[A-Za-z][A-Za-z0-9]*)\4 |
    (?P<order>True|False) |
    \((?P<shape>[ ]* | [ ]*(?:0|[1-9][0-9]{0,19})[ ]*,[ ]* |
          [ ]*(?:0|[1-9][0-9]{0,19})(?:[ ]*,[ ]*(?:0|[1-9][0-9]{0,19}))+[ ]*,?[ ]*)\)
)[ ]*""", re.VERBOSE)


class NpyError(ValueError):
    """The data is not a .npy array this reader takes; the message says why, in words."""


@dataclass(frozen=True)
class NpyHeader:
    dtype: np.dtype
    shape: tuple[int, ...]
    fortran_order: bool
    #: Bytes before the data: magic, version, header length and the header itself.
    data_offset: int

    @property
    def count(self) -> int:
        return math.prod(self.shape)

    @property
    def data_bytes(self) -> int:
        return self.count * self.dtype.itemsize

    @property
    def file_bytes(self) -> int:
        """The size of the whole .npy file (or archive member) this header describes."""
        return self.data_offset + self.data_bytes


def read_header(read: Read) -> NpyHeader:
    """Parse the header of a .npy stream positioned at its start (reading at most MAX_HEADER_BYTES + 12 bytes)."""
    start = _exactly(read, 8, "its format marker")
    if start[:6] != MAGIC:
        raise NpyError(f"not a .npy array (it starts with {start[:8]!r}, not {MAGIC!r})")
    major, minor = start[6], start[7]
    if major not in (1, 2, 3) or minor != 0:
        raise NpyError(f".npy format version {major}.{minor} is not one numpy writes (1.0, 2.0 or 3.0)")
    width = 2 if major == 1 else 4
    length = int.from_bytes(_exactly(read, width, "its header length"), "little")
    if length > MAX_HEADER_BYTES:
        raise NpyError(f"its header is {length} bytes long; a .npy header is at most {MAX_HEADER_BYTES}")
    raw = _exactly(read, length, "its header")
    try:
        text = raw.decode("utf-8" if major == 3 else "latin-1")
    except UnicodeDecodeError:
        raise NpyError("its header is not UTF-8 text") from None
    dtype, shape, fortran_order = _parse(text)
    return NpyHeader(dtype, shape, fortran_order, 8 + width + length)


def _parse(text: str) -> tuple[np.dtype, tuple[int, ...], bool]:
    body = text.removesuffix("\n").rstrip(" ")  # numpy pads with spaces and ends with a newline; Python takes no more
    shown = body[:80]
    if not (body.startswith("{") and body.endswith("}")):
        raise NpyError(f"its header {shown!r} is not a Python dict of descr, fortran_order and shape")
    values: dict[str, re.Match[str]] = {}
    position, end = 1, len(body) - 1
    while body[position:end].strip(" "):  # entries, each followed by a comma but for the last (optional there)
        match = _KEY_VALUE.match(body, position, end)
        if match is None:
            raise NpyError(f"its header {shown!r} is not the header of a plain array of numbers")
        if match[2] in values:
            raise NpyError(f"its header names {match[2]!r} twice")
        values[match[2]] = match
        position = match.end()
        if position < end:
            if body[position] != ",":
                raise NpyError(f"its header {shown!r} is not the header of a plain array of numbers")
            position += 1
    if set(values) != {"descr", "fortran_order", "shape"}:
        missing = sorted({"descr", "fortran_order", "shape"} - set(values))
        raise NpyError(f"its header lacks {', '.join(missing)}")
    descr, order, shape_text = values["descr"]["descr"], values["fortran_order"]["order"], values["shape"]["shape"]
    if descr is None or order is None or shape_text is None:
        wrong = next(key for key, group in (("descr", descr), ("fortran_order", order), ("shape", shape_text))
                     if group is None)
        raise NpyError(f"its header's {wrong} is {values[wrong][3].strip()[:40]!r}, not a valid value")
    if descr.lstrip("<>|=") in ("O", "O8", "O4"):
        raise NpyError("it holds pickled objects, which are never loaded")
    try:
        dtype = np.dtype(descr)
    except (TypeError, ValueError):
        raise NpyError(f"its data type {descr!r} is not one numpy knows") from None
    if dtype.hasobject or dtype.itemsize == 0:
        raise NpyError(f"its data type {descr!r} is not a plain number type")
    shape = tuple(int(size) for size in shape_text.split(",") if size.strip())
    return dtype, shape, order == "True"


def read_data(read: Read, header: NpyHeader) -> np.ndarray:
    """The array the header describes, from the data that follows it: exactly `header.data_bytes` are read, into
    one C-ordered array. The caller has checked the header, so the allocation is what it expects."""
    shape = header.shape[::-1] if header.fortran_order else header.shape
    array = np.empty(shape, header.dtype)
    target = memoryview(array.reshape(-1).view(np.uint8))
    filled, total = 0, header.data_bytes
    while filled < total:
        chunk = read(min(total - filled, CHUNK_BYTES))
        if not chunk:
            raise NpyError(f"its data ends after {filled} of the {total} bytes its header declares")
        if len(chunk) > total - filled:  # a reader that ignores its argument must not overrun the array
            raise NpyError(f"its data holds more than the {total} bytes its header declares")
        target[filled:filled + len(chunk)] = chunk
        filled += len(chunk)
    if header.fortran_order:
        return np.asarray(array.T, order="C")  # np.ascontiguousarray would make a 0-d array 1-d
    return array


def check_end(read: Read, header: NpyHeader) -> None:
    """Refuse data beyond what the header declares (reading one byte more, no further)."""
    if read(1):
        raise NpyError(f"it holds more than the {header.data_bytes} data bytes its header declares")


def read_array(read: Read, check: Callable[[NpyHeader], None], stored_bytes: int | None = None) -> np.ndarray:
    """A whole .npy stream: its header, then `check(header)`, which raises to refuse the array before its data is
    read, then the data and nothing after it. `stored_bytes`: the stream's size, where known (a file's, an archive
    member's), which must be what the header declares: a truncated or padded array is refused before it is read."""
    header = read_header(read)
    check(header)
    if stored_bytes is not None and stored_bytes != header.file_bytes:
        raise NpyError(f"it holds {stored_bytes} bytes, but its header declares {header.file_bytes} "
                       f"({header.data_offset} of header, {header.data_bytes} of data)")
    array = read_data(read, header)
    check_end(read, header)
    return array


def _exactly(read: Read, count: int, what: str) -> bytes:
    data = b""
    while len(data) < count:
        chunk = read(count - len(data))
        if not chunk:
            raise NpyError(f"it ends in {what} ({len(data)} of {count} bytes)")
        data += chunk
    return data[:count]
