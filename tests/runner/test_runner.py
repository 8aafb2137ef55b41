"""The runner turns whatever a backend does into exactly one result per case."""

import numpy as np
import pytest

from dmlconform.backends.base import BackendInfo, Outcome
from dmlconform.backends.numpy_backend import NumpyBackend
from dmlconform.case import Case
from dmlconform.case_result import Status
from dmlconform.cli import bundled_suites
from dmlconform.feature_levels import FeatureLevel
from dmlconform.runner import KeepOutputs, run_cases
from dmlconform.suite.loader import load_paths
from tests.suite.test_loader import RELU, with_, write


class Scripted:
    """A backend whose behaviour per case id is given by a function."""

    name = "scripted"

    def __init__(self, behaviour):
        self.behaviour = behaviour

    def info(self) -> BackendInfo:
        return BackendInfo("scripted", "1", "test", FeatureLevel.L6_4)

    def run(self, case: Case) -> Outcome:
        return self.behaviour(case)

    def close(self) -> None:
        pass


@pytest.fixture(scope="module")
def seed_cases():
    return load_paths([bundled_suites() / "seed"])


def reference_outputs(case: Case) -> dict:
    return case.op.reference(case.description, case.inputs).outputs


def statuses(run):
    return {r.id.split("/")[1]: r.status for r in run.results}


def test_a_raising_backend_costs_one_case_and_the_rest_still_run(seed_cases):
    def behaviour(case):
        if case.id == "relu-grad-formula":
            raise RuntimeError("device lost")
        return Outcome.ran(reference_outputs(case))

    run = run_cases(seed_cases, Scripted(behaviour))
    assert len(run.results) == len(seed_cases)
    got = statuses(run)
    assert got.pop("relu-grad-formula") is Status.ERROR
    assert set(got.values()) == {Status.PASS}
    assert "device lost" in next(r.message for r in run.results if r.status is Status.ERROR)


@pytest.mark.parametrize("garbage,expected", [
    (lambda out: {}, "returned no such output"),
    (lambda out: {"OutputGradientTensor": out.astype(np.float64)}, "data type float64"),
    (lambda out: {"OutputGradientTensor": out.reshape(-1)}, "shape"),
    (lambda out: {"OutputGradientTensor": out.tolist()}, "not an array"),
])
def test_garbage_outputs_are_errors_with_a_message(seed_cases, garbage, expected):
    case = next(c for c in seed_cases if c.id == "relu-grad-formula")
    run = run_cases([case], Scripted(lambda c: Outcome.ran(garbage(reference_outputs(c)["OutputGradientTensor"]))))
    [result] = run.results
    assert result.status is Status.ERROR and expected in result.message


def test_wrong_values_fail_and_not_supported_counts_against_the_level(seed_cases):
    def behaviour(case):
        if case.op.name == "SLICE_GRAD":
            return Outcome.not_supported("no slices today")
        out = reference_outputs(case)
        out["OutputGradientTensor"] = out["OutputGradientTensor"] + np.float32(1)
        return Outcome.ran(out)

    run = run_cases(seed_cases, Scripted(behaviour))
    got = statuses(run)
    assert got["slice-grad-2d"] is Status.NOT_SUPPORTED
    assert got["relu-grad-formula"] is Status.FAIL and got["resample-grad1-nearest"] is Status.FAIL
    assert not run.passed


def test_negative_cases_must_be_refused(tmp_path):
    invalid = with_(RELU, "expect", "invalid")
    invalid["inputs"]["InputTensor"]["dtype"] = "FLOAT16"
    [case] = load_paths([write(tmp_path, [invalid])])
    assert run_cases([case], NumpyBackend()).results[0].status is Status.INVALID_OK
    accepted = run_cases([case], Scripted(lambda c: Outcome.ran({}))).results[0]
    assert accepted.status is Status.FAIL and "accepted an invalid description" in accepted.message
    assert "InputTensor.DataType" in accepted.message


def test_refusing_a_valid_case_fails(seed_cases):
    run = run_cases(seed_cases[:1], Scripted(lambda c: Outcome.refused("no")))
    assert run.results[0].status is Status.FAIL and "refused a valid description" in run.results[0].message


def test_candidates_record_which_one_matched(tmp_path):
    case = {"id": "nan", "op": "ACTIVATION_RELU_GRAD", "behaviour": "relu-nan",
            "inputs": {"InputTensor": {"dtype": "FLOAT32", "shape": [2], "data": ["nan", 1]},
                       "InputGradientTensor": {"dtype": "FLOAT32", "shape": [2], "data": [5, 6]}},
            "candidates": {"nan-zero": {"OutputGradientTensor": {"dtype": "FLOAT32", "shape": [2], "data": [0, 6]}},
                           "nan-passes": {"OutputGradientTensor": {"dtype": "FLOAT32", "shape": [2],
                                                                   "data": [5, 6]}}}}
    [loaded] = load_paths([write(tmp_path, [case])])
    for variant in ("nan-zero", "nan-passes"):
        [result] = run_cases([loaded], NumpyBackend(variant)).results
        assert result.status is Status.PASS and result.matched == variant and result.matched_all == (variant,)
    [result] = run_cases([loaded], Scripted(lambda c: Outcome.ran(
        {"OutputGradientTensor": np.array([1, 6], dtype=np.float32)}))).results
    assert result.status is Status.FAIL and "matched none of nan-passes, nan-zero" in result.message


