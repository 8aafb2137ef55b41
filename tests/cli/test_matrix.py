"""`dmlconform matrix` with fake releases and runs (no Wine): the rows, matrix.json, matrix.md and the table for a
release whose outputs moved, one whose status changed, one that shares the reference's DLL (run once) and one that
does not load; the exit status; the run engine's wiring (result files, --xz, --reuse); and, where Wine and a fetched
release are here, one real release."""

from __future__ import annotations

import copy
import dataclasses
import importlib
import json
import lzma
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from dmlconform.backends.numpy_backend import NumpyBackend
from dmlconform.case_result import Status
from dmlconform.cli import bundled_suites, main
from dmlconform.directml.library import FetchedRelease
from dmlconform.feature_levels import FeatureLevel
from dmlconform.results.matrix import ReleaseRun, ReleaseUnusable
from dmlconform.run_result import RunResult
from dmlconform.runner import run_cases
from dmlconform.suite.loader import load_paths

#: The module, not the command that dmlconform.cli exports under its name.
matrix_command = importlib.import_module("dmlconform.cli.matrix")
SHA = {"1.24.4": "4" * 64, "1.24.3": "4" * 64, "1.20.0": "2" * 64, "1.16.0": "6" * 64, "1.13.1": "3" * 64}
DIRECTML = {"1.24.4": "1.15.4.0", "1.24.3": "1.15.4.0", "1.20.0": "1.15.2.0", "1.16.0": "1.12.1.0", "1.13.1": "1.9.1.0"}
DEVICE_FAILS = "dml_harness.exe: DMLCreateDevice1 failed: 0x887A0004 (DXGI_ERROR_UNSUPPORTED)"


@pytest.fixture(scope="module")
def seed_run() -> RunResult:
    """What the reference returns on the seed examples, standing in for DirectML's run (digests and all)."""
    run = run_cases(load_paths([bundled_suites() / "seed"]), NumpyBackend())
    run.backend.name, run.backend.feature_level = "directml", FeatureLevel.L6_4
    return run


def release(version: str, folder: Path) -> FetchedRelease:
    return FetchedRelease(version, DIRECTML[version], folder / version,
                          {"DirectML.dll": SHA[version]}, "wheel.whl", "0" * 64, "2026-01-01T00:00:00Z")


def fake_releases(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, seed_run: RunResult) -> list[str]:
    """1.24.4 the reference; 1.24.3 the same DLL; 1.20.0 one case's outputs moved (still PASS); 1.16.0 one case's
    status changed; 1.13.1's DLL does not load. Returns the releases run, in order."""
    ran: list[str] = []

    def changed(version: str) -> RunResult:
        run = copy.deepcopy(seed_run)
        run.backend.extra = {"directml_dll_sha256": SHA[version]}
        case = {r.id: r for r in run.results}
        if version == "1.20.0":
            case["seed/relu-grad-formula"].output_sha256 = "f" * 64
        if version == "1.16.0":
            case["seed/slice-grad-4d"].status = Status.FAIL
        return run

    def runner(*args: object, **kwargs: object) -> Callable[[FetchedRelease], ReleaseRun]:
        def run_release(fetched: FetchedRelease) -> ReleaseRun:
            ran.append(fetched.package_version)
            if fetched.package_version == "1.13.1":
                raise ReleaseUnusable(DEVICE_FAILS)
            return ReleaseRun(changed(fetched.package_version), f"onnxruntime-directml-{fetched.package_version}.json")
        return run_release

    def fetcher(*args: object) -> Callable[[str], FetchedRelease]:
        def fetch(version: str) -> FetchedRelease:
            if version not in SHA:
                raise ReleaseUnusable(f"onnxruntime-directml=={version}: not on the package index")
            return release(version, tmp_path)
        return fetch

    monkeypatch.setattr(matrix_command, "release_runner", runner)
    monkeypatch.setattr(matrix_command, "release_fetcher", fetcher)
    monkeypatch.delenv("DMLCONFORM_DIRECTML", raising=False)
    return ran


