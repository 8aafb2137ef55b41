"""Merging shard results: the cases in selection order; different runs and overlaps refused by field."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dmlconform.case_result import Status
from dmlconform.results import ResultsError
from dmlconform.results.merge import merge_results
from dmlconform.run_result import Shard
from tests.results.helpers import result, run


def shards(count: int = 3, per: int = 2):
    made = []
    for index in range(1, count + 1):
        results = [result(f"s/{index}-{n}", Status.PASS, index=n * count + index - 1) for n in range(per)]
        made.append((Path(f"shard{index}.json"), run(results, Shard(index, count), cases=count * per)))
    return made


def test_shards_merge_in_selection_order() -> None:
    merged = merge_results(list(reversed(shards())))
    assert [r.index for r in merged.results] == list(range(6))
    assert merged.shard is None and not merged.missing_shards and merged.passed
    assert [s["index"] for s in merged.shards] == [1, 2, 3]


def test_a_missing_shard_is_reported_and_fails_the_merge() -> None:
    merged = merge_results(shards()[:2])
    assert merged.missing_shards == [3] and not merged.passed


@pytest.mark.parametrize(("change", "field"), [
    (lambda r: setattr(r.backend, "version", "2.0"), "backend.version"),
    (lambda r: r.backend.extra.update(driver_version="32.0"), "backend.driver_version"),
    (lambda r: setattr(r, "tool_version", "9.9"), "tool_version"),
    (lambda r: setattr(r.suite, "fingerprint", "0" * 64) if False else r.__setattr__("suite", type(r.suite)(
        "0" * 64, r.suite.cases, r.suite.files)), "suite.fingerprint"),
    (lambda r: r.settings.update(retries=0), "settings.retries"),
    (lambda r: setattr(r, "shard", Shard(3, 4)), "shard.count"),
])
def test_results_of_different_runs_are_refused_naming_the_field(change, field: str) -> None:
    inputs = shards()
    change(inputs[1][1])
    with pytest.raises(ResultsError) as info:
        merge_results(inputs)
    assert f"field {field}" in str(info.value) and "shard2.json" in str(info.value)


def test_overlapping_shards_and_cases_are_refused() -> None:
    inputs = shards()
    with pytest.raises(ResultsError, match=re.escape("shard 1/3 is also in shard1.json")):
        merge_results([*inputs, (Path("again.json"), inputs[0][1])])
    inputs[1][1].results.append(result("s/1-0", Status.PASS, index=0))
    with pytest.raises(ResultsError, match=re.escape("case s/1-0: is also in shard1.json")):
        merge_results(inputs)
