"""Parsed suite files kept between runs, so that a run does not parse the same YAML and tensors again.

Parsing a bundled tier (YAML, .npz members, every description rule) costs more than running it on a GPU: 0.7 s of
the standard tier's 3 s through the DirectML harness on lavapipe, several seconds for the full tier. What a file's
parse gave is kept in the cache folder's `suites/` (cache_folder.py), under the SHA-256 of everything the parse
depends on: the suite file's path and bytes, its tree's root and every other file in that tree (the tensors it may
name), the tier and the limits it was read at, and the code that parsed it (the source parsing can run, and Python's,
numpy's and PyYAML's versions). A parse made from anything else is never used, so a hit is exactly what parsing
again would give; the tree's limits are checked again over every file, hit or not.

Entries are pickles, read back only from the user's own cache folder, the one whose DirectML DLLs the tool loads and
runs: unpickling them trusts nothing that running the tool does not already trust. An entry that cannot be read
(torn by a crash, made by another Python) is a miss and is written again. DMLCONFORM_SUITE_CACHE=off turns the cache
off; the folder is bounded (MAX_CACHE_BYTES, the least recently used entries go first).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import secrets
import stat
import sys
from collections.abc import Mapping
from functools import cache
from pathlib import Path

from dmlconform.cache_folder import cache_root
from dmlconform.case import Case
from dmlconform.suite.limits import SuiteLimits, Tally
from dmlconform.suite.loader import SUITE_SUFFIXES, SuiteParser, count_into
from dmlconform.suite.tiers import Tier

Parsed = tuple[list[Case], str]

#: The cache's folder under the cache root.
FOLDER = "suites"
#: A suite tree whose other files (tensors) are more than this, or more in number than MAX_TREE_FILES, is not
#: cached: hashing them on every run would cost more than it saves, and a folder given by mistake (a whole checkout)
#: is not read end to end.
MAX_TREE_BYTES = 1 << 30
MAX_TREE_FILES = 10_000
#: A suite file larger than this is parsed each time (the loader's own limits decide whether it may be).
MAX_SUITE_BYTES = 256 << 20
#: The whole cache is kept below this; an entry larger than a quarter of it is not kept.
MAX_CACHE_BYTES = 2 << 30
_CHUNK = 1 << 20


def enabled(environ: Mapping[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return env.get("DMLCONFORM_SUITE_CACHE", "").strip().lower() not in ("off", "0", "no", "false")


def cache_folder(environ: Mapping[str, str] | None = None) -> Path:
    return cache_root(environ) / FOLDER


def with_cache(parse: SuiteParser, folder: Path | None = None) -> SuiteParser:
    """`parse`, with every file it parsed kept in `folder` (default: the user's cache) and taken from there the next
    time its key is the same."""

    def parse_with_cache(files: list[tuple[Path, Path]], tier: Tier | None, limits: SuiteLimits) -> list[Parsed]:
        where = folder if folder is not None else cache_folder()
        keys = _keys(files, tier, limits)
        results: dict[int, Parsed] = {}
        for position, key in enumerate(keys):
            hit = _read(where / key) if key is not None else None
            if hit is not None:
                results[position] = hit
        missing = [position for position in range(len(files)) if position not in results]
        if missing:
            parsed = parse([files[position] for position in missing], tier, limits)
            for position, result in zip(missing, parsed, strict=True):
                results[position] = result
                key = keys[position]
                if key is not None:
                    _write(where, key, result)
        ordered = [results[position] for position in range(len(files))]
        tree = Tally(limits)
        for (file, root), (cases, _) in zip(files, ordered, strict=True):
            count_into(tree, file, root, cases)
        return ordered

    return parse_with_cache


def _keys(files: list[tuple[Path, Path]], tier: Tier | None, limits: SuiteLimits) -> list[str | None]:
    """Each file's key, None where it is not cached (its tree is too large, a file cannot be read)."""
    trees: dict[Path, str | None] = {}
    keys: list[str | None] = []
    for file, root in files:
        if root not in trees:
            trees[root] = _tree_digest(root)
        tree = trees[root]
        text = _bounded_read(file, MAX_SUITE_BYTES) if tree is not None else None
        if tree is None or text is None:
            keys.append(None)
            continue
        digest = hashlib.sha256()
        for part in (code_fingerprint(), str(file.resolve()), str(root.resolve()), tree,
                     tier.value if tier else "", limits.describe()):
            digest.update(part.encode("utf-8") + b"\0")
        digest.update(text)
        keys.append(digest.hexdigest())
    return keys


def _tree_digest(root: Path) -> str | None:
    """SHA-256 over the relative path and bytes of every file under `root` but its suite files; None when there
    are too many, too large, or one cannot be read."""
    try:
        paths = []
        for path in root.rglob("*"):
            if path.suffix not in SUITE_SUFFIXES and path.is_file():
                paths.append(path)
                if len(paths) > MAX_TREE_FILES:
                    return None
        if sum(path.stat().st_size for path in paths) > MAX_TREE_BYTES:
            return None
        digest = hashlib.sha256()
        for path in sorted(paths):
            data = _bounded_read(path, MAX_TREE_BYTES)
            if data is None:
                return None
            digest.update(path.relative_to(root).as_posix().encode("utf-8") + b"\0")
            digest.update(hashlib.sha256(data).digest())
        return digest.hexdigest()
    except (OSError, ValueError):
        return None


def _bounded_read(path: Path, most: int) -> bytes | None:
    """The bytes of a regular file of at most `most` bytes, read no further than its size said; None otherwise (a
    file that grew while it was read, a device, a pipe)."""
    try:
        with path.open("rb") as file:
            status = os.fstat(file.fileno())
            if not stat.S_ISREG(status.st_mode) or status.st_size > most:
                return None
            data = file.read(status.st_size + 1)
    except OSError:
        return None
    return data if len(data) == status.st_size else None


#: What parsing can run: by the layer rule (docs/architecture.md, tests/test_layers.py) `suite/` imports only its own
#: layer and those below, which are these packages and the top-level modules (tests/suite/test_parsed_cache.py checks
#: that every module the loader imports is among them). Other code changing (a backend, a command) keeps the cache.
PARSING_PACKAGES = ("suite", "ops", "compare", "directml", "interactions", "surface")


def parsing_sources() -> list[Path]:
    package = Path(__file__).resolve().parents[1]
    top = [path for path in package.glob("*.py")]
    return sorted(top + [path for name in PARSING_PACKAGES for path in (package / name).rglob("*.py")])


@cache
def code_fingerprint() -> str:
    """SHA-256 over the Python source parsing can run and the versions of Python, numpy and PyYAML."""
    import numpy
    import yaml

    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256(f"{sys.version}\0{numpy.__version__}\0{yaml.__version__}\0".encode())
    for path in parsing_sources():
        digest.update(path.relative_to(package).as_posix().encode("utf-8") + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _read(path: Path) -> Parsed | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        cases, name = pickle.loads(data)
        if not isinstance(name, str) or not isinstance(cases, list) or \
                not all(isinstance(case, Case) for case in cases):
            raise TypeError("not a parsed suite file")
    except Exception:  # torn, or made by other code: a miss, written again
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # recently used: pruned last
    return cases, name


def _write(folder: Path, key: str, parsed: Parsed) -> None:
    """Keep one parse (a cache that cannot be written is no cache: nothing is said)."""
    try:
        data = pickle.dumps(parsed, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # something in a case that does not pickle: that file is parsed each time
        return
    if len(data) > MAX_CACHE_BYTES // 4:
        return
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        temporary = folder / f".{key}.{secrets.token_hex(6)}.tmp"
        try:
            temporary.write_bytes(data)
            os.replace(temporary, folder / key)
        finally:
            with contextlib.suppress(OSError):
                temporary.unlink()
        _prune(folder)


def _prune(folder: Path, keep_bytes: int = MAX_CACHE_BYTES) -> None:
    """The least recently used entries removed until the folder holds at most `keep_bytes`."""
    entries: list[tuple[float, int, Path]] = []
    for path in folder.iterdir():
        with contextlib.suppress(OSError):
            status = path.stat()
            entries.append((status.st_mtime, status.st_size, path))
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries, key=lambda entry: entry[0]):
        if total <= keep_bytes:
            return
        with contextlib.suppress(OSError):
            path.unlink()
            total -= size

