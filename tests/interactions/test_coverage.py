"""Measuring interaction coverage: what a site covers, what stays missing, what the model holds impossible."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pytest

from dmlconform.interactions.coverage import goal_orders, measure
from dmlconform.interactions.layout import LAYOUTS
from dmlconform.interactions.model import Feature, Interaction, OperatorModel, Site


class Toy(OperatorModel):
    """Three features; `c` = z only where `a` = 1 (a constraint the universe carries)."""

    op = "TOY"
    features = (Feature("a", ("0", "1"), ""), Feature("b", ("x", "y"), ""), Feature("c", ("w", "z"), ""))
    higher = (Interaction(("a", "b", "c"), "all three"),)

    def sites(self, params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
              output_shape: tuple[int, ...]) -> set[Site]:
        return set(params["sites"])

    def possible_sites(self) -> Iterator[Site]:
        for a in "01":
            for b in "xy":
                for c in ("w", "z") if a == "1" else ("w",):
                    yield a, b, c


def test_pairs_the_universe_cannot_hold_are_not_counted_missing():
    model = Toy()
    found = measure(model, [("0", "x", "w", "packed"), ("1", "y", "z", "packed")], cases=2)
    # the three features' 6 values and the layout's 6 (every model has it: interactions/layout.py), one of them
    assert found.counts(1) == (7, 12)
    # possible pairs: a×b 4, a×c 3 (0-z impossible), b×c 4 = 11, and each of the 6 values beside the 6 layouts 36;
    # the two sites cover 6 of the first and 6 of the layout's
    assert found.counts(2) == (12, 47)
    missing = {(i.features, v) for i, v in found.missing(2)}
    assert (("a", "c"), ("0", "z")) not in missing
    assert (("a", "b"), ("0", "y")) in missing and (("b", "c"), ("x", "z")) in missing
    assert (("a", "layout"), ("0", "mixed")) in missing
    assert found.counts(3) == (2, 6)


def test_every_possible_site_covers_everything():
    model = Toy()
    found = measure(model, {(*site, layout) for site in model.universe for layout in LAYOUTS}, cases=6)
    assert all(found.share(order) == 1.0 for order in (1, 2, 3))
    assert not found.missing(2)


def test_a_site_the_model_holds_impossible_is_an_error_not_coverage():
    with pytest.raises(ValueError, match="holds impossible"):
        measure(Toy(), [("0", "x", "z", "packed")], cases=1)
    with pytest.raises(ValueError, match="not one of"):
        measure(Toy(), [("2", "x", "w", "packed")], cases=1)
    with pytest.raises(ValueError, match="not one of"):
        measure(Toy(), [("0", "x", "w", "strided")], cases=1)
    with pytest.raises(ValueError, match="4 features"):
        measure(Toy(), [("0", "x", "w")], cases=1)


def test_the_smoke_goal_is_every_value_the_others_every_pair_and_declared_interaction():
    assert goal_orders("smoke") == (1,)
    assert goal_orders("standard") == goal_orders("full") == goal_orders(None) == (1, 2, 3)
