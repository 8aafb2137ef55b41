"""Reports are replaced whole: a failed write leaves the old file and no temporary behind."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from dmlconform.atomic_file import write_atomically


def test_a_write_replaces_the_file_and_leaves_nothing_else(tmp_path: Path) -> None:
    target = tmp_path / "out" / "r.json"
    write_atomically(target, "old\n")
    write_atomically(target, b"new\n")
    assert target.read_text() == "new\n" and os.listdir(target.parent) == ["r.json"]


def test_a_write_that_fails_before_the_rename_keeps_the_old_file(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "r.json"
    write_atomically(target, "old\n")

    def fail(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="No space left"):
        write_atomically(target, "new\n")
    assert target.read_text() == "old\n" and os.listdir(tmp_path) == ["r.json"]


@pytest.fixture
def umask():
    """Sets the process umask for a test (restored after): `umask(0o027)`."""
    previous = os.umask(0o022)
    yield os.umask
    os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.skipif(os.name == "nt", reason="POSIX permissions")
@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002, 0o027])
def test_a_new_file_gets_the_mode_open_would_give_it(tmp_path: Path, umask, mask: int) -> None:
    """Before: mkstemp's 0600 whatever the umask, so a report published to a web server was unreadable."""
    umask(mask)
    write_atomically(tmp_path / "report.json", "{}\n")
    with open(tmp_path / "by_open.json", "w") as file:
        file.write("{}\n")
    assert mode(tmp_path / "report.json") == mode(tmp_path / "by_open.json") == 0o666 & ~mask


@pytest.mark.skipif(os.name == "nt", reason="POSIX permissions")
def test_a_replaced_file_keeps_its_mode_as_with_open(tmp_path: Path, umask) -> None:
    umask(0o077)
    target = tmp_path / "report.json"
    target.write_text("old\n")
    target.chmod(0o640)
    write_atomically(target, "new\n")
    assert target.read_text() == "new\n" and mode(target) == 0o640
