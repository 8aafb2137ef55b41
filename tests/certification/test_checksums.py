"""The checksum list: what it accepts, and each way a package can differ from it."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from dmlconform.certification import CHECKSUMS
from dmlconform.certification.checksums import check_checksums, write_checksums


@pytest.fixture
def package(tmp_path: Path) -> Path:
    folder = tmp_path / "pkg"
    (folder / "outputs" / "s.edge" / "case-1").mkdir(parents=True)
    (folder / "results.json").write_text('{"format": "x"}\n')
    (folder / "outputs" / "s.edge" / "case-1" / "OutputGradientTensor.npy").write_bytes(b"\x93NUMPY\x01\x00")
    return folder


def lines(folder: Path) -> list[str]:
    return [p.line() for p in check_checksums(folder)[0]]


def test_an_untouched_package_matches_and_the_digest_is_the_lists_sha256(package: Path) -> None:
    digest = write_checksums(package)
    problems, intact, found = check_checksums(package)
    assert problems == [] and intact == {"results.json", "outputs/s.edge/case-1/OutputGradientTensor.npy"}
    assert found == digest == hashlib.sha256((package / CHECKSUMS).read_bytes()).hexdigest()
    assert (package / CHECKSUMS).read_text().splitlines()[0].endswith("  outputs/s.edge/case-1/OutputGradientTensor.npy")


def test_a_changed_a_missing_and_an_added_file_are_each_named(package: Path) -> None:
    write_checksums(package)
    (package / "results.json").write_text('{"format": "y"}\n')
    (package / "outputs" / "s.edge" / "case-1" / "OutputGradientTensor.npy").unlink()
    (package / "extra.txt").write_text("later")
    assert lines(package) == [
        "outputs/s.edge/case-1/OutputGradientTensor.npy: missing: CHECKSUMS.sha256 lists it",
        "results.json: changed: its SHA-256 is " + hashlib.sha256(b'{"format": "y"}\n').hexdigest()[:16]
        + "…, CHECKSUMS.sha256 says " + hashlib.sha256(b'{"format": "x"}\n').hexdigest()[:16] + "…",
        "extra.txt: is not in CHECKSUMS.sha256: added after the package was made",
    ]


@pytest.mark.parametrize("line", ["0" * 64 + "  ../outside.txt", "0" * 64 + "  /etc/passwd", "0" * 64 + " results.json",
                                  "xyz  results.json", "0" * 64 + "  a//b"])
def test_a_line_that_could_leave_the_package_or_is_malformed_is_refused(package: Path, line: str) -> None:
    write_checksums(package)
    with (package / CHECKSUMS).open("a") as file:
        file.write(line + "\n")
    assert "CHECKSUMS.sha256: line 3: is not '<sha256>  <path inside the package>'" in lines(package)


def test_a_missing_list_and_a_link_are_problems(package: Path, tmp_path: Path) -> None:
    assert lines(package) == ["CHECKSUMS.sha256: missing: a package lists its files' SHA-256 here"]
    write_checksums(package)
    if os.name == "nt":
        pytest.skip("symbolic links need privileges on Windows")
    (tmp_path / "secret").write_text("outside")
    (package / "link.txt").symlink_to(tmp_path / "secret")
    assert "link.txt: is not a regular file (a link or a device); a package holds only files" in lines(package)
    with pytest.raises(ValueError, match="only regular files"):
        write_checksums(package)


def test_an_oversized_list_is_not_read(package: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_checksums(package)
    monkeypatch.setattr("dmlconform.certification.checksums.MAX_CHECKSUMS_BYTES", 10)
    assert lines(package) == ["CHECKSUMS.sha256: is larger than 0 MiB; not read"]
