"""The version matrix's logic: comparison with the reference (statuses as the backend came to them, outputs by
digest), one run per distinct DLL, rows for releases that did not run, and the signature-blind image digest."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from dmlconform.case_result import Status
from dmlconform.directml.library import FetchedRelease
from dmlconform.results.matrix import (
    Matrix,
    ReleaseRun,
    ReleaseUnusable,
    RowState,
    compare_rows,
    compare_runs,
    image_sha256,
    matrix_document,
    run_matrix,
)
from tests.results.helpers import result, run

A, B = "a" * 64, "b" * 64


def test_statuses_compare_as_the_backend_came_to_them_and_outputs_by_digest() -> None:
    def cases(*changes):
        made = [result("s/same", Status.PASS), result("s/bits", Status.PASS),
                result("s/level", Status.NOT_REQUIRED, outcome=Status.PASS),
                result("s/known", Status.EXPECTED_FAIL, outcome=Status.FAIL),
                result("s/refused", Status.INVALID_OK), result("s/skipped", Status.SKIPPED)]
        for made_result in made[:4]:
            made_result.output_sha256 = A
        for change in changes:
            change(made)
        return run(made)

    def flip_bits(made):
        made[1].output_sha256 = B

    def fixed(made):
        made[3].status, made[3].outcome = Status.UNEXPECTED_PASS, Status.PASS

    def accepted(made):
        made[4].status, made[4].output_sha256 = Status.FAIL, A

    reference = cases()
    other = cases(flip_bits, fixed, accepted)
    # Judged at a level that requires it, s/level is PASS: not a change of what DirectML did.
    other.results[2].status, other.results[2].outcome = Status.PASS, None
    comparison = compare_runs(reference, other, "1.0")
    assert comparison.status_changed == ["s/known", "s/refused"]
    assert comparison.output_changed == ["s/bits"]
    assert comparison.outputs_in_one_run == ["s/refused"]
    assert comparison.not_compared == 1  # s/skipped


def _release(version: str, dll_sha256: str, folder: Path) -> FetchedRelease:
    return FetchedRelease(version, "1.15.4.0", folder / version, {"DirectML.dll": dll_sha256}, "w.whl", "0" * 64,
                          "2026-01-01T00:00:00Z")


def test_a_dll_is_run_once_and_releases_that_did_not_run_are_rows(tmp_path: Path) -> None:
    shas = {"1.3": A, "1.2": A, "1.1": B, "1.0": B}
    ran: list[str] = []

    def fetch(version: str) -> FetchedRelease:
        if version == "0.9":
            raise ReleaseUnusable("has no onnxruntime/capi/DirectML.dll")
        return _release(version, shas[version], tmp_path)

    def execute(release: FetchedRelease):
        ran.append(release.package_version)
        if release.package_version == "1.1":
            raise ReleaseUnusable("DMLCreateDevice1 failed: 0x80004001")
        return ReleaseRun(run([result("s/a", Status.PASS)]), f"r-{release.package_version}.json")

    rows = run_matrix(["1.3", "1.2", "1.1", "1.0", "0.9"], fetch, execute)
    assert ran == ["1.3", "1.1"]
    assert [row.state for row in rows] == [RowState.RAN, RowState.SAME_DLL, RowState.NOT_RUN, RowState.NOT_RUN,
                                           RowState.NOT_FETCHED]
    assert rows[1].note() == "same DirectML.dll as 1.3" and rows[1].result_file == "r-1.3.json"
    assert rows[2].note() == "did not run: DMLCreateDevice1 failed: 0x80004001"
    assert rows[3].note() == "same DirectML.dll as 1.1: did not run: DMLCreateDevice1 failed: 0x80004001"
    assert rows[4].note() == "not fetched: has no onnxruntime/capi/DirectML.dll"
    assert compare_rows(rows) == "1.3" and rows[1].comparison is not None and rows[2].comparison is None
    table = Matrix(rows, "1.3", {"tier": "smoke"})
    assert not table.complete
    document = matrix_document(table)
    assert [r["state"] for r in document["releases"]] == ["ran", "same-dll", "not-run", "not-run", "not-fetched"]
    assert document["releases"][0]["counts"] == {"PASS": 1, "FAIL": 0, "EXPECTED_FAIL": 0, "NOT_SUPPORTED": 0,
                                                 "INVALID_OK": 0, "other": 0}
    assert compare_rows(rows, "1.1") is None  # a reference that did not run compares nothing


# -- image_sha256 ----------------------------------------------------------------------------------------------------
def _pe(code: bytes, checksum: int, certificate: bytes) -> bytes:
    """A PE32+ file as far as image_sha256 reads one: headers, `code`, then the certificate table."""
    optional = 0x40 + 24
    header = bytearray(optional + 240)
    header[:2], header[0x3C:0x40] = b"MZ", struct.pack("<I", 0x40)
    header[0x40:0x44] = b"PE\0\0"
    struct.pack_into("<H", header, optional, 0x20B)
    struct.pack_into("<I", header, optional + 64, checksum)
    struct.pack_into("<I", header, optional + 108, 16)
    start = len(header) + len(code)
    struct.pack_into("<II", header, optional + 112 + 4 * 8, start, len(certificate))
    return bytes(header) + code + certificate


@pytest.mark.parametrize(("other", "same"), [
    (_pe(b"code" * 100, 0x1234, b"another signature, longer"), True),
    (_pe(b"code" * 99 + b"cods", 0x1111, b"signature"), False),
])
def test_the_image_digest_ignores_the_signature_and_checksum_only(tmp_path: Path, other: bytes, same: bool) -> None:
    (tmp_path / "a.dll").write_bytes(_pe(b"code" * 100, 0x1111, b"signature"))
    (tmp_path / "b.dll").write_bytes(other)
    first, second = image_sha256(tmp_path / "a.dll"), image_sha256(tmp_path / "b.dll")
    assert first is not None and (first == second) is same


@pytest.mark.parametrize("data", [b"", b"MZ" + b"\0" * 100, _pe(b"x", 0, b"sig")[:-2], b"\xff" * 4096])
def test_what_is_not_a_pe_file_has_no_image_digest(tmp_path: Path, data: bytes) -> None:
    (tmp_path / "x.dll").write_bytes(data)
    assert image_sha256(tmp_path / "x.dll") is None
    assert image_sha256(tmp_path / "missing.dll") is None


def test_with_same_code_a_re_signed_dll_is_not_run_again(tmp_path: Path) -> None:
    for version, checksum, signature in (("1.3", 1, b"signed for 1.3"), ("1.2", 2, b"signed for 1.2!")):
        (tmp_path / version).mkdir()
        (tmp_path / version / "DirectML.dll").write_bytes(_pe(b"the same build", checksum, signature))
    shas = {"1.3": A, "1.2": B}
    for same_code, states in ((False, [RowState.RAN, RowState.RAN]), (True, [RowState.RAN, RowState.SAME_DLL])):
        rows = run_matrix(["1.3", "1.2"], lambda version: _release(version, shas[version], tmp_path),
                          lambda release: ReleaseRun(run([result("s/a", Status.PASS)]), "r.json"), same_code=same_code)
        assert [row.state for row in rows] == states
        assert rows[1].note() == ("same DirectML.dll as 1.3 but for its signature" if same_code else
                                  "DirectML.dll identical to 1.3's but for its signature, run again")


# -- the kept matrices (examples/dml_harness/results/matrix/) --------------------------------------------------------
KEPT = Path(__file__).resolve().parents[2] / "examples" / "dml_harness" / "results" / "matrix"


@pytest.mark.slow
def test_a_kept_matrix_agrees_with_the_results_kept_beside_it() -> None:
    """Every row's counts, DLL and differences come again from the result files, read back as a reader would."""
    _kept_matrix_agrees("standard")


