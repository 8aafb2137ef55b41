"""Where the Windows programs are (dmlconform/directml/programs.py): the wheel's bin/ folder with its BUILD.json, or
DMLCONFORM_WINDOWS_PROGRAMS_DIR; a wheel built without them says why and how to get them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dmlconform.directml.programs import HARNESS, HOST, PROGRAMS_DIR_ENV, ProgramMissing, program_build


def test_a_folder_with_a_build_record_gives_each_program_and_its_digest(tmp_path: Path) -> None:
    for name in (HARNESS, HOST):
        (tmp_path / name).write_bytes(b"MZ")
    (tmp_path / "BUILD.json").write_text(json.dumps({"built": True, "compiler": "x86_64-w64-mingw32-g++ 12",
                                                     "programs": {HARNESS: {"sha256": "ab" * 32}}}))
    build = program_build({PROGRAMS_DIR_ENV: str(tmp_path)})
    assert build.built and build.compiler == "x86_64-w64-mingw32-g++ 12" and build.digests[HARNESS] == "ab" * 32
    assert build.path(HOST) == tmp_path / HOST


def test_a_wheel_built_without_mingw_says_why_and_how_to_rebuild(tmp_path: Path) -> None:
    (tmp_path / "BUILD.json").write_text(json.dumps({"built": False, "reason": "no mingw-w64 C++ compiler"}))
    build = program_build({PROGRAMS_DIR_ENV: str(tmp_path)})
    with pytest.raises(ProgramMissing, match=r"this install of dmlconform has no dml_harness\.exe: its wheel was built "
                                             r"without the Windows programs \(no mingw-w64 C\+\+ compiler\); install "
                                             r"mingw-w64's C\+\+ compiler"):
        build.path(HARNESS)


@pytest.mark.parametrize("record", ["{", "[1]"])
def test_an_unreadable_build_record_is_a_reason_not_a_crash(tmp_path: Path, record: str) -> None:
    (tmp_path / "BUILD.json").write_text(record)
    build = program_build({PROGRAMS_DIR_ENV: str(tmp_path)})
    assert not build.built and "BUILD.json" in build.reason
    with pytest.raises(ProgramMissing, match=r"BUILD\.json"):
        build.path(HOST)


def test_a_folder_without_a_record_counts_its_programs(tmp_path: Path) -> None:
    assert not program_build({PROGRAMS_DIR_ENV: str(tmp_path)}).built
    for name in (HARNESS, HOST):
        (tmp_path / name).write_bytes(b"MZ")
    assert program_build({PROGRAMS_DIR_ENV: str(tmp_path)}).built


def test_a_source_tree_points_at_the_build_script() -> None:
    build = program_build({})
    if build.built:  # an installed package under test
        pytest.skip("dmlconform is installed with its programs here")
    assert "windows/build.py" in build.reason and PROGRAMS_DIR_ENV in build.reason
