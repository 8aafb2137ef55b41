"""`dmlconform doctor`: each missing piece with the command that fixes it, the JSON beside the table, and the exit
status (0 only when some DirectML path answers a live handshake)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from dmlconform.cli import main
from dmlconform.doctor import Diagnosis, Finding, State
from tests.directml import pe_files


def _doctor(args: list[str], env: dict[str, str]) -> tuple[int, dict, str]:
    result = CliRunner().invoke(main, ["doctor", "--json", "-", *args], env=env)
    assert "Traceback" not in result.output
    document = json.loads(result.output)
    return result.exit_code, document, result.output


def _finding(document: dict, area: str, item: str) -> dict:
    return next(f for f in document["findings"] if f["area"] == area and f["item"] == item)


@pytest.mark.skipif(os.name == "nt", reason="Wine is the Linux path")
def test_nothing_installed_names_each_fix_and_exits_1(tmp_path: Path) -> None:
    code, document, _ = _doctor(["--no-handshake"], {"WINE": str(tmp_path / "no-wine"),
                                                     "DMLCONFORM_CACHE": str(tmp_path / "cache"),
                                                     "DMLCONFORM_DIRECTML": "",
                                                     "DMLCONFORM_WINDOWS_PROGRAMS_DIR": str(tmp_path / "none")})
    assert code == 1 and document["format"] == "dmlconform-doctor/v1" and document["directml_works"] is False
    wine = _finding(document, "wine", "Wine")
    assert wine["state"] == "missing" and wine["fix"] == "apt-get install wine64 (Debian/Ubuntu)"
    dll = _finding(document, "directml", "DirectML.dll")
    assert dll["state"] == "missing" and dll["fix"] == "dmlconform fetch directml"
    harness = _finding(document, "programs", "dml_harness.exe")
    assert harness["state"] == "missing" and "g++-mingw-w64-x86-64-win32" in harness["fix"]


def test_a_tampered_release_in_the_cache_is_broken_with_the_refetch(tmp_path: Path) -> None:
    from dmlconform.directml import library

    folder = tmp_path / "cache" / "directml" / "1.24.4"
    folder.mkdir(parents=True)
    dll = pe_files.directml_dll()
    (folder / "DirectML.dll").write_bytes(dll)
    import hashlib

    (folder / library.RELEASE_RECORD).write_text(json.dumps({
        "format": library.RELEASE_FORMAT, "package": library.PACKAGE, "package_version": "1.24.4",
        "directml_version": "1.15.4.0", "files": {"DirectML.dll": hashlib.sha256(dll).hexdigest()},
        "wheel": "w.whl", "wheel_sha256": "0" * 64, "fetched_at": "2026-11-26T00:00:00Z"}))
    (folder / "DirectML.dll").write_bytes(dll[:-1] + b"\x01")  # one byte changed after the fetch
    code, document, _ = _doctor(["--no-handshake"], {"DMLCONFORM_CACHE": str(tmp_path / "cache"),
                                                     "DMLCONFORM_DIRECTML": ""})
    broken = _finding(document, "directml", "onnxruntime-directml 1.24.4")
    assert broken["state"] == "broken" and "sha256" in broken["found"]
    assert broken["fix"] == "dmlconform fetch directml 1.24.4 --force"
    assert code == 1


def test_the_table_shows_each_row_and_the_verdict() -> None:
    from rich.console import Console

    from dmlconform.report.doctor import render_doctor

    console = Console(record=True, width=200)
    render_doctor(Diagnosis([Finding("wine", "Wine", State.MISSING, "no wine64 on PATH", "apt-get install wine64"),
                             Finding("handshake", "DirectML harness on lvp_icd", State.OK, "llvmpipe; 6_4",
                                     directml_path=True)]), console)
    text = console.export_text()
    assert "apt-get install wine64" in text and "missing" in text
    assert "DirectML works here: DirectML harness on lvp_icd" in text
    console = Console(record=True, width=200)
    render_doctor(Diagnosis([Finding("handshake", "DirectML harness on lvp_icd", State.BROKEN, "DXGI_ERROR_UNSUPPORTED",
                                     "a Vulkan driver", directml_path=True)]), console)
    assert "no DirectML path works here" in console.export_text()


@pytest.mark.slow
def test_a_live_handshake_on_lavapipe_exits_0(tmp_path: Path) -> None:
    from tests.harness.wine_tools import built_programs, directml_dll, lavapipe_driver, missing_wine_tools

    missing = missing_wine_tools() or ("" if directml_dll() else "no DirectML.dll (dmlconform fetch directml)") or \
        ("" if lavapipe_driver() else "no lavapipe (apt-get install mesa-vulkan-drivers)")
    if missing:
        pytest.skip(missing)
    code, document, output = _doctor([], {"DMLCONFORM_WINDOWS_PROGRAMS_DIR": str(built_programs(tmp_path / "p"))})
    assert code == 0, output
    handshakes = [f for f in document["findings"] if f["area"] == "handshake" and "lvp" in f["item"]]
    assert handshakes and all(f["state"] == "ok" for f in handshakes), handshakes
    assert any("feature level 6_4" in f["found"] for f in handshakes)


def test_no_handshake_exits_0_when_nothing_is_missing_or_broken(monkeypatch: pytest.MonkeyPatch) -> None:
    import dmlconform.doctor

    rows = [Finding("python", "numpy", State.OK, "2.0"), Finding("python", "torch", State.OPTIONAL, "not installed"),
            Finding("wine", "prefix", State.INFO, "/c/wine/prefix-8.0: it does not exist yet")]
    monkeypatch.setattr(dmlconform.doctor, "diagnose", lambda live: Diagnosis(rows, live))
    result = CliRunner().invoke(main, ["doctor", "--no-handshake"])
    assert result.exit_code == 0, result.output
    assert "nothing missing or broken" in result.output and "no DirectML path works" not in result.output
    broken = [*rows, Finding("vulkan", "drivers", State.MISSING, "no Vulkan driver manifest", "apt-get install x")]
    monkeypatch.setattr(dmlconform.doctor, "diagnose", lambda live: Diagnosis(broken, live))
    result = CliRunner().invoke(main, ["doctor", "--no-handshake"])
    assert result.exit_code == 1 and "1 row(s) missing or broken" in result.output


def test_the_prefix_row_says_what_the_handshakes_made(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import dmlconform.directml.wine as wine
    import dmlconform.doctor as doctor

    made: list[bool] = []
    fake = wine.Wine(Path("/usr/bin/wine64"), Path("/usr/bin/wineserver"), "wine-8.0 (Debian 8.0~repack-4)")
    monkeypatch.setattr(wine, "needs_wine", lambda: True)
    monkeypatch.setattr(wine, "find_wine", lambda environ=None: fake)
    monkeypatch.setattr(wine, "wine_prefix", lambda w, environ=None: tmp_path / "prefix")
    monkeypatch.setattr(wine, "prefix_problem", lambda prefix, w: "" if made else "it does not exist yet")
    monkeypatch.setattr(wine, "vulkan_drivers", lambda environ=None: [])

    def handshakes(devices: dict) -> Iterator[Finding]:
        made.append(True)  # the harness's start makes the prefix
        yield Finding("handshake", "DirectML harness on adapter 0", State.OK, "llvmpipe", directml_path=True)

    monkeypatch.setattr(doctor, "_handshakes", handshakes)
    for quiet in ("_python", "_onnxruntime", "_cuda", "_programs", "_directml"):
        monkeypatch.setattr(doctor, quiet, lambda: iter([]))
    rows = [f for f in doctor.diagnose(live=True).findings if f.item == "prefix"]
    assert [(f.state, f.found) for f in rows] == [
        (State.OK, f"{tmp_path / 'prefix'} (made by this check: it does not exist yet)")]
    made.clear()
    rows = [f for f in doctor.diagnose(live=False).findings if f.item == "prefix"]
    assert [f.found for f in rows] == [f"{tmp_path / 'prefix'}: it does not exist yet; made (or remade) on the next run"]


def test_a_missing_torch_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import dmlconform.doctor as doctor

    monkeypatch.setattr(doctor, "_version", lambda name: None if name == "torch" else "1.0")
    torch = next(f for f in doctor._python() if f.item == "torch")
    assert torch.state is State.OPTIONAL and torch.fix == 'pip install "dmlconform[torch]"'


def test_drivers_are_named_as_adapter_takes_them_beside_their_manifest() -> None:
    from dmlconform.doctor import _label

    assert _label("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json") == "lavapipe (lvp_icd.x86_64)"
    assert _label("/usr/share/vulkan/icd.d/nvidia_icd.json") == "nvidia (nvidia_icd)"
    assert _label(None) == "adapter 0"