def test_the_matrix_names_what_moved_runs_a_dll_once_and_fails_for_a_release_that_does_not_load(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, seed_run: RunResult) -> None:
    ran = fake_releases(monkeypatch, tmp_path, seed_run)
    out = tmp_path / "out"
    outcome = CliRunner().invoke(main, ["matrix", "1.13.1", "1.24.3", "1.16.0", "1.24.4", "1.20.0", "--tier", "smoke",
                                        "--out", str(out)])
    assert outcome.exit_code == 1, outcome.output
    assert ran == ["1.24.4", "1.20.0", "1.16.0", "1.13.1"]  # newest first; 1.24.3 shares 1.24.4's DLL

    document = json.loads((out / "matrix.json").read_text())
    rows = {row["package_version"]: row for row in document["releases"]}
    assert list(rows) == ["1.24.4", "1.24.3", "1.20.0", "1.16.0", "1.13.1"]
    assert document["reference"] == "1.24.4" and document["complete"] is False
    assert rows["1.24.3"]["state"] == "same-dll" and rows["1.24.3"]["same_dll_as"] == "1.24.4"
    assert rows["1.24.3"]["result_file"] == "onnxruntime-directml-1.24.4.json"
    moved, changed = rows["1.20.0"]["against_reference"], rows["1.16.0"]["against_reference"]
    assert (moved["output_changed_cases"], moved["status_changed"]) == (["seed/relu-grad-formula"], 0)
    assert (changed["status_changed_cases"], changed["output_changed"]) == (["seed/slice-grad-4d"], 0)
    assert rows["1.16.0"]["counts"]["FAIL"] == 1 and rows["1.24.4"]["counts"]["PASS"] == len(seed_run.results)
    assert rows["1.13.1"]["state"] == "not-run" and rows["1.13.1"]["problem"] == f"did not run: {DEVICE_FAILS}"
    assert rows["1.13.1"]["counts"] is None and rows["1.24.4"]["feature_level"] == "6_4"

    markdown = (out / "matrix.md").read_text()
    assert f"| 1.13.1 | 1.9.1.0 | `{'3' * 12}` | - | - |" in markdown and DEVICE_FAILS in markdown
    assert "| 1.24.3 | 1.15.4.0 |" in markdown and "same DirectML.dll as 1.24.4 |" in markdown
    assert "* 1.20.0: outputs differ in 1 case(s): seed/relu-grad-formula" in markdown
    assert "* 1.16.0: status differ in 1 case(s): seed/slice-grad-4d" in markdown
    # Not a terminal: plain text, one line per release, then the differences.
    lines = outcome.stdout.splitlines()
    assert lines[0].split()[:4] == ["onnxruntime-directml", "DirectML.dll", "sha256", "feature"]
    assert lines[1].split()[:4] == ["1.24.4", "1.15.4.0", "4" * 12, "6_4"] and lines[1].endswith("reference")
    assert lines[5].startswith("1.13.1") and lines[5].endswith(DEVICE_FAILS)
    assert "1.20.0: outputs differ in 1 case(s): seed/relu-grad-formula" in lines
    assert "│" not in outcome.stdout


def test_every_release_run_exits_0_and_usage_errors_exit_2(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                           seed_run: RunResult) -> None:
    fake_releases(monkeypatch, tmp_path, seed_run)
    invoke = CliRunner().invoke
    done = invoke(main, ["matrix", "1.24.4", "1.20.0", "--out", str(tmp_path / "a"), "--reference", "1.20.0"])
    assert done.exit_code == 0, done.output
    rows = json.loads((tmp_path / "a" / "matrix.json").read_text())["releases"]
    assert rows[0]["against_reference"]["output_changed_cases"] == ["seed/relu-grad-formula"]
    assert invoke(main, ["matrix", "1.24.4", "--out", str(tmp_path / "b"), "--reference", "1.0"]).exit_code == 2
    assert invoke(main, ["matrix", "1.24.4", "--all-available", "--out", str(tmp_path / "c")]).exit_code == 2
    refused = invoke(main, ["matrix", "1.24.4", "--out", str(tmp_path / "d"), "--baseline", str(tmp_path / "none.csv")])
    assert refused.exit_code == 2 and "none.csv" in refused.output and len(refused.output.splitlines()) == 1
    monkeypatch.setenv("DMLCONFORM_DIRECTML", "/some/DirectML.dll")
    assert "unset it" in invoke(main, ["matrix", "1.24.4", "--out", str(tmp_path / "e")]).output


