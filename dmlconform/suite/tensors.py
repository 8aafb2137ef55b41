"""Reading one tensor of a suite: `{dtype, shape}` plus exactly one of data, file or generate."""

from __future__ import annotations

import io
import math
import re
import struct
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from dmlconform.dtypes import DataType
from dmlconform.ops.base import TensorDesc
from dmlconform.suite.generate import generate
from dmlconform.values import elements_to_array

SOURCES = ("data", "file", "generate")
#: Elements one tensor may hold: 2^28 (1 GiB of FLOAT32), far above any conformance case and well below
#: what would exhaust a CI machine's memory. DML itself allows up to 2^32 - 1.
MAX_ELEMENTS = 2**28


class TensorError(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class Archives:
    """The .npy and .npz files one suite file reads: each name checked once (inside the suite tree, a file),
    each archive opened once. A suite of generated cases names hundreds of members of one archive, and reading
    its zip directory, resolving its path, or parsing a member's header with numpy's general reader costs more
    than the small arrays themselves."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._inside = root.resolve()
        self._located: dict[tuple[Path, str], Path] = {}
        self._open: dict[Path, zipfile.ZipFile] = {}
        #: The bytes of each archive small enough to be read whole (see `_member_bytes`).
        self._bytes: dict[Path, bytes] = {}

    def locate(self, folder: Path, name: str) -> Path:
        """The file `name` (relative to `folder`) as a resolved path, refused outside the tree or missing."""
        path = self._located.get((folder, name))
        if path is None:
            path = (folder / name).resolve()
            if not path.is_relative_to(self._inside):
                raise ValueError(f"{name!r} lies outside the suite tree {self.root}")
            if not path.is_file():
                raise ValueError(f"{name!r} does not exist")
            self._located[(folder, name)] = path
        return path

    def member(self, path: Path, name: str, key: str) -> np.ndarray:
        """The array `key` of the .npz archive at `path` (called `name` in the suite)."""
        archive = self._open.get(path)
        if archive is None:
            try:
                if path.stat().st_size <= _WHOLE_ARCHIVE_BYTES:
                    self._bytes[path] = path.read_bytes()
                    archive = zipfile.ZipFile(io.BytesIO(self._bytes[path]))
                else:
                    archive = zipfile.ZipFile(path)
            except (zipfile.BadZipFile, OSError, EOFError) as exc:
                raise ValueError(f"{name!r} is not a readable .npz archive ({exc})") from None
            self._open[path] = archive
        try:
            info = archive.getinfo(f"{key}.npy")
        except KeyError:
            keys = [n.removesuffix(".npy") for n in archive.namelist()]
            shown = ", ".join(keys[:5]) + (f", ... ({len(keys)} in all)" if len(keys) > 5 else "")
            raise ValueError(f"{name!r} has no array {key!r} (it has {shown or 'none'})") from None
        try:
            if info.file_size <= _SMALL_MEMBER_BYTES:
                data = _member_bytes(self._bytes[path], info) if path in self._bytes else None
                array = small_npy(data if data is not None else archive.read(info))
                if array is not None:
                    return array
            with archive.open(info) as stream:
                return np.lib.format.read_array(stream, allow_pickle=False)
        except (zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
            reason = "it holds pickled objects, which are never loaded" if "pickle" in str(exc) else str(exc)
            raise ValueError(f"{name!r}: array {key!r} cannot be read: {reason}") from None

    def close(self) -> None:
        for archive in self._open.values():
            archive.close()
        self._open.clear()
        self._bytes.clear()


#: Members up to this size are read whole and parsed by `small_npy`; larger ones by numpy, in chunks.
_SMALL_MEMBER_BYTES = 1 << 20
#: The header numpy's `save` writes for a plain C-ordered array of numbers (format 1.0, 2.0 or 3.0).
_NPY_HEADER = re.compile(rb"\{'descr': '([<>|][fiub][1-8])', 'fortran_order': False, 'shape': \(([0-9, ]*)\), \} *\n")


#: Archives up to this size are read into memory whole, and their small members taken out by `_member_bytes`.
_WHOLE_ARCHIVE_BYTES = 16 << 20
_LOCAL_HEADER = struct.Struct(zipfile.structFileHeader)


def _member_bytes(archive: bytes, info: zipfile.ZipInfo) -> bytes | None:
    """A member of an archive held in memory, inflated and its CRC checked, else None (zipfile decides).
    zipfile's reader costs a member of a few hundred bytes about ten times what inflating it does."""
    if info.flag_bits & 0x1 or info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        return None  # encrypted, or another compression
    try:
        header = _LOCAL_HEADER.unpack_from(archive, info.header_offset)
    except struct.error:
        return None
    if header[0] != zipfile.stringFileHeader:
        return None
    start = info.header_offset + _LOCAL_HEADER.size + header[10] + header[11]
    raw = archive[start:start + info.compress_size]
    try:
        data = zlib.decompress(raw, -zlib.MAX_WBITS) if info.compress_type == zipfile.ZIP_DEFLATED else raw
    except zlib.error:
        return None
    if len(data) != info.file_size or zlib.crc32(data) != info.CRC:
        return None
    return data


def small_npy(data: bytes) -> np.ndarray | None:
    """The array in a whole .npy file whose header is numpy's usual one, else None (numpy's reader decides).
    numpy parses every header with `ast.literal_eval`, which costs a small array more than its data."""
    if data[:6] != b"\x93NUMPY" or len(data) < 10 or data[6] not in (1, 2, 3):
        return None
    size_bytes = 2 if data[6] == 1 else 4
    start = 8 + size_bytes
    end = start + int.from_bytes(data[8:start], "little")
    match = _NPY_HEADER.fullmatch(data, start, end)
    if match is None:
        return None
    shape = tuple(int(n) for n in match[2].split(b",") if n.strip())
    dtype = np.dtype(match[1].decode("ascii"))
    if len(data) - end != math.prod(shape) * dtype.itemsize:
        return None  # numpy reports the truncation
    return np.frombuffer(data, dtype, offset=end).reshape(shape).copy()


def read_desc(spec: object) -> TensorDesc:
    if not isinstance(spec, Mapping):
        raise TensorError("", f"expected a mapping with dtype and shape, got {spec!r}")
    unknown = sorted(set(map(str, spec)) - {"dtype", "shape", *SOURCES})
    if unknown:
        raise TensorError(unknown[0], "unknown key (a tensor has dtype, shape and one of data, file, generate)")
    if "dtype" not in spec:
        raise TensorError("dtype", "missing")
    try:
        dtype = DataType.parse(spec["dtype"])
    except ValueError as exc:
        raise TensorError("dtype", str(exc)) from None
    shape = spec.get("shape")
    if not isinstance(shape, list) or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in shape):
        raise TensorError("shape", f"{shape!r} must be a list of non-negative integers")
    if any(size > 2**32 - 1 for size in shape):
        raise TensorError("shape", f"{shape!r}: DML sizes are UINT, at most 4294967295")
    if math.prod(shape) > MAX_ELEMENTS:
        raise TensorError("shape", f"{shape!r} has {math.prod(shape)} elements; a tensor may hold at most "
                          f"{MAX_ELEMENTS}")
    return TensorDesc(dtype, tuple(shape))


