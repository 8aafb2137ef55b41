"""The environment record: the tool's source digest follows its source, and nothing else."""

from __future__ import annotations

from pathlib import Path

from dmlconform.backend_info import BackendInfo
from dmlconform.certification.environment import environment_record, source_digest, tool_source_digest
from dmlconform.feature_levels import FeatureLevel


def test_the_source_digest_changes_with_the_source_only(tmp_path: Path) -> None:
    package = tmp_path / "dmlconform"
    (package / "ops").mkdir(parents=True)
    (package / "ops" / "relu_grad.py").write_text("def relu(x): return x > 0\n")
    (package / "generation").mkdir()
    (package / "generation" / "relu_grad.yaml").write_text("families: []\n")
    first = source_digest(package)
    (package / "__pycache__").mkdir()
    (package / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    (package / "test_vectors").mkdir()
    (package / "test_vectors" / "suite.yaml").write_text("cases: []\n")  # the suite manifest's business
    assert source_digest(package) == first
    (package / "ops" / "relu_grad.py").write_text("def relu(x): return x >= 0\n")
    assert source_digest(package) != first
    (package / "ops" / "relu_grad.py").write_text("def relu(x): return x > 0\n")
    (package / "generation" / "relu_grad.yaml").write_text("families: [more]\n")
    assert source_digest(package) != first


def test_the_record_holds_the_handshake_and_the_harness_files() -> None:
    info = BackendInfo("native", "dml_harness 1.0", "llvmpipe", FeatureLevel.parse("6_4"), "CheckFeatureSupport",
                       {"driver_version": "25.0.7", "adapter_vendor_device": "10005:0000"})
    record = environment_record(info, {"/opt/h.exe": "a" * 64}, ["dmlconform", "certify"])
    assert record["tool"]["source_sha256"] == tool_source_digest() and len(tool_source_digest()) == 64
    assert record["backend"]["adapter_vendor_device"] == "10005:0000" and record["harness_files"] == {
        "/opt/h.exe": "a" * 64}
    assert record["packages"]["numpy"] and record["python"]["version"] and record["os"]["system"]
