"""The run command's early start: which runs get one, which run takes its workers, and that it stays light."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from dmlconform.backends.base import BackendOptions
from dmlconform.cli import early_start
from dmlconform.directml.start import ProgramStart
from dmlconform.directml.wine import Launch

OPTIONS = {"harness": None, "ep": "auto", "directml": None, "directml_version": None, "adapter": "lavapipe",
           "warp": False, "session_config": (), "program_options": ()}


def test_only_the_packaged_programs_start_early(monkeypatch: pytest.MonkeyPatch) -> None:
    """The directml backend's harness, and the ONNX model host of `--ep dml` off Windows; never a program of one's
    own (--harness, DMLCONFORM_ORT_HOST) nor another backend or EP."""
    monkeypatch.delenv(early_start.SWITCH, raising=False)
    monkeypatch.delenv(early_start.OWN_HOST_ENV, raising=False)
    assert early_start.wanted("directml", OPTIONS)
    assert not early_start.wanted("directml", {**OPTIONS, "harness": "my-harness"})
    assert not early_start.wanted("numpy", OPTIONS)
    assert not early_start.wanted("onnxruntime", OPTIONS)  # --ep auto: onnxruntime in the workers
    assert not early_start.wanted("onnxruntime", {**OPTIONS, "ep": "cpu"})
    dml = {**OPTIONS, "ep": "dml"}
    assert early_start.wanted("onnxruntime", dml) == (sys.platform != "win32")
    assert not early_start.wanted("onnxruntime", {**dml, "harness": "my-host"})
    monkeypatch.setenv(early_start.OWN_HOST_ENV, "my-host")
    assert not early_start.wanted("onnxruntime", dml)
    assert early_start.start_early("onnxruntime", 2, dml) is None
    assert early_start.start_early("numpy", 2, OPTIONS) is None
    assert early_start.start_early("directml", 2, {**OPTIONS, "harness": "my-harness"}) is None


def test_the_switch_turns_the_early_start_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(early_start.OWN_HOST_ENV, raising=False)
    monkeypatch.setenv(early_start.SWITCH, "off")
    assert not early_start.wanted("directml", OPTIONS) and not early_start.wanted("onnxruntime", {**OPTIONS, "ep": "dml"})
    assert early_start.start_early("directml", 2, OPTIONS) is None
    for value in ("0", "False", " no "):
        monkeypatch.setenv(early_start.SWITCH, value)
        assert not early_start.wanted("directml", OPTIONS), value
    for value in ("", "on", "1"):
        monkeypatch.setenv(early_start.SWITCH, value)
        assert early_start.wanted("directml", OPTIONS), value


def test_a_start_that_cannot_be_worked_out_early_is_left_to_the_ordinary_path(tmp_path: Path) -> None:
    """No worker starts; the run then says why in its own words (the ordinary path's one line)."""
    nowhere = str(tmp_path / "nowhere.dll")
    assert early_start.start_early("directml", 2, {**OPTIONS, "directml": nowhere}) is None
    assert early_start.start_early("onnxruntime", 2, {**OPTIONS, "ep": "dml", "directml": nowhere}) is None


def _early(backend: str, options: dict[str, object]) -> early_start.EarlyStart:
    start = ProgramStart(Path("/p/dml_harness.exe"), Launch(("dml_harness.exe",), {}), None,  # type: ignore[arg-type]
                         facts={})
    return early_start.EarlyStart(backend, {name: options[name] for name in early_start.START_OPTIONS[backend]},
                                  start)


def test_the_run_takes_the_early_workers_only_when_its_options_are_the_ones_the_start_was_worked_out_from() -> None:
    early = _early("directml", OPTIONS)
    options = BackendOptions(adapter="lavapipe", timeout_s=5)
    assert early.serves("directml", options)
    assert early.serves("directml", replace(options, timeout_s=30))  # not part of the harness's start
    assert not early.serves("numpy", options)
    assert not early.serves("directml", replace(options, adapter="nvidia"))
    assert not early.serves("directml", replace(options, program_options=("--disable-metacommands",)))
    assert not early.serves("directml", replace(options, directml_version="1.13.1"))
    host = _early("onnxruntime", {**OPTIONS, "ep": "dml", "session_config": ("ep.dml.disable_graph_fusion=1",)})
    ep = replace(options, ep="dml", session_config=("ep.dml.disable_graph_fusion=1",))
    assert host.serves("onnxruntime", ep) and not host.serves("directml", ep)
    assert not host.serves("onnxruntime", replace(ep, session_config=()))
    assert not host.serves("onnxruntime", replace(ep, ep="cpu"))


def test_the_early_start_imports_neither_numpy_nor_the_runner() -> None:
    """What it runs ahead of: the command's own imports."""
    code = ("import sys, dmlconform.cli.early_start; "
            "print(sorted(m for m in ('numpy', 'dmlconform.runner', 'dmlconform.backends', 'dmlconform.ops') "
            "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


