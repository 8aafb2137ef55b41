"""Arrays in .npz archives read as numpy reads them, through the fast path for numpy's usual header and through
numpy's own reader for anything else; whatever cannot be read is refused with the archive and array named."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest

from dmlconform.suite import tensors
from dmlconform.suite.tensors import Archives, small_npy

ARRAYS = {
    "f32": np.arange(12, dtype=np.float32).reshape(3, 4) / 7,
    "f16": np.array([np.nan, -0.0, 65504, 6e-8], dtype=np.float16),
    "scalar": np.array(2.5, dtype=np.float64),
    "empty": np.zeros((0, 3), dtype=np.int32),
    "u8": np.arange(7, dtype=np.uint8),
    "i64": np.array([-(2**62), 2**62], dtype=np.int64),
    "bool": np.array([True, False]),
    "big_endian": np.arange(5, dtype=">f4"),
    "fortran": np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)),
    "many_dims": np.ones((1, 2, 1, 3, 1, 2, 1, 1), dtype=np.float32),
}


def npy(array: np.ndarray, version: tuple[int, int] | None = None) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, version=version, allow_pickle=True)
    return buffer.getvalue()


@pytest.mark.parametrize("name", sorted(ARRAYS))
@pytest.mark.parametrize("version", [None, (2, 0), (3, 0)])
def test_the_fast_path_reads_what_numpy_reads(name: str, version: tuple[int, int] | None) -> None:
    data = npy(ARRAYS[name], version)
    expected = np.lib.format.read_array(io.BytesIO(data))
    got = small_npy(data)
    if name == "fortran":
        assert got is None  # numpy's reader handles Fortran order
        return
    assert got is not None and got.dtype == expected.dtype and got.shape == expected.shape
    assert got.tobytes() == expected.tobytes() and got.flags.writeable


@pytest.mark.parametrize("data", [
    npy(np.arange(4, dtype=np.float32))[:-1],  # truncated
    b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f4'}",  # not numpy's usual header
    npy(np.array([{"a": 1}], dtype=object)),
    b"PK not an npy",
])
def test_the_fast_path_leaves_anything_unusual_to_numpy(data: bytes) -> None:
    assert small_npy(data) is None


def archive(tmp_path: Path, members: dict[str, bytes]) -> Path:
    path = tmp_path / "a.npz"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


@pytest.mark.parametrize("compressed", [True, False])
@pytest.mark.parametrize("path_taken", ["in memory", "zipfile", "numpy"])
def test_members_read_like_np_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path_taken: str,
                                   compressed: bool) -> None:
    if path_taken == "zipfile":
        monkeypatch.setattr(tensors, "_WHOLE_ARCHIVE_BYTES", 0)  # the archive read member by member
    if path_taken == "numpy":
        monkeypatch.setattr(tensors, "_SMALL_MEMBER_BYTES", 0)  # every member through numpy's chunked reader
    path = tmp_path / "a.npz"
    (np.savez_compressed if compressed else np.savez)(path, **ARRAYS)
    archives = Archives(tmp_path)
    with np.load(path) as expected:
        for key in ARRAYS:
            got = archives.member(path, "a.npz", key)
            assert got.dtype == expected[key].dtype and np.array_equal(got, expected[key], equal_nan=True)
    archives.close()


@pytest.mark.parametrize("members,key,message", [
    ({"x.npy": npy(np.zeros(3, np.float32))}, "y", "'a.npz' has no array 'y' (it has x)"),
    ({f"k{i}.npy": b"" for i in range(9)}, "y", "(it has k0, k1, k2, k3, k4, ... (9 in all))"),
    ({"raw": b"bytes"}, "raw", "has no array 'raw'"),  # a member that is not an .npy is not an array
    ({"o.npy": npy(np.array([{}], dtype=object))}, "o", "array 'o' cannot be read: it holds pickled objects"),
    ({"t.npy": npy(np.zeros(4, np.float32))[:-3]}, "t", "array 't' cannot be read"),
    ({"g.npy": b"garbage"}, "g", "array 'g' cannot be read"),
])
def test_unreadable_members_are_refused_by_name(tmp_path: Path, members: dict[str, bytes], key: str,
                                                message: str) -> None:
    path = archive(tmp_path, members)
    with pytest.raises(ValueError) as info:
        Archives(tmp_path).member(path, "a.npz", key)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_members_in_memory_are_the_bytes_zipfile_reads() -> None:
    from dmlconform.cli import bundled_suites

    archives = sorted(bundled_suites().rglob("*.npz"))
    assert archives
    for path in archives:
        data = path.read_bytes()
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            for info in zf.infolist():
                assert tensors._member_bytes(data, info) == zf.read(info), (path, info.filename)


@pytest.mark.parametrize("compressed", [True, False])
def test_a_corrupt_member_is_refused_in_memory_and_by_zipfile(tmp_path: Path, compressed: bool) -> None:
    path = tmp_path / "a.npz"
    (np.savez_compressed if compressed else np.savez)(path, x=np.arange(64, dtype=np.float32))
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as zf:
        info = zf.getinfo("x.npy")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data[start + info.compress_size - 5] ^= 0x01  # a bit of the member's last bytes: only its CRC tells
    path.write_bytes(bytes(data))
    assert tensors._member_bytes(bytes(data), info) is None  # a reader that skipped the CRC would return garbage
    with pytest.raises(ValueError, match="array 'x' cannot be read") as caught:
        Archives(tmp_path).member(path, "a.npz", "x")
    assert "\n" not in str(caught.value)
