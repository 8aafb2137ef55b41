"""Reading one tensor of a suite: `{dtype, shape}` plus exactly one of data, file or generate."""

from __future__ import annotations

import math
import zipfile
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
    """The .npz archives one suite file reads, each opened once: a suite of generated cases names hundreds of
    members of one archive, and reading its zip directory again for each costs more than the data."""

    def __init__(self) -> None:
        self._open: dict[Path, np.lib.npyio.NpzFile] = {}
        self._resolved: dict[Path, Path] = {}

    def resolve(self, path: Path) -> Path:
        """path.resolve(), once per path (it walks every component of the path)."""
        if path not in self._resolved:
            self._resolved[path] = path.resolve()
        return self._resolved[path]

    def open(self, path: Path) -> np.lib.npyio.NpzFile:
        if path not in self._open:
            self._open[path] = np.load(path, allow_pickle=False)
        return self._open[path]

    def is_open(self, path: Path) -> bool:
        return path in self._open

    def close(self) -> None:
        for archive in self._open.values():
            archive.close()
        self._open.clear()


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


def read_tensor(spec: Mapping[str, object], desc: TensorDesc, suite_file: Path, root: Path,
                data_required: bool = True, archives: Archives | None = None) -> np.ndarray | None:
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
            array = _from_file(spec["file"], desc, suite_file, root, archives)
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


def _from_file(reference: object, desc: TensorDesc, suite_file: Path, root: Path, archives: Archives | None
               ) -> np.ndarray:
    if not isinstance(reference, str) or not reference:
        raise ValueError(f"{reference!r} must be a path such as x.npy or x.npz:key")
    name, _, key = reference.partition(":") if ".npz:" in reference else (reference, "", "")
    resolve = archives.resolve if archives is not None else Path.resolve
    path = resolve(suite_file.parent / name)
    if not path.is_relative_to(resolve(root)):
        raise ValueError(f"{name!r} lies outside the suite tree {root}")
    if not path.is_file():
        raise ValueError(f"{name!r} does not exist")
    if path.suffix == ".npz":
        if not key:
            raise ValueError(f"{name!r} is an .npz archive: name the array as {name}:KEY")
        if (archives is None or not archives.is_open(path)) and not zipfile.is_zipfile(path):
            raise ValueError(f"{name!r} is not a readable .npz archive")
        try:
            if archives is None:
                with np.load(path, allow_pickle=False) as archive:
                    array = _member(archive, name, key)
            else:
                array = _member(archives.open(path), name, key)
        except (zipfile.BadZipFile, EOFError) as exc:
            raise ValueError(f"{name!r} is not a readable .npz archive ({exc})") from None
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


def _member(archive: np.lib.npyio.NpzFile, name: str, key: str) -> np.ndarray:
    if key not in archive.files:
        raise ValueError(f"{name!r} has no array {key!r} (it has {', '.join(archive.files)})")
    return archive[key]
