import pytest

from dmlconform.compare.tolerance import RuleKind, Tolerance


@pytest.mark.parametrize("text,kind,ulps,k", [
    ("exact", RuleKind.EXACT, 0, None), ("ulp:3", RuleKind.ULP, 3, None), ("bound", RuleKind.BOUND, 0, None),
    ("bound:2.5", RuleKind.BOUND, 0, 2.5), (" ULP:0 ", RuleKind.ULP, 0, None),
])
def test_parse(text, kind, ulps, k):
    rule = Tolerance.parse(text)
    assert (rule.kind, rule.ulps, rule.k) == (kind, ulps, k)
    assert Tolerance.parse(str(rule)) == rule


@pytest.mark.parametrize("text", ["ulp", "ulp:-1", "ulp:x", "bound:-2", "bound:nan", "close", "exact:1", 3, None])
def test_bad_rules_are_refused_with_a_message(text):
    with pytest.raises(ValueError, match=r"ulp|bound|tolerance|exact"):
        Tolerance.parse(text)
