"""Arrays in .npz archives read as numpy reads them, whether the archive is held in memory or read by zipfile;
whatever cannot be read is refused with the archive and array named, and a member whose header disagrees with
the case is refused before its data is inflated."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest

from dmlconform.npy_file import NpyHeader
from dmlconform.suite import tensors
from dmlconform.suite.tensors import Archives

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


def accept(header: NpyHeader) -> None:
    """A check that takes any header."""


def archive(tmp_path: Path, members: dict[str, bytes]) -> Path:
    path = tmp_path / "a.npz"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


@pytest.mark.parametrize("compressed", [True, False])
@pytest.mark.parametrize("path_taken", ["in memory", "zipfile"])
def test_members_read_like_np_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path_taken: str,
                                   compressed: bool) -> None:
    if path_taken == "zipfile":
        monkeypatch.setattr(tensors, "_WHOLE_ARCHIVE_BYTES", 0)  # the archive read member by member
    path = tmp_path / "a.npz"
    (np.savez_compressed if compressed else np.savez)(path, **ARRAYS)
    archives = Archives(tmp_path)
    with np.load(path) as expected:
        for key in ARRAYS:
            got = archives.member(path, "a.npz", key, accept)
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
        Archives(tmp_path).member(path, "a.npz", key, accept)
    assert message in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("compressed", [True, False])
def test_a_corrupt_member_is_refused_in_memory_and_by_zipfile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              compressed: bool) -> None:
    path = tmp_path / "a.npz"
    (np.savez_compressed if compressed else np.savez)(path, x=np.arange(64, dtype=np.float32))
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as zf:
        info = zf.getinfo("x.npy")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data[start + info.compress_size - 5] ^= 0x01  # a bit of the member's last bytes: only its CRC tells
    path.write_bytes(bytes(data))
    for whole_archive_bytes in (16 << 20, 0):  # in memory, then through zipfile
        monkeypatch.setattr(tensors, "_WHOLE_ARCHIVE_BYTES", whole_archive_bytes)
        with pytest.raises(ValueError, match="array 'x' cannot be read") as caught:
            Archives(tmp_path).member(path, "a.npz", "x", accept)
        assert "\n" not in str(caught.value)
        if not compressed:  # stored bytes: only the CRC tells (deflate may also find its stream broken)
            assert "CRC" in str(caught.value)


def test_an_archive_zipfile_cannot_handle_is_refused_in_one_line(tmp_path: Path) -> None:
    """Found by fuzz/fuzz_suite_npz.py: zipfile raises NotImplementedError for a member needing "zip file version
    10.4" (a traceback before); the archive is named and refused."""
    data = (Path(__file__).parents[2] / "fuzz" / "regressions" / "suite_npz" / "zip-version-10.4").read_bytes()
    (tmp_path / "a.npz").write_bytes(data[1:])  # byte 0 is the harness's mode (a raw archive)
    with pytest.raises(ValueError, match=r"'a\.npz' is not a readable \.npz archive") as caught:
        Archives(tmp_path).member(tmp_path / "a.npz", "a.npz", "x", accept)
    assert "\n" not in str(caught.value)
