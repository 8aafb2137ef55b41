"""Synthetic CI runs of one stack (GPU-S, one driver throughout) across a change of suites, with known answers.

The standard tier runs builds 1-8: builds 1-4 from suite OLD, builds 5-8 from suite NEW (dmlconform upgraded, the
suites regenerated). The full tier runs builds 2 and 6, half an hour after the standard run, from suite FULL. The
cases (real ones, taken from the kept H100 standard-tier result) and what each suite holds:

* STEADY: in every suite, passes everywhere.
* RETIRED: OLD only (NEW dropped it): passes builds 1-2, fails 3-4. It left with build 5: not failing now; the range
  it had is builds 2-3.
* NEWCOMER: NEW only: fails from its first run (build 5) on: failing now, no last pass.
* CHANGED: OLD and NEW under one id, not the same test: passes in every OLD run, fails in every NEW run. Failing now,
  last pass build 4, first failure build 5, the suite changed between them; not a flip (the inputs changed).
* FULL_ONLY: FULL only: passes in build 2's full run, fails in build 6's. Failing now: the standard runs after it do
  not hold it, but they are another selection (tier), not a newer suite of its own.
* STEP: OLD and NEW: closeness 0.1 in OLD, 0.6 in NEW (a mended rule): a step across the suites, not a drift.
* CREEPING: OLD and NEW: closeness 0.2 in OLD, then 0.1, 0.2, 0.3, 0.4 in NEW: drifting within NEW.
* FLIPPY: OLD and NEW: passes in OLD, then P F P F in builds 5-8: three flips within NEW's inputs.
"""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

from tests.history import scenario

ROLES = ("STEADY", "RETIRED", "NEWCOMER", "CHANGED", "FULL_ONLY", "STEP", "CREEPING", "FLIPPY")
OLD, NEW, FULL = "1" * 64, "2" * 64, "f" * 64
SUITES = {
    OLD: ("STEADY", "RETIRED", "CHANGED", "STEP", "CREEPING", "FLIPPY"),
    NEW: ("STEADY", "NEWCOMER", "CHANGED", "STEP", "CREEPING", "FLIPPY"),
    FULL: ("STEADY", "FULL_ONLY"),
}
STANDARD_BUILDS = range(1, 9)
FULL_BUILDS = (2, 6)
STACK = "directml on GPU-S"


def case_ids() -> dict[str, str]:
    # The synthetic scenario's eight picked cases, under these roles (any eight distinct real cases will do).
    return dict(zip(ROLES, scenario.case_ids().values(), strict=True))


def suite(tier: str, build: int) -> str:
    return FULL if tier == "full" else OLD if build <= 4 else NEW


def plan(tier: str, build: int, role: str) -> tuple[str, float | None]:
    """(status, closeness) of a role's case in one run (the role must be in that run's suite)."""
    new = suite(tier, build) == NEW
    failing = {"RETIRED": build >= 3, "NEWCOMER": True, "CHANGED": new, "FULL_ONLY": build == 6,
               "FLIPPY": build in (6, 8)}
    if failing.get(role, False):
        return "FAIL", 3.0
    if role == "STEP":
        return "PASS", 0.6 if new else 0.1
    if role == "CREEPING":
        return "PASS", round(0.1 * (build - 4), 10) if new else 0.2
    return "PASS", 0.0


def document(tier: str, build: int, roles: tuple[str, ...] | None = None,
             shard: tuple[int, int] | None = None) -> dict[str, Any]:
    """The run's document; `roles` and `shard` make it one shard of the run, holding those of its cases."""
    top, cases = scenario._base()
    by_role = dict(zip(scenario.ROLES, cases, strict=True))
    picked = dict(zip(ROLES, by_role.values(), strict=True))
    fingerprint = suite(tier, build)
    out = copy.deepcopy(top)
    out["backend"]["device"] = "GPU-S"
    out["backend"]["driver_version"] = "1.0"
    out["started"] = (scenario.START + timedelta(hours=build, minutes=30 if tier == "full" else 0)).isoformat()
    out["settings"] = {**out["settings"], "tier": tier, "expression": None}
    out["suite"] = {"fingerprint": fingerprint, "cases": len(SUITES[fingerprint]), "files": {}}
    out["shard"] = None if shard is None else {"index": shard[0], "count": shard[1]}
    out["cases"] = []
    for role in roles or SUITES[fingerprint]:
        status, closeness = plan(tier, build, role)
        out["cases"].append({**copy.deepcopy(picked[role]), "status": status, "outcome": None,
                             "closeness": closeness, "attempts": [status]})
    return out


def runs() -> list[tuple[dict[str, Any], dict[str, str]]]:
    """Every run's document and the --meta its CI job gives."""
    found = [(document("standard", build), {"build": str(build)}) for build in STANDARD_BUILDS]
    found += [(document("full", build), {"build": f"{build}-full"}) for build in FULL_BUILDS]
    return found
