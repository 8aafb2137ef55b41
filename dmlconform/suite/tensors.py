"""Reading one tensor of a suite: `{dtype, shape}` plus exactly one of data, file or generate."""

from __future__ import annotations

import io
import math
import os
import struct
import zipfile
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from dmlconform.dtypes import DataType
from dmlconform.npy_file import NpyError, NpyHeader, read_array
from dmlconform.ops.base import TensorDesc
from dmlconform.suite import one_line
from dmlconform.suite.generate import generate
from dmlconform.surface.layout import KEYS as LAYOUT_KEYS
from dmlconform.values import elements_to_array

SOURCES = ("data", "file", "generate")
#: Elements one tensor may hold: 2^28 (1 GiB of FLOAT32), far above any conformance case and well below
#: what would exhaust a CI machine's memory. DML itself allows up to 2^32 - 1.
MAX_ELEMENTS = 2**28


class TensorError(ValueError):
    """A tensor source that cannot be read; field and message are one line each (line breaks from the input, a key
    or an archive's member name, are shown escaped)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(one_line(message))
        self.field = one_line(field)


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
        #: The bytes of each archive small enough to be read whole (see `_InflatingReader`).
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

    def member(self, path: Path, name: str, key: str, check: Callable[[NpyHeader], None]) -> np.ndarray:
        """The array `key` of the .npz archive at `path` (called `name` in the suite). `check` sees the member's
        .npy header first and raises to refuse it: nothing is inflated beyond the header until it agrees, and
        then no further than the header declares."""
        archive = self._open.get(path)
        if archive is None:
            try:
                if path.stat().st_size <= _WHOLE_ARCHIVE_BYTES:
                    self._bytes[path] = path.read_bytes()
                    archive = zipfile.ZipFile(io.BytesIO(self._bytes[path]))
                else:
                    archive = zipfile.ZipFile(path)
            except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
                raise ValueError(f"{name!r} is not a readable .npz archive ({exc})") from None
            self._open[path] = archive
        try:
            info = archive.getinfo(f"{key}.npy")
        except KeyError:
            keys = [n.removesuffix(".npy") for n in archive.namelist()]
            shown = ", ".join(keys[:5]) + (f", ... ({len(keys)} in all)" if len(keys) > 5 else "")
            raise ValueError(f"{name!r} has no array {key!r} (it has {shown or 'none'})") from None
        if info.flag_bits & 0x1:
            raise ValueError(f"{name!r}: array {key!r} is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            # numpy writes stored or deflated members; zipfile inflates other methods without a bound.
            raise ValueError(f"{name!r}: array {key!r} is compressed with method {info.compress_type}; an .npz "
                             "member is stored or deflated")
        try:
            stream = _InflatingReader.of(self._bytes[path], info) if path in self._bytes else None
            if stream is not None:
                array = read_array(stream.read, check, info.file_size)
                stream.check_crc()
                return array
            with archive.open(info) as member:  # zipfile checks the CRC when the member's end is read
                return read_array(member.read, check, info.file_size)
        except (NpyError, zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError) as exc:
            raise ValueError(f"{name!r}: array {key!r} cannot be read: {exc}") from None

    def close(self) -> None:
        for archive in self._open.values():
            archive.close()
        self._open.clear()
        self._bytes.clear()


#: Archives up to this size are read into memory whole, and their members inflated by `_InflatingReader`.
_WHOLE_ARCHIVE_BYTES = 16 << 20
_LOCAL_HEADER = struct.Struct(zipfile.structFileHeader)


class _InflatingReader:
    """A member of an archive held in memory, inflated as it is read and never further than asked: a member whose
    stream inflates to gigabytes costs what the reader asks for. zipfile's reader costs a member of a few hundred
    bytes about ten times what inflating it does."""

    def __init__(self, raw: memoryview, deflated: bool, crc: int) -> None:
        self._raw = raw
        self._inflater = zlib.decompressobj(-zlib.MAX_WBITS) if deflated else None
        self._started = False
        self._position = 0
        self._crc, self._expected_crc = 0, crc

    @classmethod
    def of(cls, archive: bytes, info: zipfile.ZipInfo) -> _InflatingReader:
        try:
            header = _LOCAL_HEADER.unpack_from(archive, info.header_offset)
        except struct.error:
            raise zipfile.BadZipFile(f"no local header at byte {info.header_offset}") from None
        if header[0] != zipfile.stringFileHeader:
            raise zipfile.BadZipFile(f"bad local header at byte {info.header_offset}")
        start = info.header_offset + _LOCAL_HEADER.size + header[10] + header[11]
        raw = memoryview(archive)[start:start + info.compress_size]
        if len(raw) != info.compress_size:
            raise zipfile.BadZipFile(f"the member's {info.compress_size} compressed bytes run past the archive's end")
        return cls(raw, info.compress_type == zipfile.ZIP_DEFLATED, info.CRC)

    def read(self, count: int) -> bytes:
        if self._inflater is None:
            chunk = bytes(self._raw[self._position:self._position + count])
            self._position += len(chunk)
        elif not self._started:
            self._started = True
            chunk = self._inflater.decompress(self._raw, count)
        else:
            chunk = self._inflater.decompress(self._inflater.unconsumed_tail, count)
        self._crc = zlib.crc32(chunk, self._crc)
        return chunk

    def check_crc(self) -> None:
        """After the whole member was read: its CRC-32 as the archive records it."""
        if self._crc != self._expected_crc:
            raise zipfile.BadZipFile(f"Bad CRC-32 (the data's is {self._crc:08x}, the archive says "
                                     f"{self._expected_crc:08x})")


def read_desc(spec: object) -> TensorDesc:
    if not isinstance(spec, Mapping):
        raise TensorError("", f"expected a mapping with dtype and shape, got {spec!r}")
    unknown = sorted(set(map(str, spec)) - {"dtype", "shape", *SOURCES, *LAYOUT_KEYS})
    if unknown:
        raise TensorError(unknown[0], "unknown key (a tensor has dtype, shape, one of data, file, generate, and "
                          "optionally strides, total_bytes and offset)")
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


def _flatten(data: object, desc: TensorDesc) -> list[object]:
    """The elements of a nested or flat `data` list, in order. YAML aliases can make a short text stand for a
    structure of 10^10 elements, or one that contains itself: the walk refuses any list that contains itself,
    keeps no element past what the shape declares, and visits (lists and elements) at most a generous multiple
    of what a fully nested list of that shape holds."""
    expected = math.prod(desc.shape)
    nested_lists = 1 + sum(math.prod(desc.shape[:rank]) for rank in range(1, len(desc.shape)))
    max_visits = 2 * (expected + nested_lists) + 64
    flat: list[object] = []
    elements = visits = 0
    walking: set[int] = set()  # ids of the lists being walked (the path from the outermost)
    stack: list[tuple[list[object], int]] = []
    current: object = data
    while True:
        visits += 1
        if visits > max_visits:
            raise ValueError(f"nests more than {max_visits} lists and elements, far more than shape "
                             f"{list(desc.shape)} needs (YAML aliases can multiply a short text)")
        if isinstance(current, list):
            if id(current) in walking:
                raise ValueError("refers to itself (a YAML alias inside its own anchor)")
            walking.add(id(current))
            stack.append((current, 0))
        else:
            elements += 1
            if elements <= expected:
                flat.append(current)
        while stack:
            items, position = stack[-1]
            if position < len(items):
                stack[-1] = (items, position + 1)
                current = items[position]
                break
            walking.discard(id(stack.pop()[0]))
        else:
            if elements != expected:
                raise ValueError(f"has {elements} elements, but shape {list(desc.shape)} needs {expected}")
            return flat


def _from_data(data: object, desc: TensorDesc) -> np.ndarray:
    return elements_to_array(_flatten(data, desc), desc.dtype).reshape(desc.shape)


def _from_file(reference: object, desc: TensorDesc, suite_file: Path, archives: Archives) -> np.ndarray:
    if not isinstance(reference, str) or not reference:
        raise ValueError(f"{reference!r} must be a path such as x.npy or x.npz:key")
    name, _, key = reference.partition(":") if ".npz:" in reference else (reference, "", "")
    path = archives.locate(suite_file.parent, name)

    def check(header: NpyHeader) -> None:
        """The file's header against the case's declaration, before any data is read."""
        if header.dtype != desc.dtype.numpy:
            raise ValueError(f"{reference!r} holds {header.dtype}, but dtype says {desc.dtype.name}")
        if header.shape != desc.shape:
            raise ValueError(f"holds shape {list(header.shape)}, but shape says {list(desc.shape)}")

    if path.suffix == ".npz":
        if not key:
            raise ValueError(f"{name!r} is an .npz archive: name the array as {name}:KEY")
        return archives.member(path, name, key, check)
    if path.suffix != ".npy":
        raise ValueError(f"{name!r} must be a .npy file or name.npz:key")
    try:
        with path.open("rb") as stream:
            return read_array(stream.read, check, os.fstat(stream.fileno()).st_size)
    except (NpyError, OSError) as exc:
        raise ValueError(f"{name!r} cannot be loaded: {exc}") from None
