"""Shared fixtures of the oracle tests: the bundled cases (the standard tier), loaded once, and the share of them
the simulated drivers run.

The simulated drivers are plain Python loops with exact rational sums, about 100 µs per summed term; running all
of them on every standard case would take the better part of an hour. They run on every case whose cost (elements
in and out, plus the terms summed into the output) is at most ORACLE_COST, cheapest first; the large cases left
out repeat, at scale, geometries and values that smaller cases of the same families already hold.
`python benchmarks/oracle_mutants.py --max-cost 0` runs them on everything.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dmlconform.case import Case
from dmlconform.suite.loader import load_paths
from dmlconform.surface.paths import ExecutionPath

REPO = Path(__file__).resolve().parents[2]
#: Largest cost (see case_cost) of a case the simulated drivers run in CI.
ORACLE_COST = 1200


def case_cost(case: Case) -> int:
    """Elements read and written, plus the terms the reference sums into the output (a driver's inner loop)."""
    elements = sum(int(a.size) for a in case.inputs.values())
    if case.expect_invalid:
        return elements
    elements += int(case.description.output.shape and np.prod(case.description.output.shape))
    reference = case.op.reference(case.description, case.inputs)
    accumulation = reference.accumulation.get(case.op.outputs[0])
    return elements + (int(np.sum(accumulation.count)) if accumulation is not None else 0)


def oracle_share(cases: list[Case], limit: int = ORACLE_COST) -> list[Case]:
    """The cases of cost at most `limit` (0: every case), cheapest first (ties by id)."""
    costed = sorted((case_cost(case), case.full_id, case) for case in cases)
    return [case for cost, _, case in costed if not limit or cost <= limit]


def on_every_path(cases: list[Case]) -> list[Case]:
    """Each case on every path that applies to it (contract §9: `Case.on_path`), in the cases' order, a case's
    paths together (operator, graph, in place): the mutation tests' cases are tried cheapest first on every path."""
    return [derived for case in cases for path in ExecutionPath if (derived := case.on_path(path)) is not None]


@pytest.fixture(scope="session")
def bundled_cases() -> list[Case]:
    return load_paths([REPO / "test_vectors"])


@pytest.fixture(scope="session")
def oracle_cases(bundled_cases: list[Case]) -> list[Case]:
    return oracle_share(bundled_cases)


@pytest.fixture(scope="session")
def oracle_cases_on_paths(oracle_cases: list[Case]) -> list[Case]:
    """The oracle's share of the standard tier on every path (operator, graph, in place)."""
    return on_every_path(oracle_cases)


@pytest.fixture(scope="session")
def scanned_oracle_cases(scanned_cases: list[Case], request: pytest.FixtureRequest) -> list[Case]:
    """The oracle's share of the tier that tier scans check (tests/conftest.py: smoke in the test command, the
    standard tier, the same cases as oracle_cases, in .ci/run's scan step): the smoke tier on every path; the standard
    tier's every case on the operator path and its cases with layouts on every path (a simulated driver computes a
    packed case's graph and in-place runs as its operator run, so running all of them again would double CI's scan for
    no case the smoke tier's paths and the layout cases do not already show)."""
    share = oracle_share(scanned_cases)
    if request.config.getoption("--scan-tier") == "smoke":
        return on_every_path(share)
    return [derived for case in share for path in ExecutionPath
            if (path is ExecutionPath.OPERATOR or case.description.has_layouts)
            and (derived := case.on_path(path)) is not None]
