"""Result documents into runs: what is taken from the document, the run's identity, and documents that cannot be
taken (one line naming the file and the field)."""

from __future__ import annotations

import copy
import json
import lzma
from pathlib import Path

import pytest

from dmlconform.case_result import Status
from dmlconform.feature_levels import FeatureLevel
from dmlconform.history import HistoryError
from dmlconform.history.database import open_database
from dmlconform.history.ingest import (
    MAX_STORED_ULP,
    CaseRow,
    add_records,
    parse_meta,
    passed_value,
    read_record,
    record_from_document,
)
from dmlconform.history.schema import STATUS_CODES
from tests.history import scenario
from tests.history.scenario import RESULTS

H100 = RESULTS / "directml-1.15.4-h100-standard.json"
ORT = RESULTS.parents[2] / "examples" / "ort_dml_host" / "results" / "standard-dml-wine-lavapipe.json"


def small_document() -> dict:
    return scenario.document("GPU-A", 3)


def test_every_status_has_a_fixed_code() -> None:
    assert set(STATUS_CODES) == set(Status) and len(set(STATUS_CODES.values())) == len(Status)


@pytest.mark.parametrize(("status", "outcome", "expected"), [
    (Status.PASS, None, 1), (Status.INVALID_OK, None, 1), (Status.UNEXPECTED_PASS, Status.PASS, 1),
    (Status.NOT_REQUIRED, Status.PASS, 1),
    (Status.FAIL, None, 0), (Status.CRASH, None, 0), (Status.TIMEOUT, None, 0), (Status.ERROR, None, 0),
    (Status.NOT_SUPPORTED, None, 0), (Status.EXPECTED_FAIL, Status.FAIL, 0), (Status.FLAKE, Status.CRASH, 0),
    (Status.FLAKE, Status.PASS, 1), (Status.WAIVED, Status.FAIL, 0),
    (Status.NOT_REQUIRED, Status.NOT_SUPPORTED, None), (Status.SKIPPED, None, None), (Status.NOT_RUN, None, None),
])
def test_what_counts_as_passed_and_failed(status: Status, outcome: Status | None, expected: int | None) -> None:
    from dmlconform.case_result import CaseResult

    result = CaseResult("c", "ACTIVATION_RELU_GRAD", "FLOAT32", 1, FeatureLevel.parse("5_0"), status, outcome=outcome)
    assert passed_value(result) == expected


def test_a_kept_result_becomes_a_run_with_its_metadata() -> None:
    record = read_record(H100, {"build": "4711", "job_url": "https://ci.example/4711"})
    document = json.loads(H100.read_text())
    backend = document["backend"]
    assert record.stack == "directml on NVIDIA H100 80GB HBM3" and len(record.cases) == len(document["cases"])
    assert {k: record.meta.get(k) for k in ("backend", "device", "driver_version", "directml_version",
                                            "directml_sha256", "vulkan_driver", "tier", "expression",
                                            "suite_fingerprint", "suite_cases", "shard", "build", "job_url")} == {
        "backend": "directml", "device": "NVIDIA H100 80GB HBM3", "driver_version": backend["driver_version"],
        "directml_version": "1.15.4.0", "directml_sha256": backend["directml_dll_sha256"],
        "vulkan_driver": backend["vulkan_driver"], "tier": "standard", "expression": None,
        "suite_fingerprint": document["suite"]["fingerprint"], "suite_cases": str(document["suite"]["cases"]),
        "shard": None, "build": "4711", "job_url": "https://ci.example/4711"}
    assert record.summary == document["summary"] and record.fingerprint == document["behaviour_fingerprint"]
    # PASS and INVALID_OK matched; FAIL failed (a FAIL here is no EXPECTED_FAIL: the run used no baseline).
    assert set(document["summary"]) <= {"PASS", "INVALID_OK", "FAIL"} and document["expectations"] == []
    assert (record.passed, record.failed) == (document["summary"].get("PASS", 0) + document["summary"].get(
        "INVALID_OK", 0), document["summary"].get("FAIL", 0))
    assert read_record(ORT).meta["directml_version"] == "1.15.4.0"  # the ONNX Runtime host names it another way


def test_the_selection_is_taken_for_a_shard_and_a_k_expression() -> None:
    document = small_document()
    document["shard"] = {"index": 2, "count": 3}
    document["settings"] = {**document["settings"], "expression": "relu and float32"}
    meta = record_from_document(document, "shard").meta
    assert (meta["shard"], meta["expression"], meta["suite_cases"]) == ("2/3", "relu and float32",
                                                                        str(document["suite"]["cases"]))
    with pytest.raises(HistoryError, match="suite_cases: taken from the result document"):
        parse_meta(["suite_cases=3"])


