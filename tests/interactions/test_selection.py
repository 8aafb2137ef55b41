"""Greedy selection: covers the goal with few candidates, deterministically, and says what it could not cover."""

from dmlconform.interactions.selection import choose


def test_the_biggest_gain_first_and_the_lowest_index_on_a_tie():
    candidates = [{1, 2}, {3, 4}, {1, 2, 3}, {4}, {5}]
    chosen, missing = choose(candidates, {1, 2, 3, 4, 5})
    assert chosen == [2, 1, 4] and not missing
    # 0 and 2 tie for {1, 2}: the lower index wins
    assert choose(candidates, {1, 2})[0] == [0]


def test_what_no_candidate_holds_is_reported_missing():
    chosen, missing = choose([{1}, {2}], {1, 2, 3})
    assert chosen == [0, 1] and missing == {3}


def test_a_refused_candidate_is_passed_over_for_the_next_best():
    chosen, missing = choose([{1, 2, 3}, {1, 2}, {3}], {1, 2, 3}, acceptable=lambda index: index != 0)
    assert chosen == [1, 2] and not missing


def test_stale_gains_do_not_end_the_choice_early():
    # After {1..4} is taken, the stale first guess for {1, 2, 5} is 3; its true gain 1 still gets 5 covered.
    candidates = [{1, 2, 3, 4}, {1, 2, 5}, {1, 2, 3}]
    chosen, missing = choose(candidates, {1, 2, 3, 4, 5})
    assert chosen == [0, 1] and not missing
