"""The `directml` backend from the command line: every fault before the harness runs is one line naming what is wrong
and how to fix it (exit 2), and on Wine with lavapipe (slow; skips without Wine or DirectML.dll) the packaged harness
runs the seed suite and the result names the DLL's version, digest and origin."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from dmlconform.backend_info import BackendInfo
from dmlconform.cli import main
from dmlconform.cli.execution import below_level
from dmlconform.feature_levels import FeatureLevel
from tests.directml import pe_files

SEED = Path(__file__).resolve().parents[2] / "test_vectors" / "seed"


def _one_line_error(args: list[str], env: dict[str, str]) -> str:
    result = CliRunner().invoke(main, ["run", "--backend", "directml", str(SEED), *args], env=env)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.startswith("dmlconform: error:")]
    assert len(lines) == 1, result.output
    return lines[0]


@pytest.fixture
def programs(tmp_path: Path) -> Path:
    """A programs folder whose BUILD.json says they were built (their contents never run in these tests)."""
    folder = tmp_path / "programs"
    folder.mkdir()
    for name in ("dml_harness.exe", "ort_dml_host.exe"):
        (folder / name).write_bytes(b"MZ not run")
    (folder / "BUILD.json").write_text(json.dumps({"built": True, "programs": {}}))
    return folder


@pytest.mark.parametrize(("dll", "says"), [
    (pe_files.directml_dll()[:-200], "truncated"),
    (pe_files.directml_dll(machine=pe_files.X86, pe32_plus=False), "a 32-bit (x86) DLL; DirectML needs the 64-bit"),
    (pe_files.onnxruntime_dll(), "not DirectML: it exports neither DMLCreateDevice nor DMLCreateDevice1 (it says it "
                                 "is onnxruntime.dll)"),
    (b"#!/bin/sh\n", "not a Windows DLL"),
])
def test_a_directml_dll_that_is_not_one_is_one_line(tmp_path: Path, programs: Path, dll: bytes, says: str) -> None:
    path = tmp_path / "DirectML.dll"
    path.write_bytes(dll)
    line = _one_line_error(["--directml", str(path)], {"DMLCONFORM_WINDOWS_PROGRAMS_DIR": str(programs)})
    assert str(path) in line and says in line and "dmlconform fetch directml" in line


def test_no_directml_at_all_says_to_fetch_it(tmp_path: Path, programs: Path) -> None:
    line = _one_line_error([], {"DMLCONFORM_CACHE": str(tmp_path / "empty"), "DMLCONFORM_DIRECTML": "",
                                "DMLCONFORM_WINDOWS_PROGRAMS_DIR": str(programs)})
    assert "no DirectML.dll: run `dmlconform fetch directml`" in line


def test_a_version_not_fetched_names_the_fetch(tmp_path: Path, programs: Path) -> None:
    line = _one_line_error(["--directml-version", "1.16.3"], {"DMLCONFORM_CACHE": str(tmp_path / "empty"),
                                                              "DMLCONFORM_WINDOWS_PROGRAMS_DIR": str(programs)})
    assert "onnxruntime-directml 1.16.3: not in the cache" in line and "dmlconform fetch directml 1.16.3" in line


def test_a_wheel_built_without_the_programs_says_why_and_how_to_rebuild(tmp_path: Path) -> None:
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "BUILD.json").write_text(json.dumps({"built": False, "reason": "no mingw-w64 C++ compiler "
                                                   "(x86_64-w64-mingw32-g++ is not on PATH)"}))
    dll = tmp_path / "DirectML.dll"
    dll.write_bytes(pe_files.directml_dll())
    line = _one_line_error(["--directml", str(dll)], {"DMLCONFORM_WINDOWS_PROGRAMS_DIR": str(folder)})
    assert "has no dml_harness.exe: its wheel was built without the Windows programs (no mingw-w64" in line
    assert "apt-get install g++-mingw-w64-x86-64-win32" in line


@pytest.mark.skipif(os.name == "nt", reason="Wine is the Linux path")
def test_no_wine_is_one_line_with_the_install(tmp_path: Path, programs: Path) -> None:
    dll = tmp_path / "DirectML.dll"
    dll.write_bytes(pe_files.directml_dll())
    line = _one_line_error(["--directml", str(dll)], {"DMLCONFORM_WINDOWS_PROGRAMS_DIR": str(programs),
                                                      "WINE": str(tmp_path / "no-wine")})
    assert "no Wine" in line and "apt-get install wine64" in line


@pytest.mark.skipif(os.name == "nt", reason="WARP exists on Windows")
def test_warp_under_wine_points_at_lavapipe(tmp_path: Path, programs: Path) -> None:
    dll = tmp_path / "DirectML.dll"
    dll.write_bytes(pe_files.directml_dll())
    line = _one_line_error(["--directml", str(dll), "--warp"], {"DMLCONFORM_WINDOWS_PROGRAMS_DIR": str(programs)})
    assert "does not exist under Wine" in line and "--adapter lavapipe" in line


def test_a_harness_of_ones_own_belongs_to_the_native_backend() -> None:
    line = _one_line_error(["--harness", "x"], {})
    assert "--harness is for --backend native" in line


def test_a_device_below_the_judged_level_is_said_with_the_fix() -> None:
    info = BackendInfo("directml", "dml_harness 1.0", "llvmpipe", FeatureLevel.L6_1, "CheckFeatureSupport",
                       {"directml_dll_version": "1.12.1.0"})
    line = below_level(info, FeatureLevel.L6_4)
    assert line.startswith("directml reports feature level 6_1 (CheckFeatureSupport), below --feature-level 6_4")
    assert "NOT_SUPPORTED" in line and "a newer DirectML than 1.12.1.0: dmlconform fetch directml" in line


# -- the real thing -----------------------------------------------------------------------------------------------
def _real_directml_missing() -> str:
    from tests.harness.wine_tools import directml_dll, missing_wine_tools

    return missing_wine_tools() or ("" if directml_dll() else "no DirectML.dll (dmlconform fetch directml)")


@pytest.mark.slow
def test_the_packaged_harness_runs_the_seed_suite_under_wine_and_names_its_dll(tmp_path: Path) -> None:
    """Two workers, each started with its harness before the command's imports (cli/early_start.py), each
    harness taken over by its worker's backend: two harness processes in all."""
    missing = _real_directml_missing()
    if missing:
        pytest.skip(missing)
    from tests.harness.wine_tools import built_programs, counting_loader, directml_dll

    dll = directml_dll()
    assert dll is not None
    loader, started = counting_loader(tmp_path / "wine", "dml_harness.exe")  # notes every harness it starts
    env = {"DMLCONFORM_WINDOWS_PROGRAMS_DIR": str(built_programs(tmp_path / "programs")), "WINE": str(loader)}
    out = tmp_path / "seed.json"
    result = CliRunner().invoke(main, ["run", "--backend", "directml", "--directml", str(dll), "--adapter",
                                       "lavapipe", str(SEED), "--json", str(out), "-j", "2"], env=env)
    assert result.exit_code == 0, result.output
    assert started.read_text().split() == ["started"] * 2  # not another after an early one that was not its own
    document = json.loads(out.read_text())
    backend = document["backend"]
    assert backend["name"] == "directml" and backend["feature_level"] == "6_4"
    assert backend["directml_dll_version"].startswith("1.15.") and len(backend["directml_dll_sha256"]) == 64
    assert backend["directml_origin"] == "--directml" and backend["program"].startswith("dml_harness.exe sha256 ")
    assert "lvp" in backend["vulkan_driver"] and backend["wine"].startswith("wine-")
    assert {r["status"] for r in document["cases"]} == {"PASS"}


