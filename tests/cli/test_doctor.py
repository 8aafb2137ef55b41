"""`dmlconform doctor`: each missing piece with the command that fixes it, the JSON beside the table, and the exit
status (0 only when some DirectML path answers a live handshake)."""

from __future__ import annotations

import json
import os
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
