"""Hostile files for the tests, the memory benchmark and the fuzz seeds: .npz zip bombs built in milliseconds.

A zip bomb here is an .npz archive whose one member is an .npy array of zeros, far larger inflated than stored:
the deflate stream of a 1 MiB block of zeros, flushed with Z_FULL_FLUSH, is byte-aligned and independent of
what came before, so the stream for N blocks is that one compressed block N times (about 1 KiB per MiB).
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from pathlib import Path

import numpy as np

BLOCK = 1 << 20


def npy_header(dtype: str, shape: tuple[int, ...]) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": dtype, "fortran_order": False, "shape": shape})
    return buffer.getvalue()


def zeros_member(dtype: str, shape: tuple[int, ...], declared_header: bytes | None = None) -> tuple[bytes, int, int]:
    """(raw deflate stream, CRC-32, inflated size) of a .npy of zeros with that header (whole 1 MiB blocks)."""
    header = declared_header if declared_header is not None else npy_header(dtype, shape)
    data_bytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    assert data_bytes % BLOCK == 0, "whole blocks only"
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    head = compressor.compress(header) + compressor.flush(zlib.Z_FULL_FLUSH)
    zeros = bytes(BLOCK)
    block = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    blocks = data_bytes // BLOCK
    stream = head + block * blocks + compressor.flush()
    return stream, crc32_of_zeros(data_bytes, zlib.crc32(header)), len(header) + data_bytes


def crc32_of_zeros(count: int, crc: int = 0) -> int:
    """zlib.crc32(bytes(count), crc) in O(log count): appending a zero byte to the CRC register is a linear map over
    GF(2), applied count times by repeated squaring (zlib's crc32_combine). 1 GiB of zeros costs seconds otherwise."""
    def times(matrix: list[int], vector: int) -> int:
        result, column = 0, 0
        while vector:
            if vector & 1:
                result ^= matrix[column]
            vector >>= 1
            column += 1
        return result

    def square(matrix: list[int]) -> list[int]:
        return [times(matrix, matrix[column]) for column in range(32)]

    register = crc ^ 0xFFFFFFFF
    odd = [0xEDB88320] + [1 << n for n in range(31)]  # one zero bit
    even = square(odd)  # two
    odd = square(even)  # four
    while count:
        even = square(odd)  # 8, 32, 128 ... zero bits
        if count & 1:
            register = times(even, register)
        count >>= 1
        if not count:
            break
        odd = square(even)
        if count & 1:
            register = times(odd, register)
        count >>= 1
    return register ^ 0xFFFFFFFF


def write_zip(path: Path, members: dict[str, tuple[bytes, int, int]]) -> None:
    """A zip archive of deflated members given as (raw deflate stream, CRC-32, inflated size), without zip64."""
    out = bytearray()
    central = bytearray()
    for name, (stream, crc, size) in members.items():
        encoded = name.encode()
        offset = len(out)
        out += struct.pack(zipfile.structFileHeader, zipfile.stringFileHeader, 20, 0, 0, zipfile.ZIP_DEFLATED,
                           0, 0x21, crc, len(stream), size, len(encoded), 0) + encoded + stream
        central += struct.pack(zipfile.structCentralDir, zipfile.stringCentralDir, 20, 3, 20, 0, 0,
                               zipfile.ZIP_DEFLATED, 0, 0x21, crc, len(stream), size, len(encoded), 0, 0, 0, 0,
                               0o644 << 16, offset) + encoded
    end = struct.pack(zipfile.structEndArchive, zipfile.stringEndArchive, 0, 0, len(members), len(members),
                      len(central), len(out), 0)
    path.write_bytes(bytes(out + central + end))


def zip_bomb(path: Path, count: int = 2**28, dtype: str = "<f4", key: str = "x") -> Path:
    """The issue's bomb: an .npz whose member `key` declares `count` zeros (2^28 float32: 1 GiB from ~1 MB)."""
    write_zip(path, {f"{key}.npy": zeros_member(dtype, (count,))})
    return path


def suite_with_file(path: Path, reference: str, shape: list[int], dtype: str = "FLOAT32") -> Path:
    """A one-case ReluGrad suite whose InputTensor is `reference` (x.npy or a.npz:key) with that declared shape."""
    data = np.zeros(int(np.prod(shape)), np.int64).reshape(shape).tolist()
    path.write_text(f"""format: dmlconform/v1
suite: hostile
cases:
  - id: bomb
    op: ACTIVATION_RELU_GRAD
    inputs:
      InputTensor: {{dtype: {dtype}, shape: {shape}, file: "{reference}"}}
      InputGradientTensor: {{dtype: {dtype}, shape: {shape}, data: {data}}}
    outputs:
      OutputGradientTensor: {{dtype: {dtype}, shape: {shape}, data: {data}}}
""", encoding="utf-8")
    return path