def test_the_harness_start_is_worked_out_once_per_command_and_travels_to_the_workers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import pickle

    from dmlconform import backends
    from dmlconform.backends import directml
    from dmlconform.backends.base import BackendOptions
    from dmlconform.directml.start import ProgramStart
    from dmlconform.directml.wine import Launch

    calls: list[tuple[str | None, tuple[str, ...]]] = []

    def harness_start(dll: str | None, version: str | None, device: object, log: object,
                      arguments: tuple[str, ...]) -> ProgramStart:
        calls.append((dll, arguments))
        return ProgramStart(Path("/p/dml_harness.exe"), Launch(("dml_harness.exe", *arguments), {"A": "1"}),
                            None, facts={"program": "dml_harness.exe sha256 00"})  # type: ignore[arg-type]

    monkeypatch.setattr(directml, "harness_start", harness_start)
    monkeypatch.setattr(directml, "prepare_wine", lambda options=None: None)
    options = BackendOptions(directml="/d/DirectML.dll", program_options=("--timings", "t"))
    prepared = pickle.loads(pickle.dumps(backends.prepare("directml", options)))  # as a worker receives it
    assert calls == [("/d/DirectML.dll", ("--timings", "t"))]
    assert prepared.prepared.launch.argv == ("dml_harness.exe", "--timings", "t")
    assert directml._start(prepared) == prepared.prepared and len(calls) == 1  # the worker works out nothing
    assert directml._start(options).launch.argv == prepared.prepared.launch.argv and len(calls) == 2
    assert backends.prepare("numpy", options) is options