def test_a_release_run_is_the_run_engine_s_result_written_and_reused(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path, seed_run: RunResult) -> None:
    """release_runner with the engine's execute() standing in: the request it makes, the file it writes (--xz), the DLL
    check, and --reuse taking a kept result of the same DLL and settings instead of running again."""
    import dmlconform.cli.execution as execution
    from dmlconform.cli.common import make_console
    from dmlconform.cli.execution import StopRequest
    from dmlconform.results.expectations import Expectations

    requests = []

    def execute(request, stop, console):
        requests.append(request)
        run = copy.deepcopy(seed_run)
        run.settings = request.settings
        run.backend.extra = {"directml_dll_sha256": SHA[request.options.directml_version]}
        return run

    monkeypatch.setattr(execution, "execute", execute)
    fetched = release("1.24.4", tmp_path)
    run_release = matrix_command.release_runner("smoke", "seed", "lavapipe", 2, 60.0, Expectations(), tmp_path, True,
                                                True, StopRequest(), make_console())
    done = run_release(fetched)
    run, name = done.run, done.result_file
    assert name == "onnxruntime-directml-1.24.4.json.xz" and not done.reused
    request = requests[0]
    assert (request.backend_name, request.options.directml_version, request.options.adapter, request.tier_name,
            request.expression, request.jobs, request.raise_if_unavailable) == (
        "directml", "1.24.4", "lavapipe", "smoke", "seed", 2, True)
    kept = json.loads(lzma.decompress((tmp_path / name).read_bytes()))
    assert [case["output_sha256"] for case in kept["cases"]] == [r.output_sha256 for r in seed_run.results]
    again = run_release(fetched)
    assert len(requests) == 1 and again.reused
    assert [r.output_sha256 for r in again.run.results] == [r.output_sha256 for r in run.results]
    with pytest.raises(ReleaseUnusable, match="not the release's"):  # whatever DLL ran, it was not this one
        run_release(dataclasses.replace(release("1.24.3", tmp_path), files={"DirectML.dll": "9" * 64}))


@pytest.mark.slow
def test_one_real_release_under_wine(tmp_path: Path) -> None:
    from dmlconform.directml.library import DEFAULT_VERSION, releases
    from tests.harness.wine_tools import built_programs, lavapipe_driver, missing_wine_tools

    if missing_wine_tools() or lavapipe_driver() is None:
        pytest.skip(missing_wine_tools() or "no lavapipe")
    if DEFAULT_VERSION not in [r.package_version for r in releases()]:
        pytest.skip(f"onnxruntime-directml {DEFAULT_VERSION} is not fetched (dmlconform fetch directml)")
    programs = built_programs(tmp_path / "programs")
    env = {**os.environ, "DMLCONFORM_WINDOWS_PROGRAMS_DIR": str(programs), "CI": "true"}
    env.pop("DMLCONFORM_DIRECTML", None)
    done = subprocess.run([sys.executable, "-m", "dmlconform", "matrix", DEFAULT_VERSION, "--tier", "smoke", "-k",
                           "seed", "--adapter", "lavapipe", "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    row = json.loads((tmp_path / "out" / "matrix.json").read_text())["releases"][0]
    assert (row["state"], row["feature_level"], row["counts"]["FAIL"], row["problem"]) == ("ran", "6_4", 0, None)
    kept = json.loads((tmp_path / "out" / f"onnxruntime-directml-{DEFAULT_VERSION}.json").read_text())
    assert kept["backend"]["directml_dll_sha256"] == row["directml_dll_sha256"]
    assert all(len(case["output_sha256"]) == 64 for case in kept["cases"])
