"""`dmlconform coverage`: the bundled tables have no empty cell; a gap is listed and fails; a result is laid over."""

import json

import pytest
from click.testing import CliRunner

from dmlconform.cli import bundled_suites, main
from dmlconform.ops import OPERATORS

SEED = bundled_suites() / "seed" / "seed_examples.yaml"


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.mark.slow
def test_the_standard_tier_leaves_no_cell_empty():
    result = invoke("coverage", "--json", "-")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["format"] == "dmlconform-coverage/v1" and data["tier"] == "standard" and data["empty_cells"] == 0
    slice_cells = data["operators"]["SLICE_GRAD"]["cells"]
    # two draws per cell from the cells family (the pairwise family exercises more than further random draws did)
    assert len(slice_cells) == 88 and all(cell["cases"] >= 2 for cell in slice_cells)
    assert {c["level"] for c in slice_cells if c["dtype"] == "INT8" and c["rank"] in (4, 5)} == {"3_0"}
    assert data["operators"]["MAX_POOLING_GRAD"]["levels"] == ["3_0", "4_0"]


@pytest.mark.slow
def test_smoke_covers_every_cell_too():
    assert invoke("coverage", "--tier", "smoke", "--json", "-").exit_code == 0


def test_a_suite_with_gaps_lists_them_and_exits_1():
    result = invoke("coverage", "--suites", str(SEED))
    assert result.exit_code == 1
    assert "empty cell(s):" in result.stdout and "SLICE_GRAD FLOAT64 rank 1 (admitted from 4_1)" in result.stdout
    assert "ACTIVATION_RELU_GRAD at 5_1" in result.stdout


def test_a_result_shows_matched_cases_per_cell(tmp_path):
    report = tmp_path / "r.json"
    assert CliRunner().invoke(main, ["run", str(SEED), "--json", str(report)]).exit_code == 0
    result = invoke("coverage", str(report), "--suites", str(SEED), "--json", str(tmp_path / "c.json"))
    assert result.exit_code == 1  # the seed examples leave cells empty
    data = json.loads((tmp_path / "c.json").read_text())
    filled = [c for op in data["operators"].values() for c in op["cells"] if c["cases"]]
    assert filled and all(c["matched"] == c["cases"] and c["failed"] == 0 for c in filled)
    assert "1/1" in invoke("coverage", str(report), "--suites", str(SEED)).stdout


def test_an_unreadable_result_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    result = invoke("coverage", str(bad))
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and str(bad) in result.stderr


@pytest.mark.slow
def test_interactions_the_smoke_tier_meets_its_goal_every_value():
    result = invoke("coverage", "--interactions", "--tier", "smoke", "--json", "-")
    assert result.exit_code == 0, result.stdout
    data = json.loads(result.stdout)
    assert data["format"] == "dmlconform-interactions/v1" and data["goal"] == ["values"] and data["met"]
    assert {op["op"] for op in data["operators"]} == set(OPERATORS)  # every registered operator, each at its goal
    assert all(op["values"]["covered"] == op["values"]["possible"] > 0 for op in data["operators"])


def test_interactions_a_suite_without_the_pairs_fails_and_lists_them():
    result = invoke("coverage", "--interactions", "--suites", str(SEED), "--json", "-")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["tier"] is None and not data["met"]
    slice_grad = next(op for op in data["operators"] if op["op"] == "SLICE_GRAD")
    assert 0 < slice_grad["pairs"]["covered"] < slice_grad["pairs"]["possible"]
    axis_outer = next(row for row in slice_grad["pairs"]["interactions"] if row["features"] == ["axis", "outer"])
    assert ["whole/forward/s1/fewer", "whole/forward/s1/all"] in axis_outer["missing"]
    table = invoke("coverage", "--interactions", "--suites", str(SEED))
    assert table.exit_code == 1 and "pairs missing (goal)" in table.stdout and "axis × outer: 414 of 420" in table.stdout
