"""`dmlconform crosscheck` end to end: a corrupted golden is suspect (exit 1), the bundled suites are not, and
unusable input or usage is one line and exit 2."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from dmlconform.cli import bundled_suites, main
from dmlconform.cli.crosscheck import parse_backends
from tests.cli.conftest import BROKEN, load

torch = pytest.importorskip("torch")


def crosscheck(*args: str):
    return CliRunner().invoke(main, ["crosscheck", *args])


def test_corrupted_yaml_goldens_are_suspect(broken_suite: Path, tmp_path: Path):
    report = tmp_path / "cc.json"
    result = crosscheck(str(broken_suite), "--json", str(report))
    assert result.exit_code == 1, result.output
    assert "GOLDEN SUSPECT in 2 case(s)" in result.output
    document = load(report)
    assert document["format"] == "dmlconform-crosscheck/v1"
    assert sorted(document["golden_suspect"]) == sorted(BROKEN)
    suspect = next(c for c in document["cases"] if c["id"] == BROKEN[0])
    assert suspect["named"] == ["numpy", "onnxruntime", "torch"]
    assert {b["status"] for b in suspect["backends"].values()} == {"FAIL"}
    assert all(p["agree"] for p in suspect["pairs"])
    others = [c for c in document["cases"] if c["id"] not in BROKEN]
    assert others and {c["verdict"] for c in others} == {"all agree"}


def test_one_changed_value_in_a_generated_golden_is_suspect(tmp_path: Path):
    """A copy of a generated suite whose expected values live in an .npz, one float32 element moved by a thousandth."""
    suite = tmp_path / "standard"
    suite.mkdir()
    shutil.copy(bundled_suites() / "standard" / "resample_grad1.yaml", suite)
    shutil.copytree(bundled_suites() / "standard" / "data", suite / "data")
    case_id = "grid-linear-increasing-down-frac-quarter-float32"
    archive = suite / "data" / "resample_grad1-grid.npz"
    arrays = dict(np.load(archive))
    flat = arrays[f"{case_id}.out"].reshape(-1)
    flat[0] = np.nextafter(flat[0], np.float32(np.inf)) + np.float32(abs(flat[0]) * 1e-3)
    np.savez(archive, **arrays)
    result = crosscheck(str(suite / "resample_grad1.yaml"), "-k", "grid-linear", "--backends", "numpy,torch",
                        "--json", str(tmp_path / "r.json"))
    assert result.exit_code == 1, result.output
    assert load(tmp_path / "r.json")["golden_suspect"] == [f"resample_grad1.standard/{case_id}"]


def test_the_bundled_seed_suite_has_no_suspect_golden():
    result = crosscheck(str(bundled_suites() / "seed"), "--backends", "numpy,torch")
    assert result.exit_code == 0, result.output
    assert "no golden suspect" in result.output


@pytest.mark.parametrize("backends,message", [
    ("numpy", "at least two backends"),
    ("numpy,numpy", "named twice"),
    ("numpy,,torch", "empty backend name"),
    ("numpy,native:x", "takes no option"),
    ("numpy,nosuch", "unknown backend 'nosuch'"),
    ("numpy,torch:tpu", "--device tpu: unknown"),
    ("numpy,torch:nan-zero", "--device nan-zero"),
])
def test_usage_errors_are_one_line_and_exit_2(backends: str, message: str):
    result = crosscheck(str(bundled_suites() / "seed"), "--backends", backends)
    assert result.exit_code == 2 and message in result.output
    assert result.output.count("\n") == 1 and "Traceback" not in result.output


def test_backend_specs():
    assert parse_backends("numpy:swapped, onnxruntime:cuda,torch:cuda:1") == [
        ("numpy:swapped", "numpy", "swapped"), ("onnxruntime:cuda", "onnxruntime", "cuda"),
        ("torch:cuda:1", "torch", "cuda:1")]


def test_a_missing_suite_is_one_line(tmp_path: Path):
    result = crosscheck(str(tmp_path / "nothing.yaml"))
    assert result.exit_code == 2 and "nothing.yaml" in result.output


def test_help_imports_neither_torch_nor_onnxruntime():
    code = ("import sys\nfrom dmlconform.cli import main\ntry:\n    main(['crosscheck', '--help'])\nexcept SystemExit:\n"
            "    pass\nprint(sorted(m for m in ('onnxruntime', 'torch', 'onnx') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().endswith("[]")


def test_tier_selects_as_run_does():
    """`crosscheck --tier smoke` takes the smoke tier's cases, as `run --tier smoke` and `list --tier smoke` do."""
    listed = CliRunner().invoke(main, ["list", "--tier", "smoke", "-k", "relu and nan"])
    count = int(listed.output.rstrip().rsplit("\n", 1)[-1].split()[0])
    done = CliRunner().invoke(main, ["crosscheck", "--tier", "smoke", "-k", "relu and nan", "--backends",
                                     "numpy,numpy:nan-passes", "--json", "-"])
    assert done.exit_code == 0, done.output
    assert '"cases"' in done.output and done.output.count('"verdict": "all agree"') == count
