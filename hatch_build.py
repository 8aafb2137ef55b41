"""The wheel's build hook (PEP 517, through hatchling): cross-builds the Windows programs (windows/build.py) into
dmlconform/directml/bin/ with their BUILD.json.

DMLCONFORM_WINDOWS_PROGRAMS chooses what happens without mingw-w64:
* auto (default): the wheel is made without the programs; its BUILD.json says why, the build log says so in one
  line, and `dmlconform doctor` and `--backend directml` name the fix. Installing the Python tool alone needs no
  cross-compiler.
* require: the build fails with one line saying what to install (CI builds release wheels so).
* skip: no programs, on purpose (recorded as such).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

MODE_ENV = "DMLCONFORM_WINDOWS_PROGRAMS"
MODES = ("auto", "require", "skip")
WHEEL_FOLDER = "dmlconform/directml/bin"


def _windows_build(root: Path) -> Any:
    spec = importlib.util.spec_from_file_location("dmlconform_windows_build", root / "windows" / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


class WindowsProgramsHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        mode = os.environ.get(MODE_ENV, "auto") or "auto"
        if mode not in MODES:
            raise RuntimeError(f"{MODE_ENV}={mode!r}: use one of {', '.join(MODES)}")
        root = Path(self.root)
        build = _windows_build(root)
        out = root / "build" / "windows-programs"
        out.mkdir(parents=True, exist_ok=True)
        for stale in out.glob("*.exe"):
            stale.unlink()
        if mode == "skip":
            record = build.BuildRecord(False, reason=f"built with {MODE_ENV}=skip")
        else:
            try:
                record = build.build_programs(out)
            except build.BuildError as exc:
                if mode == "require":
                    raise RuntimeError(f"dmlconform's Windows programs: {exc}") from None
                record = build.BuildRecord(False, reason=str(exc))
                print(f"dmlconform: WARNING: this wheel has no Windows programs (no --backend directml): {exc}",
                      file=sys.stderr)
        (out / build.RECORD).write_text(record.to_json())
        for name in [build.RECORD, *record.programs]:
            build_data["force_include"][str(out / name)] = f"{WHEEL_FOLDER}/{name}"
