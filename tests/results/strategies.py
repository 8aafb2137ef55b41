"""Hypothesis strategies for results: case results of every status with every optional field, and runs of them."""

from __future__ import annotations

import math
from datetime import UTC, datetime

from hypothesis import strategies as st

from dmlconform.backend_info import BackendInfo
from dmlconform.case_result import AppliedWaiver, CaseResult, MovedElement, Status
from dmlconform.compare.comparator import Element
from dmlconform.compare.tolerance import Tolerance
from dmlconform.feature_levels import FeatureLevel
from dmlconform.run_result import ExpectationFile, RunResult, Shard, SuiteInfo
from dmlconform.ulp_histogram import UlpBucket

NAMES = st.text(st.sampled_from("abcXYZ019._+-"), min_size=1, max_size=12)
#: Any text a document may carry in a free field: markup, quotes, newlines, non-ASCII.
TEXT = st.text(max_size=40)
LEVELS = st.sampled_from(list(FeatureLevel))
STATUSES = st.sampled_from(list(Status))
#: A case's own status: WAIVED only with its waiver and the failure it covers (case_results).
OWN_STATUSES = st.sampled_from([status for status in Status if status is not Status.WAIVED])
FAILURES = st.sampled_from([status for status in Status if status.failure])
waivers = st.builds(AppliedWaiver, NAMES, TEXT, TEXT, TEXT)
SMALL = st.integers(min_value=0, max_value=2**40)
FINITE = st.floats(allow_nan=False, allow_infinity=False, width=64)
INDEX = st.lists(st.integers(0, 100), max_size=4).map(tuple)

elements = st.builds(Element, INDEX, TEXT, TEXT, st.none() | SMALL, TEXT)
moved = st.builds(MovedElement, NAMES, INDEX, st.lists(TEXT, max_size=3).map(tuple))
buckets = st.one_of(st.builds(lambda low, width, count: UlpBucket(low, low + width, count), SMALL, SMALL, SMALL),
                    st.builds(lambda count: UlpBucket(None, None, count), SMALL))
tolerances = st.sampled_from(["exact", "ulp:0", "ulp:3", "bound", "bound:2", "bound:0.5"]).map(Tolerance.parse)


@st.composite
def case_results(draw: st.DrawFn, index: int = 0) -> CaseResult:
    waiver = draw(st.none() | waivers)
    status, outcome = (Status.WAIVED, draw(FAILURES)) if waiver else (draw(OWN_STATUSES), draw(st.none() | STATUSES))
    return CaseResult(
        f"{draw(NAMES)}/{draw(NAMES)}", draw(NAMES), draw(NAMES), draw(st.integers(0, 8)), draw(LEVELS),
        status, required=draw(st.booleans()), matched=draw(st.none() | NAMES),
        matched_all=tuple(draw(st.lists(NAMES, max_size=2))), tolerance=draw(st.none() | tolerances),
        max_ulp=draw(st.none() | SMALL), max_abs_error=draw(st.none() | FINITE),
        worst_index=draw(st.none() | INDEX), message=draw(TEXT),
        duration_s=round(draw(st.floats(0, 1e6)), 6), worst=draw(st.lists(elements, max_size=2)),
        tags=tuple(draw(st.lists(NAMES, max_size=2))), behaviour=draw(st.none() | NAMES),
        outcome=outcome, file=draw(TEXT), index=index,
        attempts=tuple(draw(st.lists(STATUSES, max_size=3))), baseline=draw(st.none() | STATUSES),
        expectation=draw(st.none() | TEXT), moved=draw(st.lists(moved, max_size=2)), moved_count=draw(SMALL),
        closeness=draw(st.none() | st.just(math.inf) | st.floats(0, 1e300)),
        ulp_histogram=draw(st.lists(buckets, max_size=3)),
        artifacts=draw(st.dictionaries(NAMES, TEXT, max_size=2)), waiver=waiver,
        output_sha256=draw(st.none() | st.text("0123456789abcdef", min_size=64, max_size=64)))


@st.composite
def runs(draw: st.DrawFn) -> RunResult:
    count = draw(st.integers(0, 4))
    results = [draw(case_results(index=position)) for position in range(count)]
    ids = {r.id for r in results}
    results = [r for r in results if r.id in ids and (ids.discard(r.id) or True)]  # ids are unique in a run
    info = BackendInfo(draw(TEXT), draw(TEXT), draw(TEXT), draw(LEVELS), draw(TEXT),
                       draw(st.dictionaries(st.sampled_from(["driver_version", "api", "harness"]), TEXT)))
    run = RunResult(info, draw(LEVELS), datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC), round(draw(st.floats(0, 1e5)), 6),
                    results, suite=draw(st.none() | st.builds(SuiteInfo, NAMES, SMALL,
                                                              st.dictionaries(NAMES, NAMES, max_size=2))),
                    shard=draw(st.none() | st.builds(Shard, st.integers(1, 4), st.integers(4, 8))),
                    settings=draw(st.dictionaries(NAMES, st.none() | SMALL | NAMES, max_size=3)))
    run.expectations = draw(st.lists(st.builds(ExpectationFile, st.sampled_from(["baseline", "skip", "flakes"]),
                                               TEXT, NAMES), max_size=2))
    run.interrupted, run.resumed = draw(st.none() | NAMES), draw(st.integers(0, 5))
    return run
