"""Whether a certification holds: every required case matched or waived, the run whole, the device at the level."""

from __future__ import annotations

from dataclasses import replace

from dmlconform.case_result import AppliedWaiver, Status
from dmlconform.certification.manifest import manifest_differences
from dmlconform.certification.verdict import certification_verdict
from dmlconform.feature_levels import FeatureLevel
from dmlconform.run_result import Shard
from tests.results.helpers import result, run

L5_1, L6_4 = FeatureLevel.parse("5_1"), FeatureLevel.parse("6_4")


def waived(case_id: str):
    made = result(case_id, Status.WAIVED, outcome=Status.FAIL)
    made.waiver = AppliedWaiver("W-1", "reason", "board", "2025-06-01")
    return made


def test_matched_and_waived_cases_make_it_hold_and_anything_else_does_not() -> None:
    holds = certification_verdict(run([result("s/a", Status.PASS), result("s/b", Status.INVALID_OK), waived("s/c")]),
                                  L6_4, "standard")
    assert holds.certified and (holds.required, holds.matched, holds.waived) == (3, 2, 1)
    for status in (Status.FAIL, Status.FLAKE, Status.EXPECTED_FAIL, Status.SKIPPED, Status.NOT_RUN, Status.CRASH,
                   Status.NOT_SUPPORTED):
        verdict = certification_verdict(run([result("s/a", Status.PASS), result("s/x", status)]), L6_4, "full")
        assert not verdict.certified and verdict.not_matched == ("s/x",), status
        assert verdict.reasons == ("1 of 2 required case(s) neither matched nor waived",)


def test_a_partial_run_or_a_device_below_the_claim_does_not_hold() -> None:
    whole = run([result("s/a", Status.PASS)])
    assert certification_verdict(whole, L6_4, "standard").certified
    shard = run([result("s/a", Status.PASS)], shard=Shard(1, 2))
    assert "this is shard 1/2 of a run" in certification_verdict(shard, L6_4, "standard").reasons[0]
    missing = replace(whole, missing_shards=[2])
    assert certification_verdict(missing, L6_4, "standard").reasons == ("shard(s) 2 missing from the merge",)
    stopped = replace(whole, interrupted="SIGTERM")
    assert certification_verdict(stopped, L6_4, "standard").reasons == ("the run was interrupted (SIGTERM)",)
    low = replace(whole, backend=replace(whole.backend, feature_level=L5_1))
    assert certification_verdict(low, L6_4, "standard").reasons == (
        "the device reports feature level 5_1, below the claimed 6_4",)
    assert "judged at 6_4, not at the claimed 5_1" in certification_verdict(whole, L5_1, "standard").reasons[0]
    assert certification_verdict(whole, L6_4, "smoke").reasons == (
        "the smoke tier is a rehearsal; a certification runs the standard or the full tier",)


def test_manifest_differences_name_each_file() -> None:
    package = {"test_vectors/a.yaml": "1" * 64, "test_vectors/b.yaml": "2" * 64, "test_vectors/extra.yaml": "3" * 64}
    shipped = {"test_vectors/a.yaml": "1" * 64, "test_vectors/b.yaml": "4" * 64, "test_vectors/gone.yaml": "5" * 64}
    assert manifest_differences(package, shipped, "the tier") == [
        ("test_vectors/b.yaml", "SHA-256 2222222222222222… in the package, 4444444444444444… in the tier"),
        ("test_vectors/extra.yaml", "is in the package's suite but not in the tier"),
        ("test_vectors/gone.yaml", "is in the tier but missing from the package's suite"),
    ]
    assert manifest_differences(shipped, shipped, "the tier") == []
