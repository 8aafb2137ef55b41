import pytest

from dmlconform.suite.loader import load_paths
from dmlconform.suite.tiers import Tier
from tests.suite.test_loader import RELU, load_error, with_, write


def test_tiers_are_cumulative():
    assert Tier.STANDARD.includes(Tier.SMOKE) and Tier.FULL.includes(Tier.STANDARD)
    assert not Tier.SMOKE.includes(Tier.STANDARD)
    assert [t for t in Tier if t.committed] == [Tier.SMOKE, Tier.STANDARD]
    assert Tier.parse(" Full ") is Tier.FULL
    with pytest.raises(ValueError, match="'huge' is not a tier"):
        Tier.parse("huge")


def test_the_loader_keeps_suites_of_the_tier_and_below_and_suites_that_name_none(tmp_path):
    write(tmp_path, [RELU], name="a.yaml", suite="untiered")
    write(tmp_path, [with_(RELU, "id", "s")], name="b.yaml", suite="smoke-suite", tier="smoke")
    write(tmp_path, [with_(RELU, "id", "f")], name="c.yaml", suite="full-suite", tier="full")
    ids = {tier: {c.full_id for c in load_paths([tmp_path], tier)} for tier in (None, *Tier)}
    assert ids[None] == ids[Tier.FULL] == {"untiered/r1", "smoke-suite/s", "full-suite/f"}
    assert ids[Tier.SMOKE] == ids[Tier.STANDARD] == {"untiered/r1", "smoke-suite/s"}


def test_an_unknown_tier_is_refused_naming_the_field(tmp_path):
    message = load_error(tmp_path, [RELU], tier="gold")
    assert message.endswith("tier: 'gold' is not a tier (known: smoke, standard, full)")
