"""`certify --path` (contract §9): the package's claim names the paths, its statement has a verdict per path, and
`verify` re-derives the selection on the same paths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from dmlconform.certification import CERTIFICATION, RESULTS, STATEMENT
from dmlconform.cli import main
from tests.certification.forgery import case_entry, copy_package, edit_results, forge
from tests.paths_suite import write_suite


@pytest.mark.slow  # ~2 s: a certification and its verification
def test_a_package_on_every_path_is_valid_with_a_verdict_per_path(tmp_path: Path):
    root = tmp_path / "root"
    root.mkdir()
    write_suite(root)
    package = tmp_path / "pkg"
    made = CliRunner().invoke(main, ["certify", "--level", "6_4", "--suite-root", str(root), "--backend", "numpy",
                                     "--path", "all", "-o", str(package)], catch_exceptions=False)
    assert made.exit_code == 0, made.output
    claim = json.loads((package / CERTIFICATION).read_text())["claim"]
    assert claim["paths"] == ["operator", "graph", "in-place"] and "--path" in made.output + " --path"
    assert len(json.loads((package / RESULTS).read_text())["cases"]) == 8
    statement = (package / STATEMENT).read_text()
    assert "on the paths operator, graph, in-place" in statement
    for line in ("path operator:        3 of 3 required cases matched; 0 waived; holds on this path",
                 "path graph:           3 of 3 required cases matched; 0 waived; holds on this path",
                 "path in-place:        2 of 2 required cases matched; 0 waived; holds on this path"):
        assert line in statement, statement
    checked = CliRunner().invoke(main, ["verify", str(package), "--suite-root", str(root)], catch_exceptions=False)
    assert checked.exit_code == 0, checked.output


STRAY = "paths/clip-strided@in-place"
STRAY_WRITE = "InputTensor: byte 4 (between elements 0 and 1) was 0xcd, now 0x32"


@pytest.fixture(scope="module")
def low_level_package(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A package on every path claimed at 4_1, where ReluGrad is required and ClipGrad1 (from 5_0) is not."""
    root = tmp_path_factory.mktemp("suite") / "root"
    root.mkdir()
    write_suite(root)
    package = root.parent / "pkg"
    made = CliRunner().invoke(main, ["certify", "--level", "4_1", "--suite-root", str(root), "--backend", "numpy",
                                     "--path", "all", "-o", str(package)], catch_exceptions=False)
    assert made.exit_code == 0, made.output
    return package, root


def _with_stray_write(package: Path, tmp_path: Path, edit: dict[str, object]) -> Path:
    forged = copy_package(package, tmp_path)

    def stray(document: dict) -> None:
        case = case_entry(document, STRAY)
        assert case["status"] == "NOT_REQUIRED" and case["outcome"] == "PASS"
        case.update(edit)

    edit_results(forged, stray)
    forge(forged)
    return forged


def _verify(package: Path, root: Path) -> Result:
    return CliRunner().invoke(main, ["verify", str(package), "--suite-root", str(root)], catch_exceptions=False)


#: What the judge records for a stray write whose values match, on a case above the claimed level.
RECORDED = {"outcome": "FAIL", "stray_writes": [STRAY_WRITE],
            "message": f"FAIL (required from 5_0): wrote outside its tensors: {STRAY_WRITE}; its values match"}


@pytest.mark.slow  # ~1 s: verifications
def test_a_recorded_stray_write_is_taken_as_recorded_and_the_package_verifies(
        low_level_package: tuple[Path, Path], tmp_path: Path) -> None:
    """The kept outputs re-judge to PASS, but the bytes around them are not in the package: verify takes the recorded
    stray write as it is (it can only fail the case) and says so."""
    package, root = low_level_package
    honest = _with_stray_write(package, tmp_path, RECORDED)
    checked = _verify(honest, root)
    assert checked.exit_code == 0, checked.output
    assert "stray writes: 1 case(s) wrote outside their tensors; taken as recorded, not re-derived" in checked.output
    assert f"can only fail a case): {STRAY}" in checked.output


@pytest.mark.slow  # ~1 s: verifications
@pytest.mark.parametrize(("name", "edit", "caught"), [
    # The stray write kept but the case claimed to have passed: the judge fails it again.
    ("pass-with-stray-write", {**RECORDED, "outcome": "PASS"},
     "field status: NOT_REQUIRED (PASS) in results.json, but its outputs in the package re-judge to FAIL"),
    # The stray write dropped, the FAIL kept: the outputs alone re-judge to PASS.
    ("fail-without-stray-write", {**RECORDED, "stray_writes": []},
     "field status: NOT_REQUIRED (FAIL) in results.json, but its outputs in the package re-judge to PASS"),
])
def test_a_stray_write_edited_half_way_is_caught(low_level_package: tuple[Path, Path], tmp_path: Path, name: str,
                                                 edit: dict[str, object], caught: str) -> None:
    package, root = low_level_package
    checked = _verify(_with_stray_write(package, tmp_path / name, edit), root)
    assert checked.exit_code == 3, checked.output
    assert f"results.json: case {STRAY}: {caught}" in checked.output
    assert "taken as recorded" not in checked.output  # said of a stray write that verified only


@pytest.mark.slow  # ~1 s: a verification
def test_a_stray_write_on_a_case_run_without_buffers_is_caught(low_level_package: tuple[Path, Path],
                                                               tmp_path: Path) -> None:
    package, root = low_level_package
    forged = copy_package(package, tmp_path)
    edit_results(forged, lambda document: case_entry(document, "paths/relu").update(
        status="FAIL", stray_writes=[STRAY_WRITE], message=f"wrote outside its tensors: {STRAY_WRITE}; its values "
        "match"))
    forge(forged)
    checked = _verify(forged, root)
    assert checked.exit_code == 3, checked.output
    assert "results.json: case paths/relu: field stray_writes: recorded on a case run without whole buffers" in \
        checked.output
