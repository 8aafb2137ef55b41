"""The package's own build of the Windows programs (windows/build.py, run by hatch_build.py while the wheel is made):
the compiler missing is one line with the install; the build cache gives the same bytes without compiling; and a
wheel built without mingw-w64 carries a BUILD.json saying so, or, when the build must carry them, the build fails."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.harness.wine_tools import windows_build

ROOT = Path(__file__).resolve().parents[2]


def test_no_compiler_is_one_line_with_the_install() -> None:
    build = windows_build()
    with pytest.raises(build.BuildError, match=r"^no mingw-w64 C\+\+ compiler \(/nowhere/g\+\+ is not on PATH\): "
                                               r"install mingw-w64's C\+\+ compiler .*apt-get install "
                                               "g\\+\\+-mingw-w64-x86-64-win32"):
        build.find_compiler({"DMLCONFORM_MINGW_CXX": "/nowhere/g++", "PATH": ""})


def test_each_program_is_every_source_of_common_and_its_own_folder() -> None:
    build = windows_build()
    for program in build.PROGRAMS:
        names = {f"{path.parent.name}/{path.name}" for path in build.sources(program)}
        assert "common/protocol.cpp" in names and "common/server.cpp" in names
        assert any(name.startswith(f"{program.folder}/") for name in names)


def test_the_cmake_project_lists_every_source_the_package_build_compiles() -> None:
    """windows/CMakeLists.txt (the MSVC build on Windows) names its sources one by one: a file added to a program's
    folder must be added there too, or the Windows build links without it."""
    import re

    build = windows_build()
    text = (ROOT / "windows" / "CMakeLists.txt").read_text(encoding="utf-8")
    listed = {name for block in re.findall(r"set\(\w+_SOURCES\s+([^)]*)\)", text) for name in block.split()}
    for program in build.PROGRAMS:
        folders = ("common", program.folder)
        on_disk = {f"{folder}/{path.name}" for folder in folders for pattern in ("*.cpp", "*.h")
                   for path in (ROOT / "windows" / folder).glob(pattern)}
        assert on_disk - listed == set(), program.name
    assert "ort_host/buffer_pool.cpp" in listed and "ort_host/vtable_hook.h" in listed


FAKE_COMPILER = """#!/bin/sh
# A stand-in for x86_64-w64-mingw32-g++: its version, and an "exe" naming what it was given, for the cache logic.
[ "$1" = --version ] && { echo "fake-g++ $FAKE_VERSION"; exit 0; }
echo "$@" >> "$FAKE_LOG"
while [ $# -gt 0 ]; do [ "$1" = -o ] && { printf 'MZ %s' "$FAKE_VERSION" > "$2"; }; shift; done
"""


def test_the_build_cache_gives_the_same_bytes_and_a_new_compiler_compiles_again(tmp_path: Path) -> None:
    build = windows_build()
    compiler = tmp_path / "g++"
    compiler.write_text(FAKE_COMPILER)
    compiler.chmod(0o755)
    log = tmp_path / "compiled.log"
    env = {"DMLCONFORM_MINGW_CXX": str(compiler), "DMLCONFORM_BUILD_CACHE": str(tmp_path / "cache"),
           "FAKE_VERSION": "1", "FAKE_LOG": str(log), "PATH": "/usr/bin:/bin"}
    import os

    saved = dict(os.environ)
    os.environ.update(env)  # the fake compiler reads its settings from the environment it is run in
    try:
        first = build.build_programs(tmp_path / "a", environ=env)
        again = build.build_programs(tmp_path / "b", environ=env)
        env["FAKE_VERSION"] = os.environ["FAKE_VERSION"] = "2"
        newer = build.build_programs(tmp_path / "c", environ=env)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert {f["origin"] for f in first.programs.values()} == {"compiled"}
    assert {f["origin"] for f in again.programs.values()} == {"cache"}
    assert {f["origin"] for f in newer.programs.values()} == {"compiled"}  # the compiler's version is in the key
    assert log.read_text().count(" -o ") == 2 * len(build.PROGRAMS)
    for name in first.programs:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes() == b"MZ 1"
        assert first.programs[name]["sha256"] == again.programs[name]["sha256"]
    record = json.loads((tmp_path / "b" / "BUILD.json").read_text())
    assert record["built"] is True and record["compiler"] == "fake-g++ 1"


def _wheel(tmp_path: Path, mode: str) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("hatchling")
    pytest.importorskip("build")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "DMLCONFORM_MINGW_CXX": "/nowhere/g++",
           "DMLCONFORM_WINDOWS_PROGRAMS": mode}
    # --no-isolation: the test environment's hatchling (the [test] extra); the hook is the same either way.
    return subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir",
                           str(tmp_path / "dist"), str(ROOT)], capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.slow
def test_a_wheel_built_without_mingw_carries_no_programs_and_says_why(tmp_path: Path) -> None:
    made = _wheel(tmp_path, "auto")
    assert made.returncode == 0, made.stdout[-2000:] + made.stderr[-2000:]
    assert "this wheel has no Windows programs" in made.stdout + made.stderr
    (wheel,) = (tmp_path / "dist").glob("dmlconform-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        record = json.loads(archive.read("dmlconform/directml/bin/BUILD.json"))
    assert not any(name.endswith(".exe") for name in names)
    assert record["built"] is False and "no mingw-w64 C++ compiler" in record["reason"]


@pytest.mark.slow
def test_a_build_that_must_carry_the_programs_fails_in_one_line_without_mingw(tmp_path: Path) -> None:
    made = _wheel(tmp_path, "require")
    assert made.returncode != 0
    assert "dmlconform's Windows programs: no mingw-w64 C++ compiler" in made.stdout + made.stderr
    assert not list((tmp_path / "dist").glob("*.whl")) if (tmp_path / "dist").exists() else True
