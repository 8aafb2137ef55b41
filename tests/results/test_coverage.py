from dmlconform.case_result import Status
from dmlconform.dtypes import DataType
from dmlconform.feature_levels import FeatureLevel
from dmlconform.ops import OPERATORS
from dmlconform.results.coverage import coverage, support_cells
from dmlconform.suite.loader import load_paths
from tests.results.helpers import result, run
from tests.suite.test_loader import RELU, with_, write


def test_every_cell_of_a_table_with_the_level_that_admits_it():
    from dmlconform.ops import find_operator

    cells = {(c.dtype, c.rank): c.level for c in support_cells(find_operator("SLICE_GRAD"))}
    assert len(cells) == 11 * 8
    assert cells[(DataType.INT8, 4)] is FeatureLevel.L3_0 and cells[(DataType.INT8, 3)] is FeatureLevel.L3_1
    assert cells[(DataType.UINT64, 5)] is FeatureLevel.L4_1


def test_cases_fill_cells_and_the_rest_are_empty(tmp_path):
    invalid = with_(with_(RELU, "id", "bad"), "expect", "invalid")
    invalid["inputs"]["InputGradientTensor"]["dtype"] = "FLOAT16"
    cases = load_paths([write(tmp_path, [RELU, with_(RELU, "id", "r2"), invalid])])
    found = coverage(cases)
    relu = next(op for op in found.operators if op.op.name == "ACTIVATION_RELU_GRAD")
    assert relu.cell(DataType.FLOAT32, 1).cases == 2
    assert relu.cell(DataType.FLOAT16, 1).cases == 0 and relu.cell(DataType.INT8, 8).level is FeatureLevel.L5_1
    assert relu.refusals == {"InputGradientTensor.DataType": 1}
    # every cell of every other operator's tables is empty too
    every_cell = sum(sum(
        1 for dtype in op.support.all_dtypes for rank in range(op.support.rank_range[0], op.support.rank_range[1] + 1)
        if op.support.required_level(dtype, rank) is not None) for op in OPERATORS.values())
    assert len(relu.empty) == 39 and len(found.empty) == every_cell - 1
    assert [c.dtype for c in relu.new_at(FeatureLevel.L5_1)] == [DataType.INT32] * 8 + [DataType.INT16] * 8 + \
        [DataType.INT8] * 8
    assert not relu.cell(DataType.INT8, 8).admitted_at(FeatureLevel.L5_0)


def test_a_result_says_how_each_cell_came_out(tmp_path):
    cases = load_paths([write(tmp_path, [RELU, with_(RELU, "id", "r2"), with_(RELU, "id", "r3")])])
    document = run([result("t/r1", Status.PASS), result("t/r2", Status.FAIL), result("t/other", Status.PASS),
                    result("t/r3", Status.NOT_REQUIRED, outcome=Status.PASS)])
    cell = next(op for op in coverage(cases, document).operators
                if op.op.name == "ACTIVATION_RELU_GRAD").cell(DataType.FLOAT32, 1)
    assert (cell.cases, cell.matched, cell.failed, cell.not_run) == (3, 2, 1, 0)
    assert coverage(cases, document).unknown_results == 1
    partial = coverage(cases, run([result("t/r1", Status.PASS)]))
    cell = next(op for op in partial.operators if op.op.name == "ACTIVATION_RELU_GRAD").cell(DataType.FLOAT32, 1)
    assert (cell.matched, cell.not_run) == (1, 2)
