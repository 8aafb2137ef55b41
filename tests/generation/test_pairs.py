"""Pairwise families: the choice covers its goal by design, keeps the smoke cases in the standard tier, and fails
loudly (never a smaller tier) when the candidates cannot reach a combination or the cases exceed the cap."""

from pathlib import Path

import pytest

from dmlconform.generation import GenerationError
from dmlconform.generation.build import freeze_plan
from dmlconform.generation.description import Family
from dmlconform.generation.families.elementwise import pairs_candidate as select_candidate
from dmlconform.generation.families.pairs import pairwise_plans, spec_sites
from dmlconform.interactions.coverage import measure
from dmlconform.interactions.registry import models
from dmlconform.ops import find_operator
from dmlconform.suite.tiers import Tier

RELU = "ACTIVATION_RELU_GRAD"


def family(kind: str, counts: dict, candidates: int, seed: int = 11) -> Family:
    return Family(Path(__file__), find_operator(RELU), "p", kind, seed, counts, "test family",
                  {"candidates": candidates})


def cases(fam: Family, tier: Tier, builder=select_candidate) -> list:
    return [freeze_plan(fam, plan, "d.npz").entry for plan in pairwise_plans(builder)(fam, tier)]


def chosen_specs(fam: Family, tier: Tier, builder=select_candidate) -> list:
    from dmlconform.generation.draw import Draw

    return [plan.make(Draw(0)) for plan in pairwise_plans(builder)(fam, tier)]


def test_smoke_covers_every_value_and_smoke_plus_standard_every_pair():
    fam = family("select-pairs", {Tier.SMOKE: 20, Tier.STANDARD: 60}, 800, seed=1600)
    model = models()[RELU]
    smoke = chosen_specs(fam, Tier.SMOKE)
    standard = chosen_specs(fam, Tier.STANDARD)
    assert smoke and standard
    assert len({spec.id for spec in smoke + standard}) == len(smoke) + len(standard)
    sites_smoke = set().union(*(spec_sites(model, spec) for spec in smoke))
    sites_all = sites_smoke.union(*(spec_sites(model, spec) for spec in standard))
    # the operator's own features (the layout's combinations are the layout family's: tests/generation/test_layout.py)
    assert not [(i.features, v) for i, v in measure(model, sites_smoke, len(smoke)).missing(1)
                if "layout" not in i.features]
    both = measure(model, sites_all, len(smoke) + len(standard))
    missing = [(i.features, v) for i, v in both.missing(2) if i.features != ("dtype", "rank")
               and "layout" not in i.features]
    assert not missing
    # every chosen case freezes (the freezer was asked as they were chosen)
    fam_cases = cases(fam, Tier.SMOKE)
    assert [entry["id"] for entry in fam_cases] == [spec.id for spec in smoke]


def test_a_combination_no_candidate_reaches_is_an_error_naming_it():
    def no_infinities(fam, draw, index, case_id):
        spec = select_candidate(fam, draw, index, case_id)
        for tensor in spec.inputs.values():
            tensor.array[abs(tensor.array.astype(float)) == float("inf")] = 1
        return spec

    fam = family("select-pairs", {Tier.SMOKE: 20, Tier.STANDARD: 60}, 120, seed=12)
    with pytest.raises(GenerationError, match=r"combinations of the smoke goal are in none of the 120 candidates"
                                              r".*inf"):
        chosen_specs(fam, Tier.SMOKE, no_infinities)


def test_more_cases_than_the_cap_is_an_error_not_a_truncated_tier():
    fam = family("select-pairs", {Tier.SMOKE: 2, Tier.STANDARD: 60}, 400, seed=13)
    with pytest.raises(GenerationError, match=r"counts.smoke: the smoke goal takes \d+ cases, more than the 2"):
        chosen_specs(fam, Tier.SMOKE)