def test_an_adapter_index_that_is_not_there_leads_with_dxgi_error_not_found(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness's refusal (its real text under Wine for --adapter 5) becomes one short line: the missing adapter and
    the ones there are, not the command line and the advice about Vulkan extensions it used to be buried in."""
    import dmlconform.backends.directml as backend
    from dmlconform.backends.base import BackendOptions
    from dmlconform.backends.native import HarnessStartError
    from dmlconform.directml import wine
    from dmlconform.directml.start import ProgramStart

    launch = wine.Launch(("/usr/bin/wine64", "C:/dml_harness.exe", "--adapter", "5"), {"WINEPREFIX": "/p"},
                         wine.Wine(Path("/usr/bin/wine64"), None, "wine-8.0"), Path("/p"))
    refusal = ("DirectML harness 'WINEPREFIX=/p DISPLAY=:7 /usr/bin/wine64 /x/dml_harness.exe --dml Z:\\\\d\\\\DirectML.dll "
               "--adapter 5' handshake failed: the harness refused to start: IDXGIFactory1::EnumAdapters1(5): "
               "DXGI_ERROR_NOT_FOUND (0x887A0002); last stderr: dml_harness: cannot start: IDXGIFactory1::"
               "EnumAdapters1(5): DXGI_ERROR_NOT_FOUND (0x887A0002)")

    def refused(*args: object, **kwargs: object) -> None:
        raise HarnessStartError(refusal)

    monkeypatch.setattr(backend, "_start", lambda options: ProgramStart(Path("/x/dml_harness.exe"), launch, None))  # type: ignore[arg-type]
    monkeypatch.setattr(backend.DirectMLBackend, "__init__", refused)
    monkeypatch.setattr(wine, "_vulkan_device_names", lambda: ["llvmpipe (LLVM 19.1.7, 256 bits)"])
    monkeypatch.setattr(wine, "vulkan_drivers", lambda environ=None: [
        wine.VulkanDriver("lvp_icd.x86_64", Path("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"), "libvulkan_lvp.so")])
    with pytest.raises(RuntimeError) as raised:
        backend.create(BackendOptions(adapter="5"))
    assert str(raised.value) == (
        "--adapter 5: no adapter 5 (IDXGIFactory1::EnumAdapters1(5): DXGI_ERROR_NOT_FOUND); adapters here: "
        "0: llvmpipe (LLVM 19.1.7, 256 bits) (the Vulkan devices of lavapipe); or --adapter DRIVER (e.g. --adapter "
        "lavapipe)")