def test_parallel_jobs_give_the_same_results_in_order(seed_cases):
    serial = run_cases(seed_cases, NumpyBackend())
    parallel = run_cases(seed_cases, NumpyBackend())
    assert [(r.id, r.status) for r in serial.results] == [(r.id, r.status) for r in parallel.results]


def test_fingerprint_names_one_candidate_undecided_or_mixed():
    from dmlconform.case_result import CaseResult
    from dmlconform.feature_levels import FeatureLevel as L
    from dmlconform.verdicts import fingerprint

    def result(behaviour, matched_all, status=Status.PASS):
        return CaseResult("s/x", "OP", "FLOAT32", 1, L.L3_0, status, matched=(matched_all or (None,))[0],
                          matched_all=tuple(matched_all), behaviour=behaviour)

    verdicts = fingerprint([result("a", ["x"]), result("a", ["x", "y"]), result("b", ["x", "y"]),
                            result("c", ["x"]), result("c", ["y"]), result("c", [], Status.FAIL)])
    assert verdicts == {"a": "x", "b": "undecided: x or y", "c": "mixed: none (FAIL) ×1, x ×1, y ×1"}


def test_repeats_record_the_elements_that_moved_and_every_repeat_status(seed_cases):
    case = next(c for c in seed_cases if c.id == "relu-grad-formula")
    calls = []

    def behaviour(c):
        calls.append(1)
        out = reference_outputs(c)
        if len(calls) == 2:  # the second repeat flips the sign bit of a zero: bits differ, values compare equal
            flat = out["OutputGradientTensor"].reshape(-1)
            zero = int(np.flatnonzero(flat == 0)[0])
            flat[zero] = -flat[zero]
        return Outcome.ran(out)

    from dmlconform.runner import run_case

    result = run_case(case, Scripted(behaviour), FeatureLevel.L6_4, repeat=3)
    assert len(calls) == 3 and result.attempts == (Status.PASS,) * 3
    assert result.moved_count == 1 and result.moved[0].output == "OutputGradientTensor"
    assert [v.split()[0] for v in result.moved[0].values] == ["0.0", "-0.0", "0.0"]
    steady = run_case(case, NumpyBackend(), FeatureLevel.L6_4, repeat=3)
    assert steady.moved_count == 0 and steady.moved == []


def test_repeats_that_disagree_report_the_failing_one(seed_cases):
    case = next(c for c in seed_cases if c.id == "relu-grad-formula")
    answers = iter([reference_outputs(case), {}])
    from dmlconform.runner import run_case

    result = run_case(case, Scripted(lambda c: Outcome.ran(next(answers))), FeatureLevel.L6_4, repeat=2)
    assert result.attempts == (Status.PASS, Status.ERROR) and result.status is Status.ERROR


def _bump_relu(case: Case) -> Outcome:
    out = reference_outputs(case)
    if case.id == "relu-grad-formula":
        out["OutputGradientTensor"] = out["OutputGradientTensor"] + np.float32(1)
    return Outcome.ran(out)


@pytest.mark.parametrize(("keep", "kept"), [(KeepOutputs.NONE, set()), (KeepOutputs.FAILING, {"relu-grad-formula"}),
                                            (KeepOutputs.ALL, "every case that ran")])
def test_outputs_travel_with_the_result_only_as_asked(seed_cases, keep, kept):
    run = run_cases(seed_cases, Scripted(_bump_relu), keep_outputs=keep)
    carrying = {r.id.split("/")[1] for r in run.results if r.actual_outputs}
    if kept == "every case that ran":
        kept = {r.id.split("/")[1] for r in run.results if r.status is not Status.INVALID_OK}
    assert carrying == kept
    relu = next(r for r in run.results if r.id.endswith("relu-grad-formula"))
    if keep is not KeepOutputs.NONE:
        expected = reference_outputs(next(c for c in seed_cases if c.id == "relu-grad-formula"))
        assert np.array_equal(relu.actual_outputs["OutputGradientTensor"], expected["OutputGradientTensor"] + 1)


def test_a_failing_case_carries_its_ulp_histogram_and_closeness_a_passing_one_only_its_closeness(seed_cases):
    run = run_cases(seed_cases, Scripted(_bump_relu))
    relu = next(r for r in run.results if r.id.endswith("relu-grad-formula"))
    assert relu.status is Status.FAIL and relu.closeness == np.inf
    assert sum(b.count for b in relu.ulp_histogram) == relu_size(seed_cases) and relu.ulp_histogram[-1].low > 0
    passing = [r for r in run.results if r.status is Status.PASS]
    assert passing and all(r.closeness == 0.0 and not r.ulp_histogram for r in passing)


def relu_size(seed_cases) -> int:
    return next(c for c in seed_cases if c.id == "relu-grad-formula").expected["OutputGradientTensor"].size