def test_the_identity_is_the_content_not_the_file_or_its_compression(tmp_path: Path) -> None:
    document = small_document()
    plain, packed, spaced = tmp_path / "r.json", tmp_path / "r.json.xz", tmp_path / "spaced.json"
    plain.write_text(json.dumps(document))
    packed.write_bytes(lzma.compress(json.dumps(document).encode()))
    spaced.write_text(json.dumps(document, indent=4))
    digests = {read_record(path).digest for path in (plain, packed, spaced)}
    assert len(digests) == 1
    changed = copy.deepcopy(document)
    changed["cases"][0]["duration_s"] += 1
    assert record_from_document(changed, "changed").digest not in digests


def test_the_configuration_changes_with_the_driver_not_with_the_build() -> None:
    first = record_from_document(scenario.document("GPU-B", 1), "b1", {"build": "1"})
    same = record_from_document(scenario.document("GPU-B", 5), "b5", {"build": "5"})
    other = record_from_document(scenario.document("GPU-B", 6), "b6", {"build": "6"})
    assert first.configuration == same.configuration != other.configuration
    assert first.digest != same.digest


def test_a_ci_job_may_name_the_stack() -> None:
    record = record_from_document(small_document(), "x", {"stack": "lab-07 H100"})
    assert record.stack == "lab-07 H100" == record.meta["stack"]


def test_numbers_the_database_cannot_hold_are_bounded() -> None:
    document = small_document()
    document["cases"][0]["max_ulp"] = 1 << 64
    document["cases"][1]["closeness"] = float("nan")
    document["cases"][2]["closeness"] = "inf"
    record = record_from_document(document, "x")
    assert record.cases[0].max_ulp == MAX_STORED_ULP and record.cases[1].closeness is None
    assert record.cases[2].closeness == float("inf")


def test_extreme_values_go_into_the_database_and_back(database_url: str) -> None:
    document = small_document()
    document["cases"][0]["max_ulp"] = 1 << 64
    document["cases"][2]["closeness"] = "inf"
    document["cases"][2]["max_ulp"] = 0
    with open_database(database_url, create=True) as database:
        add_records(database, [record_from_document(document, "x")])
        rows = dict(database.query("SELECT max_ulp, closeness FROM case_results WHERE max_ulp > 1000 OR closeness > 1"))
    assert rows == {MAX_STORED_ULP: 0.0, 0: float("inf")}


@pytest.mark.parametrize(("items", "message"), [
    (["build"], "give key=value"),
    (["=1"], "give key=value"),
    (["1build=2"], "give key=value"),
    (["device=x"], "taken from the result document"),
    (["note=two\nlines"], "one line"),
    (["note=" + "x" * 2000], "one line"),
    (["build="], r"--meta build=: the value is empty \(an unset variable\?\)"),  # --meta build=$BUILD, BUILD unset
    (["build= "], "the value is empty"),
])
def test_bad_meta_is_one_line(items: list[str], message: str) -> None:
    with pytest.raises(HistoryError, match=message) as caught:
        parse_meta(items)
    assert "\n" not in str(caught.value)


def test_meta_is_read() -> None:
    assert parse_meta(["build=12", "job_url=https://ci/x?a=b=c", "stack=lab"]) == {
        "build": "12", "job_url": "https://ci/x?a=b=c", "stack": "lab"}


@pytest.mark.parametrize(("content", "message"), [
    (b"{not json", "is not JSON"),
    (b'{"format": "something-else/v9"}', "field format: is 'something-else/v9'"),
    (lzma.compress(b'{"format": 1}')[:20], "xz stream ends early"),
    (b"\xfd7zXZ\x00garbage", "not a readable xz file"),
    (b"\xff\xfe\x00", "is not JSON"),
])
def test_a_document_that_does_not_parse_is_one_line_naming_the_file(tmp_path: Path, content: bytes,
                                                                    message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(HistoryError, match=message) as caught:
        read_record(path)
    assert str(caught.value).startswith(str(path)) and "\n" not in str(caught.value)


def test_a_case_listed_twice_is_refused(tmp_path: Path) -> None:
    document = small_document()
    document["cases"].append(document["cases"][0])
    with pytest.raises(HistoryError, match="listed twice"):
        record_from_document(document, "twice.json")


def test_a_bad_case_names_the_case_and_field(tmp_path: Path) -> None:
    document = small_document()
    document["cases"][2]["status"] = "GREAT"
    with pytest.raises(HistoryError, match=r"case .*: field status: unknown status 'GREAT'"):
        record_from_document(document, "bad.json")


def test_case_rows_keep_status_outcome_candidate_closeness_and_ulp() -> None:
    record = record_from_document(scenario.document("GPU-B", 4), "b4")
    flake = record.cases[scenario.ROLES.index("FLAKE_STATUS")]
    assert isinstance(flake, CaseRow) and (flake.status, flake.outcome, flake.passed) == (Status.FLAKE, Status.FAIL, 0)
    assert flake.closeness == 3.0
