"""`repro`'s replay command line and `show`'s re-run take every backend option a run recorded."""

from __future__ import annotations

from datetime import UTC, datetime

from dmlconform.backend_info import BackendInfo
from dmlconform.backends.base import BackendOptions
from dmlconform.cli.execution import backend_settings
from dmlconform.cli.repro import run_options
from dmlconform.feature_levels import FeatureLevel
from dmlconform.run_result import RunResult
from dmlconform.triage.actual import options_of


def _run(backend: str, settings: dict[str, object]) -> RunResult:
    info = BackendInfo(backend, "1", "device", FeatureLevel.L6_4)
    return RunResult(info, FeatureLevel.L6_4, datetime.now(UTC), 0.0, settings=settings)


def test_a_torch_run_on_a_gpu_with_a_variant_replays_on_that_device_with_that_variant() -> None:
    run = _run("torch", backend_settings("torch", BackendOptions(variant="swapped", device="cuda:1")))
    options = run_options(run, FeatureLevel.L6_4)
    assert options[options.index("--device") + 1] == "cuda:1"
    assert options[options.index("--variant") + 1] == "swapped"
    assert options_of(run).device == "cuda:1" and options_of(run).variant == "swapped"


def test_a_numpy_run_replays_without_torch_options() -> None:
    options = run_options(_run("numpy", backend_settings("numpy", BackendOptions())), FeatureLevel.L5_1)
    assert options == ["--backend", "numpy", "--feature-level", "5_1"]
