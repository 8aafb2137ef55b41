"""Freeze one generated case: run the reference, check that the case can catch a wrong answer, write its entry.

The checks (each a `Rejected`, so the family draws again, up to a limit):

* a valid case satisfies every description rule; a negative case breaks exactly the rule it names;
* no answer is trivially zero or constant (a driver that writes zeros, or one value everywhere, must fail);
* a candidate case's answers are not all the same (it must tell the behaviours apart);
* the gradient has distinct values and (almost) no zeros, so a gradient sent to the wrong place shows;
* no fp32 denormal appears outside a case that asks for them (D3D lets fp32 arithmetic flush them);
* a sum cannot overflow in any order where its exact value does not (docs/tolerances.md §6): every summed
  element's Σ|t_i| stays below half the type's largest finite value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dmlconform.dtypes import DataType
from dmlconform.generation import GenerationError
from dmlconform.generation.spec import (
    EDGE_CLAMPED,
    FLUSHED,
    GRADIENT_FLUSHED,
    INPUT_FLUSHED,
    REFUSED,
    CaseSpec,
    TensorSpec,
)
from dmlconform.ops import find_operator
from dmlconform.ops.base import Description, DescriptionError, Operator, ParamError, TensorDesc
from dmlconform.ops.max_pooling_grad import argmax_indices
from dmlconform.suite.generate import generate

#: Distinct gradient values a case must have: all of them, up to this many.
DISTINCT_GRADIENTS = 200
#: Largest share of zero gradient elements.
ZERO_GRADIENT_SHARE = 0.01


class Rejected(GenerationError):
    """This draw of the case cannot tell right from wrong; the family draws again."""


@dataclass
class FrozenCase:
    """A suite entry (YAML-ready) and the arrays it refers to, by key in its `.npz`."""

    id: str
    entry: dict[str, Any]
    arrays: dict[str, np.ndarray]


def freeze(spec: CaseSpec, npz: str) -> FrozenCase:
    op = find_operator(spec.op)
    description = _describe(op, spec)
    _check_rules(op, description, spec)
    arrays: dict[str, np.ndarray] = {}
    inputs = {name: _materialise(tensor) for name, tensor in spec.inputs.items()}

    def stored(key: str, tensor: TensorSpec, array: np.ndarray | None) -> dict[str, Any]:
        entry: dict[str, Any] = {"dtype": tensor.dtype.name, "shape": list(tensor.shape)}
        if tensor.layout is not None:
            entry |= tensor.layout.to_dict()
        if tensor.generate is not None:
            entry["generate"] = dict(tensor.generate)
        elif array is not None:
            arrays[key] = np.asarray(array, order="C")
            entry["file"] = f"{npz}:{key}"
        return entry

    entry: dict[str, Any] = {"id": spec.id}
    if spec.note:
        entry["note"] = spec.note
    entry["op"] = op.name
    if spec.params:
        entry["params"] = spec.params
    entry["inputs"] = {name: stored(f"{spec.id}.{name}", tensor, inputs[name]) for name, tensor in spec.inputs.items()}
    output = op.outputs[0]
    if spec.invalid:
        entry["expect"] = "invalid"
        entry["outputs"] = {output: stored("", spec.output, None)}
    else:
        answers = {name: _answer(op, description, inputs, rule) for name, rule in
                   (spec.candidates or {"out": ""}).items() if rule != REFUSED}
        for name, answer in answers.items():
            _check_answer(spec, name, answer)
        _check_inputs(spec, inputs)
        if len(answers) > 1:
            _check_candidates_differ(answers)
        _check_sums(op, description, inputs, spec)
        answer_entries = {name: {output: stored(f"{spec.id}.{name}", spec.output, answer)}
                          for name, answer in answers.items()}
        if spec.candidates:
            entry["candidates"] = answer_entries | {name: REFUSED for name, rule in spec.candidates.items()
                                                    if rule == REFUSED}
            if spec.behaviour:
                entry["behaviour"] = spec.behaviour
        else:
            entry["outputs"] = answer_entries["out"]
    if spec.tolerance:
        entry["tolerance"] = spec.tolerance
    entry["tags"] = list(spec.tags)
    return FrozenCase(spec.id, entry, arrays)


def _describe(op: Operator, spec: CaseSpec) -> Description:
    tensors = {name: TensorDesc(t.dtype, t.shape) for name, t in spec.inputs.items()}
    tensors[op.outputs[0]] = TensorDesc(spec.output.dtype, spec.output.shape)
    try:
        params = op.parse_params(spec.params, spec.output.dtype)
    except ParamError as exc:
        raise GenerationError(f"case {spec.id}: params.{exc}") from None
    layouts = {name: t.layout for name, t in (*spec.inputs.items(), (op.outputs[0], spec.output))
               if t.layout is not None and not t.layout.is_default}
    return Description(op, params, tensors, layouts)


def _check_rules(op: Operator, description: Description, spec: CaseSpec) -> None:
    try:
        op.validate(description)
    except DescriptionError as exc:
        if spec.refuses is None:
            raise GenerationError(f"case {spec.id}: the description breaks {exc}") from None
        if not (exc.field == spec.refuses or exc.field.startswith((spec.refuses + "[", spec.refuses + "."))):
            raise GenerationError(f"case {spec.id}: meant to break {spec.refuses}, but the reference refuses "
                                  f"{exc.field} first ({exc.message})") from None
        return
    if spec.refuses is not None:
        raise GenerationError(f"case {spec.id}: meant to break {spec.refuses}, but the description is valid")


def _materialise(tensor: TensorSpec) -> np.ndarray:
    if tensor.array is not None:
        array = np.asarray(tensor.array)
        if array.dtype != tensor.dtype.numpy or array.shape != tensor.shape:
            raise GenerationError(f"array {array.dtype}{list(array.shape)} does not match {tensor.dtype.name}"
                                  f"{list(tensor.shape)}")
        return array
    if tensor.generate is None:
        raise GenerationError(f"tensor {tensor.dtype.name}{list(tensor.shape)} has no data")
    return generate(tensor.generate, tensor.dtype, tensor.shape)


def is_fp32_denormal(values: np.ndarray) -> np.ndarray:
    if values.dtype != np.float32:
        return np.zeros(values.shape, dtype=bool)
    return (values != 0) & (np.abs(values) < np.finfo(np.float32).tiny)


def flush_fp32_denormals(values: np.ndarray) -> np.ndarray:
    """D3D's fp32 rule when flushing: a denormal becomes a zero of its own sign."""
    return np.where(is_fp32_denormal(values), np.copysign(np.float32(0), values), values).astype(values.dtype)


