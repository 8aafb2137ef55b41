"""Small results and runs for the results-layer tests."""

from __future__ import annotations

from datetime import UTC, datetime

from dmlconform.backend_info import BackendInfo
from dmlconform.case_result import CaseResult, Status
from dmlconform.feature_levels import FeatureLevel
from dmlconform.run_result import RunResult, Shard, SuiteInfo


def result(case_id: str, status: Status, index: int = 0, required: bool = True, outcome: Status | None = None,
           message: str = "") -> CaseResult:
    return CaseResult(case_id, "ACTIVATION_RELU_GRAD", "FLOAT32", 2, FeatureLevel.L3_0, status, required=required,
                      outcome=outcome, index=index, message=message or status.value.lower(), attempts=(status,))


def run(results: list[CaseResult], shard: Shard | None = None, version: str = "1.0",
        fingerprint: str = "f" * 64, cases: int | None = None) -> RunResult:
    info = BackendInfo("native", version, "Contoso GPU", FeatureLevel.L6_4, "handshake", {"driver_version": "31.0"})
    return RunResult(info, FeatureLevel.L6_4, datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC), 1.5, results,
                     suite=SuiteInfo(fingerprint, cases if cases is not None else len(results), {"s": "0" * 64}),
                     shard=shard, settings={"expression": None, "repeat": 1, "retries": 1})
