"""Shards: disjoint, together the whole selection, balanced by cost, and independent of load order."""

from __future__ import annotations

import random

import pytest

from dmlconform.cli import bundled_suites
from dmlconform.suite.loader import load_paths
from dmlconform.suite.shard import estimated_cost, parse_shard, shard_positions


@pytest.fixture(scope="module")
def cases():
    return load_paths([bundled_suites()])


@pytest.mark.parametrize("count", [1, 2, 3, 7])
@pytest.mark.slow
def test_shards_partition_the_selection_and_balance_the_cost(cases, count: int) -> None:
    parts = [shard_positions(cases, index, count) for index in range(1, count + 1)]
    flat = [p for part in parts for p in part]
    assert sorted(flat) == list(range(len(cases)))
    assert all(part == sorted(part) for part in parts)
    loads = [sum(estimated_cost(cases[p]) for p in part) for part in parts]
    largest = max(estimated_cost(c) for c in cases)
    assert max(loads) - min(loads) <= largest  # greedy largest-first: within one case of each other


def test_a_case_lands_in_the_same_shard_whatever_the_order_of_the_selection(cases) -> None:
    shuffled = list(cases)
    random.Random(7).shuffle(shuffled)
    for index in (1, 2, 3):
        ids = {cases[p].full_id for p in shard_positions(cases, index, 3)}
        assert ids == {shuffled[p].full_id for p in shard_positions(shuffled, index, 3)}


@pytest.mark.parametrize(("text", "words"), [("0/3", "1 <= I <= N"), ("4/3", "1 <= I <= N"), ("1/0", "1 <= I <= N"),
                                             ("a/b", "not I/N"), ("2", "not I/N")])
def test_bad_shard_specs_are_refused(text: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        parse_shard(text)
    assert parse_shard(" 2 / 3 ") == (2, 3)


def test_a_shard_count_past_the_limit_is_refused():
    from dmlconform.suite.shard import MAX_SHARDS, parse_shard

    assert parse_shard(f"1/{MAX_SHARDS}") == (1, MAX_SHARDS)
    with pytest.raises(ValueError, match="at most 100000 shards"):
        parse_shard(f"1/{MAX_SHARDS + 1}")
