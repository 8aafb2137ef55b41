"""Synthetic CI runs with known answers: two stacks (GPU-A and GPU-B), builds 1 to 10 on each, eight real cases
(taken from the kept H100 standard-tier result) whose statuses the plan below sets.

On GPU-A (one driver throughout):
* REGRESSED passes builds 1-6 and fails 7-10: first failure build 7, last pass build 6.
* FLAKY fails builds 2 and 5 only: four flips in ten runs of the same inputs.
* DRIFTING passes with closeness 0.05 x build: rising 0.05 a run, 0.5 at build 10, 10 runs from the limit.
* GAP passes 1-3, is skipped in 4-5 and fails 6-10: first failure build 6, last pass build 3, two runs between.
On GPU-B (driver 1.0 for builds 1-5, driver 2.0 for 6-10: two configurations):
* DRIVER passes under driver 1.0 and fails under 2.0: first failure build 6; not flaky (no flip within one driver).
* FLAKE_STATUS is FLAKE in build 4 (its retries disagreed: FAIL then PASS): flaky.
* DRIFTING stays at closeness 0.3.
STEADY_1 and STEADY_2 pass everywhere.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parents[2] / "examples" / "dml_harness" / "results"
BASE = RESULTS / "directml-1.15.4-h100-standard.json"
ROLES = ("REGRESSED", "FLAKY", "DRIFTING", "GAP", "DRIVER", "FLAKE_STATUS", "STEADY_1", "STEADY_2")
BUILDS = range(1, 11)
STACKS = ("GPU-A", "GPU-B")
START = datetime(2026, 11, 1, tzinfo=UTC)


@cache
def _base() -> tuple[dict[str, Any], tuple[dict[str, Any], ...]]:
    document = json.loads(BASE.read_text())
    passing = [case for case in document["cases"] if case["status"] == "PASS" and case["closeness"] is not None]
    picked = tuple(passing[index * 150] for index in range(len(ROLES)))  # spread over the operators
    return {key: value for key, value in document.items() if key != "cases"}, picked


def case_ids() -> dict[str, str]:
    return {role: case["id"] for role, case in zip(ROLES, _base()[1], strict=True)}


def started(stack: str, build: int) -> datetime:
    return START + timedelta(hours=build, minutes=30 * STACKS.index(stack))


def driver(stack: str, build: int) -> str:
    return "2.0" if stack == "GPU-B" and build >= 6 else "1.0"


def plan(stack: str, build: int, role: str) -> tuple[str, str | None, float | None]:
    """(status, outcome, closeness) of a role's case in one run."""
    fail = ("FAIL", None, 3.0)
    if stack == "GPU-A":
        if (role, build >= 7) == ("REGRESSED", True) or (role, build) in (("FLAKY", 2), ("FLAKY", 5)) \
                or (role, build >= 6) == ("GAP", True):
            return fail
        if role == "GAP" and build in (4, 5):
            return "SKIPPED", None, None
        if role == "DRIFTING":
            return "PASS", None, round(0.05 * build, 10)
    else:
        if role == "DRIVER" and build >= 6:
            return fail
        if role == "FLAKE_STATUS" and build == 4:
            return "FLAKE", "FAIL", 3.0
        if role == "DRIFTING":
            return "PASS", None, 0.3
    return "PASS", None, 0.0


def document(stack: str, build: int) -> dict[str, Any]:
    top, cases = _base()
    out = copy.deepcopy(top)
    out["backend"]["device"] = stack
    out["backend"]["driver_version"] = driver(stack, build)
    out["started"] = started(stack, build).isoformat()
    out["cases"] = []
    for role, case in zip(ROLES, cases, strict=True):
        status, outcome, closeness = plan(stack, build, role)
        entry = {**copy.deepcopy(case), "status": status, "outcome": outcome, "closeness": closeness,
                 "attempts": ["FAIL", "PASS"] if status == "FLAKE" else [status]}
        out["cases"].append(entry)
    return out


def meta(build: int) -> dict[str, str]:
    return {"build": str(build), "commit": f"c{build:03d}", "branch": "main"}


def runs() -> list[tuple[dict[str, Any], dict[str, str]]]:
    """Every run's document and the --meta its CI job gives, in the order a CI would add them."""
    return [(document(stack, build), meta(build)) for build in BUILDS for stack in STACKS]


def stack_name(stack: str) -> str:
    return f"directml on {stack}"


def expected_counts(stacks_and_builds: list[tuple[str, int]]) -> tuple[int, int]:
    """Passed and failed case rows in those runs, from the plan."""
    passed = failed = 0
    for stack, build in stacks_and_builds:
        for role in ROLES:
            status, outcome, _ = plan(stack, build, role)
            passed += (outcome or status) == "PASS"
            failed += (outcome or status) == "FAIL"
    return passed, failed