@pytest.mark.slow
@pytest.mark.tier_scan
def test_the_kept_full_tier_matrix_agrees_with_the_results_kept_beside_it(scanned_cases: object,
                                                                          request: pytest.FixtureRequest) -> None:
    """The full tier's kept matrix, as the standard tier's above. Its ten results are read where the other kept
    full-tier results are (tests/known_issues/test_kept_results.py): in CI's last step, --scan-tier standard."""
    if request.config.getoption("--scan-tier") != "standard":
        pytest.skip("the kept full-tier results are read in CI's last step (--scan-tier standard)")
    _kept_matrix_agrees("full")


def _kept_matrix_agrees(tier: str) -> None:
    import json
    import lzma

    from dmlconform.results.document import from_document
    from dmlconform.results.matrix import MatrixRow

    folder = KEPT / tier
    if not (folder / "matrix.json").exists():
        pytest.skip(f"no kept {tier} matrix")
    document = json.loads((folder / "matrix.json").read_text())
    runs = {}
    for name in {row["result_file"] for row in document["releases"] if row["result_file"]}:
        raw = (folder / name).read_bytes()
        runs[name] = from_document(json.loads(lzma.decompress(raw) if name.endswith(".xz") else raw), folder / name)
    rows = [MatrixRow(row["package_version"], RowState(row["state"]), row["directml_version"],
                      row["directml_dll_sha256"], run=runs.get(row["result_file"])) for row in document["releases"]]
    assert compare_rows(rows, document["reference"]) == document["reference"]
    for row, kept in zip(rows, document["releases"], strict=True):
        if row.run is None:
            assert kept["problem"] and kept["counts"] is None
            continue
        assert row.counts() == kept["counts"] and row.feature_level == kept["feature_level"]
        if kept["state"] == "ran":  # a shared run names its own release's DLL
            assert row.run.backend.extra["directml_dll_sha256"] == kept["directml_dll_sha256"]
            assert row.run.settings["tier"] == tier and row.run.settings["adapter"] == "lavapipe"
        against = kept["against_reference"]
        if row.comparison is None:
            assert against is None
            continue
        assert (len(row.comparison.status_changed), len(row.comparison.output_changed)) == (
            against["status_changed"], against["output_changed"])
        if kept["state"] == "ran":
            assert (row.comparison.status_changed, row.comparison.output_changed) == (
                against["status_changed_cases"], against["output_changed_cases"])
