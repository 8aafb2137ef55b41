"""Backends that run logical tensors on one operator (ONNX Runtime's graphs, PyTorch) cannot express a layout or an
execution path (contract §9): they say so per case, naming what, and never run the packed case under its name; the
cross-check compares such a case on its packed description."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from dmlconform.backends.base import OutcomeKind, unexpressed
from dmlconform.backends.numpy_backend import NumpyBackend
from dmlconform.backends.onnxruntime_backend import OnnxRuntimeBackend
from dmlconform.backends.torch_backend import TorchBackend
from dmlconform.case import Case
from dmlconform.cli.common import load_cases
from dmlconform.runner.crosscheck import Verdict, crosscheck_case, logical_case
from dmlconform.surface.paths import ExecutionPath
from tests.paths_suite import write_suite


def never(*args: object, **kwargs: object) -> object:
    raise AssertionError("a case the backend cannot express reached it")


@pytest.fixture
def cases(tmp_path: Path) -> dict[str, Case]:
    return {c.full_id: c for c in load_cases((write_suite(tmp_path),), None, execution_paths=tuple(ExecutionPath))}


def backends() -> list[tuple[str, object]]:
    runner = SimpleNamespace(prepare=never, execute=never, choice=None, thread_safe=True)
    fake_torch = SimpleNamespace(device=lambda name: SimpleNamespace(type=name))
    return [("ONNX Runtime's graphs", OnnxRuntimeBackend(runner)), ("PyTorch", TorchBackend(fake_torch, "cpu"))]


@pytest.mark.parametrize("who,backend", backends())
def test_a_layout_or_a_path_is_not_supported_per_case_naming_what(who: str, backend, cases: dict[str, Case]):
    expected = {
        "paths/clip-strided": "InputTensor's strides [2]",
        "paths/relu@graph": "the graph path",
        "paths/clip@in-place": "the in-place path",
        "paths/clip-strided@graph": "InputTensor's strides [2] / the graph path",
    }
    for case_id, what in expected.items():
        outcome = backend.run(cases[case_id])
        assert outcome.kind is OutcomeKind.UNEXPRESSIBLE, case_id
        assert outcome.message.startswith(f"{who} cannot express {what}:"), outcome.message


def test_a_packed_case_on_the_operator_path_is_the_backends_to_run(cases: dict[str, Case]):
    assert unexpressed(cases["paths/relu"], "X") is None and unexpressed(cases["paths/clip"], "X") is None


def test_the_crosscheck_compares_a_laid_out_case_on_its_packed_description(cases: dict[str, Case]):
    strided = cases["paths/clip-strided@graph"]
    packed = logical_case(strided)
    assert not packed.uses_buffers and packed.path is ExecutionPath.OPERATOR and packed.expected is strided.expected
    assert logical_case(cases["paths/clip"]) is cases["paths/clip"]
    checked = crosscheck_case(strided, [NumpyBackend(), NumpyBackend()], ["numpy", "numpy-again"])
    assert checked.verdict is Verdict.ALL_AGREE, checked
