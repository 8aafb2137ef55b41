"""The run command's early start: which runs get one, which run takes its workers, and that it stays light."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from dmlconform.backends.base import BackendOptions
from dmlconform.cli import early_start
from dmlconform.directml.start import ProgramStart
from dmlconform.directml.wine import Launch

OPTIONS = {"harness": None, "directml": None, "directml_version": None, "adapter": "lavapipe", "warp": False,
           "program_options": ()}


def test_only_the_directml_backend_without_a_harness_of_ones_own_starts_early() -> None:
    assert early_start.start_early("numpy", 2, OPTIONS) is None
    assert early_start.start_early("onnxruntime", 2, OPTIONS) is None
    assert early_start.start_early("directml", 2, {**OPTIONS, "harness": "my-harness"}) is None


def test_the_switch_turns_the_early_start_off(monkeypatch) -> None:
    monkeypatch.setenv(early_start.SWITCH, "off")
    assert not early_start.wanted("directml")
    assert early_start.start_early("directml", 2, OPTIONS) is None
    monkeypatch.setenv(early_start.SWITCH, "")
    assert early_start.wanted("directml") and not early_start.wanted("numpy")


def test_a_start_that_cannot_be_worked_out_early_is_left_to_the_ordinary_path(tmp_path: Path) -> None:
    """No worker starts; the run then says why in its own words (the ordinary path's one line)."""
    assert early_start.start_early("directml", 2, {**OPTIONS, "directml": str(tmp_path / "nowhere.dll")}) is None


def _early(options: dict[str, object]) -> early_start.EarlyStart:
    start = ProgramStart(Path("/p/dml_harness.exe"), Launch(("dml_harness.exe",), {}), None,  # type: ignore[arg-type]
                         facts={})
    return early_start.EarlyStart(dict(options), start)


def test_the_run_takes_the_early_workers_only_when_its_options_are_the_ones_the_start_was_worked_out_from() -> None:
    early = _early(OPTIONS)
    options = BackendOptions(adapter="lavapipe", timeout_s=5)
    assert early.serves("directml", options)
    assert early.serves("directml", replace(options, timeout_s=30))  # not part of the harness's start
    assert not early.serves("numpy", options)
    assert not early.serves("directml", replace(options, adapter="nvidia"))
    assert not early.serves("directml", replace(options, program_options=("--disable-metacommands",)))
    assert not early.serves("directml", replace(options, directml_version="1.13.1"))


def test_the_early_start_imports_neither_numpy_nor_the_runner() -> None:
    """What it runs ahead of: the command's own imports."""
    code = ("import sys, dmlconform.cli.early_start; "
            "print(sorted(m for m in ('numpy', 'dmlconform.runner', 'dmlconform.backends', 'dmlconform.ops') "
            "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


