"""The judge on buffers (contract §9): outputs read where their layout puts them, and a FAIL for any byte written
outside a tensor's elements, even where the values are right."""

from __future__ import annotations

from dmlconform.backends.base import Outcome
from dmlconform.case_result import Status
from dmlconform.feature_levels import HIGHEST
from dmlconform.runner.judge import judge_outcome
from dmlconform.surface.buffers import images_after, images_before
from tests.test_harness_protocol import _clip_case


def _right_images(path: str) -> tuple[object, dict[str, bytes]]:
    case = _clip_case(path)
    before = images_before(case.description, case.binding, case.inputs)
    return case, images_after(case.description, case.binding, before, case.reference().outputs)


def test_right_buffers_pass_on_every_path() -> None:
    for path in ("operator", "graph", "in-place"):
        case, images = _right_images(path)
        result = judge_outcome(case, Outcome.ran_buffers(images), HIGHEST)  # type: ignore[arg-type]
        assert result.status is Status.PASS, (path, result.message)


def test_one_canary_byte_changed_fails_naming_the_byte_though_the_values_match() -> None:
    case, images = _right_images("operator")
    stray = bytearray(images["InputTensor"])
    stray[3] ^= 1  # before the binding at offset 16
    result = judge_outcome(case, Outcome.ran_buffers({**images, "InputTensor": bytes(stray)}), HIGHEST)  # type: ignore[arg-type]
    assert result.status is Status.FAIL and "byte 3 of its buffer" in result.message
    assert "its values match" in result.message and result.stray_writes


def test_a_wrong_second_copy_on_the_graph_path_fails() -> None:
    case, images = _right_images("graph")
    copy = bytearray(images["OutputGradientTensor@edges"])
    wrong = images_after(case.description, case.binding, images_before(case.description, case.binding, case.inputs),
                         {name: value + 1 for name, value in case.reference().outputs.items()})  # type: ignore[union-attr]
    copy[:] = wrong["OutputGradientTensor@edges"]
    result = judge_outcome(case, Outcome.ran_buffers({**images, "OutputGradientTensor@edges": bytes(copy)}), HIGHEST)  # type: ignore[arg-type]
    assert result.status is Status.FAIL and not result.stray_writes


def test_logical_outputs_on_another_path_than_operator_are_an_error() -> None:
    case, _ = _right_images("graph")
    result = judge_outcome(case, Outcome.ran(case.reference().outputs), HIGHEST)  # type: ignore[union-attr, arg-type]
    assert result.status is Status.ERROR and "no buffers" in result.message


def test_an_accepted_negative_case_on_buffers_keeps_what_it_wrote() -> None:
    """A certification keeps the outputs of a negative case DirectML accepted; on the graph path they come from the
    buffers (found by verify on an H100 package: the graph path's accepted negative cases had none)."""
    from dataclasses import replace

    case, images = _right_images("graph")
    negative = replace(case, expect_invalid=True, expected=None)  # type: ignore[call-arg]
    outcome = Outcome.ran_buffers(images)
    result = judge_outcome(negative, outcome, HIGHEST)  # type: ignore[arg-type]
    assert result.status is Status.FAIL and "accepted an invalid description" in result.message
    assert set(outcome.outputs) == {"OutputGradientTensor", "OutputGradientTensor@edges"}
    assert result.output_sha256 is not None
