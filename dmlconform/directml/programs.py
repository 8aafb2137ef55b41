"""The Windows programs this package carries: the DirectML harness and the ONNX Runtime host.

The wheel's build (hatch_build.py, windows/build.py) puts them in dmlconform/directml/bin/ with BUILD.json, which
says how they were built or why they were not (a wheel built without mingw-w64). DMLCONFORM_WINDOWS_PROGRAMS_DIR
names another folder holding them (a developer's build, the tests').
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

PROGRAMS_DIR_ENV = "DMLCONFORM_WINDOWS_PROGRAMS_DIR"
HARNESS = "dml_harness.exe"
HOST = "ort_dml_host.exe"
RECORD = "BUILD.json"
PACKAGED = Path(__file__).resolve().parent / "bin"
REBUILD_HINT = ("install mingw-w64's C++ compiler (Debian/Ubuntu: apt-get install g++-mingw-w64-x86-64-win32) and "
                "reinstall dmlconform from its source (pip install --force-reinstall --no-binary dmlconform "
                "dmlconform, or pip install . in a checkout)")


class ProgramMissing(RuntimeError):
    """A Windows program is not in this install; the message is one line with the fix."""


@dataclass(frozen=True)
class ProgramBuild:
    """Where the programs are and what BUILD.json says of them."""

    folder: Path
    origin: str  # "the wheel" or "DMLCONFORM_WINDOWS_PROGRAMS_DIR"
    built: bool
    reason: str = ""
    compiler: str = ""
    digests: Mapping[str, str] = field(default_factory=dict)

    def path(self, name: str) -> Path:
        """The program's path; ProgramMissing says why it is not there."""
        path = self.folder / name
        if path.is_file():
            return path
        if not self.built and self.reason:
            raise ProgramMissing(f"this install of dmlconform has no {name}: its wheel was built without the Windows "
                                 f"programs ({self.reason}); {REBUILD_HINT}")
        raise ProgramMissing(f"no {name} in {self.folder} ({self.origin}); {REBUILD_HINT}")


def program_build(environ: Mapping[str, str] | None = None) -> ProgramBuild:
    env = os.environ if environ is None else environ
    if env.get(PROGRAMS_DIR_ENV):
        folder, origin = Path(env[PROGRAMS_DIR_ENV]), PROGRAMS_DIR_ENV
    else:
        folder, origin = PACKAGED, "the wheel"
    record_path = folder / RECORD
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        if origin == PROGRAMS_DIR_ENV:
            present = all((folder / name).is_file() for name in (HARNESS, HOST))
            return ProgramBuild(folder, origin, present, "" if present else f"{folder} holds neither program")
        return ProgramBuild(folder, origin, False, "dmlconform runs from a source tree, not an install: build the "
                            f"programs with python windows/build.py DIR and set {PROGRAMS_DIR_ENV}")
    except (OSError, ValueError) as exc:
        return ProgramBuild(folder, origin, False, f"{record_path} is unreadable: {exc}")
    if not isinstance(record, dict):
        return ProgramBuild(folder, origin, False, f"{record_path} is not a JSON object")
    programs = record.get("programs") if isinstance(record.get("programs"), dict) else {}
    digests = {name: str(facts.get("sha256", "")) for name, facts in programs.items() if isinstance(facts, dict)}
    return ProgramBuild(folder, origin, bool(record.get("built")), str(record.get("reason", "")),
                        str(record.get("compiler", "")), digests)
