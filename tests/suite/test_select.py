import pytest

from dmlconform.suite.loader import load_paths
from dmlconform.suite.select import SelectError, select
from tests.suite.test_loader import RELU, with_, write


@pytest.fixture()
def cases(tmp_path):
    second = with_(RELU, "id", "other")
    second["tags"] = ["edge"]
    return load_paths([write(tmp_path, [RELU, second])])


@pytest.mark.parametrize("expression,ids", [
    ("r1", ["r1"]), ("edge", ["other"]), ("not edge", ["r1"]), ("float32 and edge", ["other"]),
    ("r1 or edge", ["r1", "other"]), ("(r1 or other) and not edge", ["r1"]),
    ("ACTIVATION_RELU_GRAD", ["r1", "other"]), ("slice_grad", []),
])
def test_expressions(cases, expression, ids):
    assert [c.id for c in select(cases, expression)] == ids


@pytest.mark.parametrize("expression", ["r1 and", "(r1", "r1 )", "and r1", ""])
def test_bad_expressions(cases, expression):
    with pytest.raises(SelectError):
        select(cases, expression) if expression else __import__("dmlconform.suite.select").suite.select.parse("")
