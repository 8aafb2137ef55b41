"""Reports are replaced whole: a failed write leaves the old file and no temporary behind."""

from __future__ import annotations

import os
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