def read_tensor(spec: Mapping[str, object], desc: TensorDesc, suite_file: Path, archives: Archives,
                data_required: bool = True) -> np.ndarray | None:
    sources = [key for key in SOURCES if key in spec]
    if len(sources) > 1:
        raise TensorError(sources[1], f"give exactly one of data, file or generate, not {' and '.join(sources)}")
    if not sources:
        if data_required:
            raise TensorError("data", "missing: give one of data, file or generate")
        return None
    source = sources[0]
    try:
        if source == "data":
            array = _from_data(spec["data"], desc)
        elif source == "file":
            array = _from_file(spec["file"], desc, suite_file, archives)
        else:
            array = generate(spec["generate"], desc.dtype, desc.shape)  # type: ignore[arg-type]
    except TensorError:
        raise
    except (ValueError, OSError) as exc:
        raise TensorError(source, str(exc)) from None
    if array.shape != desc.shape:
        raise TensorError(source, f"holds shape {list(array.shape)}, but shape says {list(desc.shape)}")
    return array


def _flatten(data: object, out: list[object]) -> None:
    if isinstance(data, list):
        for item in data:
            _flatten(item, out)
    else:
        out.append(data)


def _from_data(data: object, desc: TensorDesc) -> np.ndarray:
    flat: list[object] = []
    _flatten(data, flat)
    expected = math.prod(desc.shape)
    if len(flat) != expected:
        raise ValueError(f"has {len(flat)} elements, but shape {list(desc.shape)} needs {expected}")
    return elements_to_array(flat, desc.dtype).reshape(desc.shape)


def _from_file(reference: object, desc: TensorDesc, suite_file: Path, archives: Archives) -> np.ndarray:
    if not isinstance(reference, str) or not reference:
        raise ValueError(f"{reference!r} must be a path such as x.npy or x.npz:key")
    name, _, key = reference.partition(":") if ".npz:" in reference else (reference, "", "")
    path = archives.locate(suite_file.parent, name)
    if path.suffix == ".npz":
        if not key:
            raise ValueError(f"{name!r} is an .npz archive: name the array as {name}:KEY")
        array = archives.member(path, name, key)
    elif path.suffix == ".npy":
        try:
            array = np.load(path, allow_pickle=False)
        except ValueError as exc:
            reason = "it holds pickled objects, which are never loaded" if "pickle" in str(exc) else str(exc)
            raise ValueError(f"{name!r} cannot be loaded: {reason}") from None
    else:
        raise ValueError(f"{name!r} must be a .npy file or name.npz:key")
    if array.dtype != desc.dtype.numpy:
        raise ValueError(f"{reference!r} holds {array.dtype}, but dtype says {desc.dtype.name}")
    return np.asarray(array, order="C")  # np.ascontiguousarray would make a 0-d array 1-d
