"""The bounded .npy reader: whatever numpy writes for a DML tensor reads back bit for bit; anything else (a truncated,
padded or garbled file, a header the caller does not want) is an NpyError, and a refused header costs no read of
the data."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dmlconform.dtypes import DataType
from dmlconform.npy_file import MAX_HEADER_BYTES, NpyError, NpyHeader, read_array, read_header
from tests.properties import PROPERTIES

DTYPES = [t.numpy for t in DataType]


def npy(array: np.ndarray, version: tuple[int, int] | None = None) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, version=version, allow_pickle=False)
    return buffer.getvalue()


def accept(header: NpyHeader) -> None:
    """A check that takes any header."""


arrays = st.sampled_from(DTYPES).flatmap(lambda dtype: hnp.arrays(
    st.sampled_from([dtype, dtype.newbyteorder(">")]), hnp.array_shapes(min_dims=0, max_dims=5, min_side=0, max_side=4)))


@PROPERTIES
@given(array=arrays, version=st.sampled_from([None, (2, 0), (3, 0)]), fortran=st.booleans())
def test_what_numpy_writes_reads_back_bit_for_bit(array: np.ndarray, version, fortran: bool) -> None:
    written = np.asfortranarray(array) if fortran else array  # (a 0-d array becomes 1-d there)
    data = npy(written, version)
    back = read_array(io.BytesIO(data).read, accept, len(data))
    assert back.dtype == written.dtype and back.shape == written.shape and back.flags.c_contiguous
    assert back.tobytes() == written.tobytes(order="C")


@PROPERTIES
@given(array=arrays, cut=st.integers(min_value=0))
def test_a_file_cut_short_or_padded_is_refused(array: np.ndarray, cut: int) -> None:
    data = npy(array)
    short = data[: cut % len(data)]
    with pytest.raises(NpyError):
        read_array(io.BytesIO(short).read, accept, len(short))
    with pytest.raises(NpyError):
        read_array(io.BytesIO(short).read, accept)  # without its size known: the data runs out
    with pytest.raises(NpyError, match=r"holds more than|bytes, but its header declares"):
        read_array(io.BytesIO(data + b"\0").read, accept, len(data) + 1)
    with pytest.raises(NpyError, match="holds more than"):
        read_array(io.BytesIO(data + b"\0").read, accept)


@PROPERTIES
@given(array=arrays, position=st.integers(min_value=0), byte=st.integers(0, 255))
def test_a_changed_header_byte_gives_numpys_header_or_a_refusal(array: np.ndarray, position: int, byte: int) -> None:
    """numpy is the oracle: where it parses the changed header, ours gives the same type, shape and order (or
    refuses, being stricter); it never accepts what numpy refuses."""
    data = bytearray(npy(array))
    header_end = 10 + int.from_bytes(data[8:10], "little")
    data[position % header_end] = byte
    try:
        ours = read_header(io.BytesIO(bytes(data)).read)
    except NpyError as exc:
        assert "\n" not in str(exc)
        return
    stream = io.BytesIO(bytes(data))
    version = np.lib.format.read_magic(stream)
    read_numpy_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
        np.lib.format.read_array_header_2_0
    shape, fortran, dtype = read_numpy_header(stream)
    assert (ours.shape, ours.fortran_order, ours.dtype) == (shape, fortran, dtype)


def test_a_refused_header_stops_the_read_before_the_data() -> None:
    data = npy(np.zeros(1 << 16, np.float32))
    consumed = 0
    stream = io.BytesIO(data)

    def read(count: int) -> bytes:
        nonlocal consumed
        chunk = stream.read(count)
        consumed += len(chunk)
        return chunk

    def refuse(header: NpyHeader) -> None:
        raise ValueError(f"not {header.shape}")

    with pytest.raises(ValueError, match=r"not \(65536,\)"):
        read_array(read, refuse, len(data))
    assert consumed == 128  # the header only, not a byte of the 256 KiB of data


def header(text: str) -> bytes:
    """A version 1.0 .npy header around `text` (the length is right; the text need not be)."""
    return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text.encode("latin-1")


@pytest.mark.parametrize("data,words", [
    (b"", "ends in its format marker"),
    (b"PK\x03\x04 not npy", "not a .npy array"),
    (b"\x93NUMPY\x04\x00\x10\x00", "format version 4.0"),
    (b"\x93NUMPY\x02\x00\xff\xff\xff\x00", f"at most {MAX_HEADER_BYTES}"),
    (header("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }\n"), "pickled objects"),
    (header("{'descr': '<f4', 'shape': (1,), }\n"), "lacks fortran_order"),
    (header("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), }\n"), "not the header of a plain array"),
    (header("{'descr': '<f4', 'fortran_order': 'no', 'shape': (1,), }\n"), "its header's fortran_order is \"'no'\""),
    (header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': ()}\n"), "not the header of a plain array"),
    (header("{'descr': '<x9', 'fortran_order': False, 'shape': (1,), }\n"), "not one numpy knows"),
    (header("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n"), "names 'descr' twice"),
    (header("{'descr': '<f4', 'fortran_order': False, 'shape': (1,) 'x'}\n"), "not the header of a plain array"),
    (header("'descr': '<f4'\n"), "not a Python dict"),
    # Found by fuzz/fuzz_suite_npy.py: accepted here, refused by numpy (Python reads the space as an indent).
    (header("{'descr': '|i1', 'fortran_order': False, 'shape': (1,), }\n "), "is not a Python dict"),
    (header("{'descr': '<f4', 'fortran_order': False, 'shape': (4), }\n"), "not the header of a plain array"),
    (header("{'descr': '<f4', 'fortran_order': False, 'shape': (04,), }\n"), "not the header of a plain array"),
    (header("{'descr':\x0b'<f4', 'fortran_order': False, 'shape': (4,), }\n"), "not the header of a plain array"),
])
def test_unusable_files_are_refused_in_words(data: bytes, words: str) -> None:
    with pytest.raises(NpyError, match=words) as caught:
        read_array(io.BytesIO(data).read, accept)
    assert "\n" not in str(caught.value)