def _answer(op: Operator, description: Description, inputs: dict[str, np.ndarray], rule: str) -> np.ndarray:
    output = op.outputs[0]
    if rule == FLUSHED:
        flushed = {name: flush_fp32_denormals(array) for name, array in inputs.items()}
        return flush_fp32_denormals(op.reference(description, flushed).outputs[output])
    if rule == INPUT_FLUSHED:
        flushed = {**inputs, "InputTensor": flush_fp32_denormals(inputs["InputTensor"])}
        return op.reference(description, flushed).outputs[output]
    if rule == GRADIENT_FLUSHED:
        flushed = {**inputs, "InputGradientTensor": flush_fp32_denormals(inputs["InputGradientTensor"])}
        return flush_fp32_denormals(op.reference(description, flushed).outputs[output])
    if rule == EDGE_CLAMPED:
        return edge_clamped_answer(op, description, inputs)
    return op.reference(description, inputs, rule or None).outputs[output]


def edge_clamped_answer(op: Operator, description: Description, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """MaxPoolingGrad where a window with no tap inside the input sends its gradient to the input element
    nearest its first tap (a clamp-to-edge sampler), every other window as the reference routes it."""
    x, dy = inputs["InputTensor"], inputs["InputGradientTensor"]
    params = description.params
    reference = op.reference(description, inputs)
    value = reference.accumulation[op.outputs[0]].value.copy().ravel()
    winners = argmax_indices(x, dy.shape[2:], params)
    spatial = x.shape[2:]
    for place in zip(*np.nonzero(winners < 0), strict=True):
        n, c, *o = (int(i) for i in place)
        first = [min(max(o[d] * params["Strides"][d] - params["StartPadding"][d], 0), spatial[d] - 1)
                 for d in range(len(spatial))]
        value[np.ravel_multi_index((n, c, *first), x.shape)] += float(dy[place])
    with np.errstate(over="ignore"):
        return value.reshape(x.shape).astype(dy.dtype)


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal as the comparator sees equality: NaN equals NaN, +0 equals -0."""
    if a.dtype.kind == "f":
        return bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))
    return bool(np.array_equal(a, b))


def _check_answer(spec: CaseSpec, name: str, answer: np.ndarray) -> None:
    label = "the output" if name == "out" else f"candidate {name}"
    nonzero = (answer != 0) | (np.isnan(answer) if answer.dtype.kind == "f" else False)
    if not np.any(nonzero):
        raise Rejected(f"case {spec.id}: {label} is all zeros")
    flat = answer.ravel()
    if flat.size > 1 and _same_bits(flat, np.full_like(flat, flat[0])):
        raise Rejected(f"case {spec.id}: {label} holds one value everywhere")
    if "denormal" not in spec.tags and np.any(is_fp32_denormal(answer)):
        raise Rejected(f"case {spec.id}: {label} holds fp32 denormals outside a denormal case")


def _check_candidates_differ(answers: dict[str, np.ndarray]) -> None:
    first, *others = answers.values()
    if all(_same_bits(first, other) for other in others):
        raise Rejected(f"every candidate ({', '.join(answers)}) is the same answer")


def _check_inputs(spec: CaseSpec, inputs: dict[str, np.ndarray]) -> None:
    if "denormal" not in spec.tags:
        for name, array in inputs.items():
            if np.any(is_fp32_denormal(array)):
                raise Rejected(f"case {spec.id}: {name} holds fp32 denormals outside a denormal case")
    gradient = inputs.get("InputGradientTensor")
    if gradient is None:
        return
    layout = spec.inputs["InputGradientTensor"].layout
    if layout is not None and layout.strides is not None:
        # A broadcast gradient (a stride of 0) holds one value along that dimension: its distinct values are those
        # of one slice.
        for axis, stride in enumerate(layout.strides):
            if stride == 0:
                gradient = np.take(gradient, [0], axis=axis)
    values = gradient.ravel()
    distinct = np.unique(values.view(DataType.from_numpy(values.dtype).bits_dtype)).size
    if distinct < min(values.size, DISTINCT_GRADIENTS):
        raise Rejected(f"case {spec.id}: the gradient has {distinct} distinct values among {values.size}")
    if np.count_nonzero(values == 0) > ZERO_GRADIENT_SHARE * values.size:
        raise Rejected(f"case {spec.id}: more than {ZERO_GRADIENT_SHARE:.0%} of the gradient is zero")


def _check_sums(op: Operator, description: Description, inputs: dict[str, np.ndarray], spec: CaseSpec) -> None:
    dtype = spec.output.dtype
    if not dtype.is_float:
        return
    accumulation = op.reference(description, inputs).accumulation.get(op.outputs[0])
    if accumulation is None:
        return
    limit = float(np.finfo(dtype.numpy).max) / 2
    finite = np.isfinite(accumulation.value) & np.isfinite(accumulation.abs_sum)
    if np.any(finite & (accumulation.abs_sum > limit)):
        raise Rejected(f"case {spec.id}: a sum of magnitudes reaches {dtype.name}'s overflow range, so a "
                       "legitimate summation order could overflow where the exact sum does not")
