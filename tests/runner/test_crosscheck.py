"""Cross-backend arbitration: the verdict definitions, each shown to be reachable, and the bundled suites."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dmlconform.backends import create_backend
from dmlconform.backends.base import BackendInfo, BackendOptions, Outcome
from dmlconform.case import Case
from dmlconform.case_result import Status
from dmlconform.dtypes import DataType
from dmlconform.feature_levels import HIGHEST
from dmlconform.ops import OPERATORS
from dmlconform.ops.base import Description, TensorDesc
from dmlconform.runner.crosscheck import (
    BackendTake,
    CaseCrosscheck,
    PairComparison,
    Verdict,
    crosscheck_case,
    crosscheck_cases,
    decide,
)
from dmlconform.suite.loader import load_paths

VECTORS = Path(__file__).resolve().parents[2] / "test_vectors"


class Scripted:
    """A backend that runs the reference, then does something to chosen cases."""

    def __init__(self, name: str, change=None, readings: dict[str, str] | None = None,
                 outcome: Outcome | None = None) -> None:
        self.name = name
        self.reference = create_backend("numpy", BackendOptions())
        self.change = change
        self.readings = readings or {}
        self.outcome = outcome

    def info(self) -> BackendInfo:
        return BackendInfo(self.name, "test", "nowhere", HIGHEST)

    def run(self, case: Case) -> Outcome:
        if self.outcome is not None:
            return self.outcome
        outcome = self.reference.run(case)
        if self.change is not None and outcome.outputs:
            outcome.outputs = {name: self.change(array.copy()) for name, array in outcome.outputs.items()}
        return outcome

    def close(self) -> None:
        pass


def relu_case(expected: list[float] | None = None, x: list[float] | None = None) -> Case:
    op = OPERATORS["ACTIVATION_RELU_GRAD"]
    x_data = np.array(x or [-1.0, 0.0, 1.0, 2.0], np.float32)
    dy = np.array([5.0, 6.0, 7.0, 8.0], np.float32)
    tensors = {name: TensorDesc(DataType.FLOAT32, (4,)) for name in op.tensors}
    desc = Description(op, {}, tensors)
    case = Case("t", "relu", Path("t.yaml"), desc, {"InputTensor": x_data, "InputGradientTensor": dy})
    golden = op.reference(desc, case.inputs).outputs["OutputGradientTensor"]
    case.expected = {"OutputGradientTensor": np.array(expected, np.float32) if expected else golden}
    return case


def bump(array: np.ndarray) -> np.ndarray:
    array.reshape(-1)[-1] = np.nextafter(array.reshape(-1)[-1], np.float32(np.inf))
    return array


def other_bump(array: np.ndarray) -> np.ndarray:
    array.reshape(-1)[0] = 99.0
    return array


def check(case: Case, *backends: Scripted) -> CaseCrosscheck:
    return crosscheck_case(case, list(backends), [b.name for b in backends])


def test_all_agree():
    result = check(relu_case(), Scripted("a"), Scripted("b"), Scripted("c"))
    assert result.verdict is Verdict.ALL_AGREE and result.named == () and result.pairs == []


def test_a_corrupted_golden_is_suspect():
    result = check(relu_case(expected=[0, 0, 7, 9]), Scripted("a"), Scripted("b"), Scripted("c"))
    assert result.verdict is Verdict.GOLDEN_SUSPECT and result.named == ("a", "b", "c")
    assert all(p.agree for p in result.pairs) and len(result.pairs) == 3


def test_one_backend_that_differs_is_named():
    result = check(relu_case(), Scripted("a"), Scripted("b", bump), Scripted("c"))
    assert result.verdict is Verdict.BACKEND_DIFFERS and result.named == ("b",) and not result.explained
    assert [p.agree for p in result.pairs] == [False, True, False]


def test_two_agreeing_backends_outvote_one_that_matches_the_golden():
    """The golden came from the reference: if two independent backends agree against both, suspect the golden."""
    result = check(relu_case(), Scripted("reference"), Scripted("b", bump), Scripted("c", bump))
    assert result.verdict is Verdict.GOLDEN_SUSPECT and result.named == ("b", "c")
    assert "reference matched it" in result.note


def test_a_tie_does_not_make_the_golden_suspect():
    result = check(relu_case(), Scripted("a"), Scripted("b"), Scripted("c", bump), Scripted("d", bump))
    assert result.verdict is Verdict.BACKEND_DIFFERS and result.named == ("c", "d")


def test_backends_that_differ_from_the_golden_and_each_other_are_undecided():
    result = check(relu_case(expected=[0, 0, 7, 9]), Scripted("a", other_bump), Scripted("b"))
    assert result.verdict is Verdict.UNDECIDED and set(result.named) == {"a", "b"}


def test_not_supported_is_not_a_disagreement():
    result = check(relu_case(), Scripted("a"), Scripted("b", outcome=Outcome.not_supported("no kernel")))
    assert result.verdict is Verdict.ALL_AGREE and "not supported on b" in result.note
    alone = check(relu_case(), Scripted("a", outcome=Outcome.not_supported("no")),
                  Scripted("b", outcome=Outcome.not_supported("no")))
    assert alone.verdict is Verdict.UNDECIDED


def test_errors_and_crashes_differ_without_voting():
    result = check(relu_case(), Scripted("a"), Scripted("b", outcome=Outcome.error("boom")),
                   Scripted("c", outcome=Outcome.refused("no")))
    assert result.verdict is Verdict.BACKEND_DIFFERS and result.named == ("b", "c")
    assert result.take("c").status is Status.FAIL and not result.take("c").ran


def test_a_backend_raising_costs_only_its_own_result():
    class Raising(Scripted):
        def run(self, case: Case) -> Outcome:
            raise RuntimeError("driver bug")

    result = check(relu_case(), Scripted("a"), Raising("b"))
    assert result.take("b").status is Status.ERROR and "driver bug" in result.take("b").message


def bundled_suite(name: str) -> list[Case]:
    """One bundled suite file's cases (test_vectors/<operator>/<name>.yaml): what a test needs a case of, without
    loading every bundled suite."""
    return load_paths([VECTORS / name])


def test_different_candidates_are_not_a_disagreement():
    case = next(c for c in bundled_suite("relu_grad/edge.yaml") if c.full_id == "relu_grad.edge/nan-x")
    torch_like = Scripted("torch", readings={"relu-nan-input": "nan-passes"})
    torch_like.reference = create_backend("numpy", BackendOptions(variant="nan-passes"))
    result = check(case, Scripted("numpy"), torch_like)
    assert result.verdict is Verdict.ALL_AGREE
    assert "numpy=nan-zero, torch=nan-passes" in result.note


def test_a_documented_semantic_difference_is_explained():
    case = next(c for c in bundled_suite("relu_grad/edge.yaml") if c.full_id == "relu_grad.edge/nan-x")
    odd = Scripted("odd", change=other_bump, readings={"relu-nan-input": "nan-doubles"})
    result = check(case, Scripted("a"), Scripted("b"), odd)
    assert result.verdict is Verdict.BACKEND_DIFFERS and result.explained
    assert "odd follows 'nan-doubles' for relu-nan-input" in result.note
    # A reading the case lists explains nothing: that backend is just wrong.
    listed = Scripted("odd", change=other_bump, readings={"relu-nan-input": "nan-passes"})
    assert not check(case, Scripted("a"), listed).explained


def test_negative_cases():
    case = next(c for c in bundled_suite("relu_grad/invalid.yaml") if c.expect_invalid)
    assert check(case, Scripted("a"), Scripted("b")).verdict is Verdict.ALL_AGREE

    class Accepting(Scripted):
        def run(self, case: Case) -> Outcome:
            return Outcome.ran({name: np.zeros(case.description.tensors[name].shape,
                                               case.description.tensors[name].dtype.numpy)
                                for name in case.op.outputs})

    assert check(case, Scripted("a"), Accepting("b")).verdict is Verdict.BACKEND_DIFFERS
    suspect = check(case, Accepting("b"), Accepting("c"), Scripted("a"))
    assert suspect.verdict is Verdict.GOLDEN_SUSPECT and suspect.named == ("b", "c")


@pytest.mark.parametrize("statuses,pairs,verdict", [
    ({"a": Status.PASS, "b": Status.PASS}, [], Verdict.ALL_AGREE),
    ({"a": Status.FAIL, "b": Status.FAIL}, [("a", "b", True)], Verdict.GOLDEN_SUSPECT),
    ({"a": Status.FAIL, "b": Status.FAIL}, [("a", "b", False)], Verdict.UNDECIDED),
    ({"a": Status.PASS, "b": Status.FAIL}, [("a", "b", False)], Verdict.BACKEND_DIFFERS),
    ({"a": Status.FAIL, "b": Status.FAIL, "c": Status.FAIL}, [("a", "b", False), ("a", "c", False),
                                                              ("b", "c", True)], Verdict.GOLDEN_SUSPECT),
])
def test_decide(statuses: dict[str, Status], pairs: list[tuple[str, str, bool]], verdict: Verdict):
    takes = [BackendTake(name, status, None, (), "", 0, 0.0, True) for name, status in statuses.items()]
    checked = CaseCrosscheck("t/c", "OP", "FLOAT32", None, takes, [PairComparison(*p) for p in pairs])
    decide(checked)
    assert checked.verdict is verdict


@pytest.mark.slow
@pytest.mark.tier_scan
def test_the_scanned_tier_all_agrees_on_numpy_onnxruntime_and_torch(scanned_cases: list[Any]):
    pytest.importorskip("torch")
    pytest.importorskip("onnxruntime")
    names = ["numpy", "onnxruntime", "torch"]
    backends = [create_backend(name, BackendOptions(ep="cpu")) for name in names]
    run = crosscheck_cases(scanned_cases, backends, names)
    assert run.counts()[Verdict.ALL_AGREE.value] == len(scanned_cases), [
        (c.id, c.verdict.value, c.note) for c in run.cases if c.verdict is not Verdict.ALL_AGREE]
    split = {c.id for c in run.cases if "different candidates" in c.note}
    assert "relu_grad.edge/nan-x" in split  # torch passes the gradient where X is NaN, the reference does not


def _nan_case_of_another_size() -> Case:
    """The smoke tier's MaxPoolingGrad case whose gradient is not the pooled size and whose X holds NaN."""
    from dmlconform.suite.loader import load_paths

    path = Path(__file__).resolve().parents[2] / "test_vectors" / "smoke" / "max_pooling_grad.yaml"
    return next(c for c in load_paths([path]) if c.id == "pairs-002-float16-r4")


def test_a_nan_reading_of_a_not_pooled_size_case_is_labelled_and_explained_as_maxpool_nan_input():
    from dmlconform.report.crosscheck import split_behaviour

    case = _nan_case_of_another_size()
    assert case.behaviour == "maxpool-gradient-not-pooled-size" and "nan-sticks" in case.candidates
    sticks = Scripted("numpy:nan-sticks")
    sticks.reference = create_backend("numpy", BackendOptions(variant="nan-sticks"))
    result = check(case, Scripted("numpy"), sticks)
    assert result.verdict is Verdict.ALL_AGREE and split_behaviour(result) == "maxpool-nan-input"
    odd = Scripted("odd", change=other_bump, readings={"maxpool-nan-input": "nan-wins-first"})
    result = check(case, Scripted("a"), Scripted("b"), odd)
    assert result.verdict is Verdict.BACKEND_DIFFERS and result.explained
    assert "odd follows 'nan-wins-first' for maxpool-nan-input" in result.note