def test_a_refusal_matches_a_refusal_candidate_and_nothing_else(tmp_path):
    import yaml

    from dmlconform.backends.base import Outcome
    from dmlconform.case_result import Status
    from dmlconform.feature_levels import HIGHEST
    from dmlconform.runner.judge import judge_outcome
    from dmlconform.suite.loader import load_paths

    answer = {"OutputGradientTensor": {"dtype": "FLOAT32", "shape": [2], "data": [5, 0]}}
    case = {"id": "r", "op": "ACTIVATION_RELU_GRAD",
            "inputs": {"InputTensor": {"dtype": "FLOAT32", "shape": [2], "data": [1, -1]},
                       "InputGradientTensor": {"dtype": "FLOAT32", "shape": [2], "data": [5, 6]}},
            "candidates": {"computed": answer, "refused": "refused"}}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"format": "dmlconform/v1", "suite": "t", "cases": [case]}))
    [loaded] = load_paths([path])
    refused = judge_outcome(loaded, Outcome.refused("E_INVALIDARG"), HIGHEST)
    assert refused.status is Status.PASS and refused.matched == "refused" and "E_INVALIDARG" in refused.message
    import numpy as np

    right = judge_outcome(loaded, Outcome.ran({"OutputGradientTensor": np.array([5, 0], np.float32)}), HIGHEST)
    assert right.status is Status.PASS and right.matched == "computed"
    wrong = judge_outcome(loaded, Outcome.ran({"OutputGradientTensor": np.array([5, 6], np.float32)}), HIGHEST)
    assert wrong.status is Status.FAIL
    del case["candidates"]["refused"]
    path.write_text(yaml.safe_dump({"format": "dmlconform/v1", "suite": "t", "cases": [case]}))
    [strict] = load_paths([path])
    assert judge_outcome(strict, Outcome.refused("E_INVALIDARG"), HIGHEST).status is Status.FAIL


def test_the_numpy_backend_and_the_judge_share_one_reference_per_case(seed_cases, monkeypatch):
    case = next(c for c in seed_cases if c.op.name == "MAX_POOLING_GRAD" and not c.expect_invalid)
    calls = []
    original = type(case.op).reference

    def counted(self, *args, **kwargs):
        calls.append(args[2] if len(args) > 2 else kwargs.get("variant"))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(type(case.op), "reference", counted)
    result = run_cases([case], NumpyBackend()).results[0]
    assert result.status is Status.PASS
    assert len(calls) == 1  # the backend's reference is the judge's
    assert case._references == {}  # dropped once the case is judged
    run_cases([case], Scripted(lambda c: Outcome.ran(reference_outputs(c))))
    assert len(calls) == 3  # another backend: the judge computes its own (and the script one more)


def test_the_judge_computes_the_reference_only_where_the_rule_or_differing_bits_need_it(monkeypatch):
    """An exact rule, or a bound-rule output bit-identical to the answer, needs no reference (most of a case's
    judging); MaxPoolingGrad's and AveragePoolingGrad's rules themselves depend on the reference (its routing, its
    window counts and divisors). Off by one ULP, each case is judged
    with it and fails as ever."""
    smoke = load_paths([bundled_suites() / "smoke"])
    calls: list[str] = []
    for op in {type(c.op) for c in smoke}:
        original = op.reference

        def counted(self, *args, original=original, **kwargs):
            calls.append(self.name)
            return original(self, *args, **kwargs)

        monkeypatch.setattr(op, "reference", counted)
    chosen = {}
    for case in smoke:
        if not case.expect_invalid and case.expected is not None and case.tolerance is None and case.dtype.is_float:
            chosen.setdefault(case.op.name, case)
    assert set(chosen) >= {"ACTIVATION_RELU_GRAD", "ELEMENT_WISE_CLIP_GRAD1", "SLICE_GRAD", "MAX_POOLING_GRAD",
                           "RESAMPLE_GRAD1", "AVERAGE_POOLING_GRAD", "RESAMPLE_GRAD"}
    cases = list(chosen.values())
    passed = run_cases(cases, Scripted(lambda c: Outcome.ran({k: v.copy() for k, v in c.expected.items()})))
    assert {r.status for r in passed.results} == {Status.PASS}
    assert sorted(calls) == ["AVERAGE_POOLING_GRAD", "MAX_POOLING_GRAD"]

    def one_ulp_off(c: Case) -> Outcome:
        outputs = {k: v.copy() for k, v in c.expected.items()}
        flat = next(iter(outputs.values())).reshape(-1)
        flat[0] = np.nextafter(flat[0], np.inf, dtype=flat.dtype)
        return Outcome.ran(outputs)

    calls.clear()
    failed = run_cases(cases, Scripted(one_ulp_off))
    # the bound rule's cases
    assert sorted(set(calls)) == ["AVERAGE_POOLING_GRAD", "MAX_POOLING_GRAD", "RESAMPLE_GRAD", "RESAMPLE_GRAD1"]
    by_op = {r.op: r.status for r in failed.results}
    assert by_op["ACTIVATION_RELU_GRAD"] is Status.FAIL and by_op["SLICE_GRAD"] is Status.FAIL
