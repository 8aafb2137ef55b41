"""The bundled tiers meet their interaction goals (a tier scan: the smoke tier in the test command, every value; the
standard tier in .ci/run's scan step, every value, pair and declared interaction)."""

import pytest

from dmlconform.interactions.coverage import ORDER_NAMES, goal_orders
from dmlconform.interactions.registry import cases_coverage, models


@pytest.mark.tier_scan
def test_the_scanned_tier_meets_its_interaction_goal(scanned_cases, request):
    tier = request.config.getoption("--scan-tier")
    found = cases_coverage(scanned_cases)
    assert {op.op for op in found} == set(models())  # every operator with an interaction model
    for op in found:
        for order in goal_orders(tier):
            missing = op.missing(order)
            assert not missing, f"{op.op}: {len(missing)} {ORDER_NAMES[order]} missing, e.g. {missing[:3]}"
        assert op.counts(1)[1] > 0 and op.counts(2)[1] > 0
