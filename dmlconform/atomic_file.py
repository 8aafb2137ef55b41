"""Write a file so that a reader sees the old content or the new, never half of it."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

#: What `open(path, "w")` asks for; the process umask takes away what it masks.
NEW_FILE_MODE = 0o666
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)


def write_atomically(path: Path, data: str | bytes) -> None:
    """A temporary file in the same folder (same file system), flushed to disk, then renamed over `path`.

    The file gets the permissions `open()` would give it: an existing file's, else 0666 less the process umask
    (the temporary file is created with that mode, so the kernel applies the umask; tempfile.mkstemp's 0600
    would make a report unreadable to the web server or the other user a CI job publishes it to)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    handle, temporary = _create_temporary(path)
    try:
        with contextlib.suppress(FileNotFoundError):
            existing = stat.S_IMODE(os.stat(path).st_mode)
            if hasattr(os, "fchmod"):
                os.fchmod(handle, existing)
        with os.fdopen(handle, "wb") as file:
            file.write(raw)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    sync_folder(path.parent)


def _create_temporary(path: Path) -> tuple[int, str]:
    """A new file beside `path`, named so that nothing else uses it, opened for writing."""
    for _ in range(100):
        temporary = str(path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(temporary, _FLAGS, NEW_FILE_MODE), temporary
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}")


def sync_folder(folder: Path) -> None:
    """Make a rename or a new file in `folder` durable (POSIX; Windows has no folder handles to sync)."""
    if os.name == "nt":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
