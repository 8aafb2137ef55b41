"""Simulated drivers: the five operators derived a second time from the seed pages, with knobs.

Nothing here imports `dmlconform.ops`' references: each operator is written again, as plain loops over
the gradient's elements (the way a shader thread per element would see it), from the DirectML pages
and contract §1. A driver is a `Knobs` value:

* *legitimate variants* change only what the pages and contract §3 leave to the implementation (the
  order and precision of sums, FMA, how weights are rounded, the sign of a zero, which candidate an
  undocumented behaviour follows). Each must pass every bundled case.
* *bugs* (`bug=`) are mistakes a real driver could make. Each must fail at least one bundled case of the
  standard tier, and one of the smoke tier where it breaks a rule the pages state outright (`Bug.must_die_on`).
  The ones with a `source` are real: DirectML 1.15.4's own (DECISIONS.md §7) and bugs other implementations of
  these gradients have had (an issue or pull request each), modelled in DirectML's terms; they are the catalogue
  of real bugs in docs/oracle.md.

A driver runs through the real runner as an in-process backend (`SimulatedDriver`), so what the
mutation figure measures is what `dmlconform run` would report. Where a case has whole buffers (a layout, or the
graph or in-place path: contract §9) the driver is handed them as a real one is, reads each input from its buffer
through its Strides and Offset, and stores the output's elements through its layout and nothing else; the buffer
knobs and bugs change only that.

The one thing borrowed from the package is description validation (`case.op.validate`): a driver must
refuse what DirectML refuses, and the validation rules are tested on their own (tests/ops/
test_description_rules.py). Bugs that skip validation are listed as such.
"""

from __future__ import annotations

import functools
import itertools
import math
import pickle
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

import numpy as np

from dmlconform.backends.base import BackendInfo, Outcome
from dmlconform.case import Case
from dmlconform.feature_levels import HIGHEST
from dmlconform.ops._resample_coordinates import inverts_exactly
from dmlconform.ops.base import Description, DescriptionError
from dmlconform.surface.buffers import images_before
from dmlconform.surface.paths import EDGES_SUFFIX, ExecutionPath
from tests.oracle.arithmetic import Summation, Weight, exact, exact_total, round_fraction, weight_value

Terms = list[tuple[Weight, np.floating]]

#: Where DirectML 1.15.4's own bugs are recorded (§7: found by the full tier, modelled in
#: examples/dml_harness/investigate/).
DECISIONS_7 = "examples/dml_harness/results/DECISIONS.md"


@dataclass(frozen=True)
class Knobs:
    name: str
    summary: str
    summation: Summation = field(default_factory=Summation)
    #: The zero written where the pages say 0 (untouched elements, deselected gradients).
    zero: float = 0.0
    # Which candidate each undocumented behaviour follows (contract §2).
    relu_nan: str = "nan-zero"  # X = NaN: `X > 0 ? dY : 0` gives 0; `X <= 0 ? 0 : dY` passes dY
    clip_nan: str = "nan-passes"  # the documented `X <= Min or X >= Max ? 0 : dY` passes dY
    pool_nan: str = "nan-sticks"  # strict `>` scan
    pool_padding_only: str = "dropped"  # a window with no tap inside the input
    resample_offsets: str = "literal"
    zero_weight_taps: str = "skipped"  # LINEAR taps of weight 0 over an infinite or NaN gradient
    #: preserved; flushed (every input and result); or flushed-in-arithmetic (D3D11's rule: flushed where compared
    #: or summed, kept where only moved, as by ReluGrad's and ClipGrad1's select: what an H100 does).
    fp32_denormals: str = "preserved"
    #: How an fp16 result leaves a wider sum: nearest (IEEE), or toward-zero (D3D's float conversion rule: round
    #: toward zero, a finite value past the range becomes the largest finite one, as DirectML does).
    fp16_conversion: str = "nearest"
    #: How the ResampleGrad1 source coordinate is evaluated in float32 (its order is undocumented).
    coordinates: str = "division"
    #: MaxPoolingGrad with a gradient that is not the pooled size: computed, or refused (DirectML 1.15.4).
    pool_gradient_size: str = "computed"
    #: How ResampleGrad (v0) evaluates NEAREST_NEIGHBOR's round half up, floor(x + 0.5): `exact`, with the sum in
    #: `float32`, or `folded` into the coordinate as Resample2 DECREASING with InputPixelOffsets lowered by 0.5.
    v0_half: str = "exact"
    #: AveragePoolingGrad's divisor with IncludePadding TRUE (its reference variants: OC-AP1, OC-AP3).
    avg_divisor: str = "clipped-to-padding"
    #: How AveragePoolingGrad forms dY / divisor: `weight` (1/divisor as the term's weight, rounded as `summation`
    #: says: exact, or a reciprocal rounded to float32 or the data type), or a float32 division 2 ULP `low` (toward
    #: zero) or `high` wherever the quotient is inexact (D3D allows 2.5 ULP), rounded to the accumulation type.
    avg_division: str = "weight"
    #: AveragePoolingGrad with a gradient that is not the pooled size, or a window larger than the padded input:
    #: computed, or refused.
    avg_gradient_size: str = "computed"
    #: How ClipGrad (v0) meets its FLOAT bounds (DirectML's pages leave it open): `in-type` (each bound clamped into
    #: the tensors' type and converted, integers toward zero, FLOAT16 to nearest: DirectML 1.15.4), `exact` (X against
    #: the bound as numbers), `x-in-float32` / `x-in-float64` (an integer X converted, nearest even), `rounded` /
    #: `rounded-away` (integer bounds to nearest, ties to even or away from zero), `half-overflowing` (FLOAT16 bounds
    #: by IEEE's conversion, unclamped), `half-toward-zero` (by D3D's).
    clip_v0_bounds: str = "in-type"
    #: What ClipGrad (v0) makes of a NaN bound in an integer type: x64's integer indefinite, or 0 (D3D's rule).
    clip_v0_nan_bound: str = "indefinite"
    # How the driver meets its buffers (contract §9; only cases with a layout or on the graph or in-place path).
    #: The order its threads store the output's elements: row-major, reverse, or column-major (first axis fastest).
    write_order: str = "row-major"
    #: What it stores before the values: nothing, or a zero in every output element first (through the layout).
    output_init: str = "none"
    #: In place: read every input, then write (`snapshot`), or read each element's inputs and write its output
    #: before the next element (`element-by-element`: ClipGrad1 aliases an element only to itself).
    in_place_pass: str = "snapshot"
    #: A named mistake (see BUGS); None for a legitimate driver.
    bug: str | None = None

    @property
    def legitimate(self) -> bool:
        return self.bug is None


class SimulatedDriver:
    """An in-process backend that runs a Knobs driver."""

    thread_safe = True

    def __init__(self, knobs: Knobs, trace: list[tuple[str, int]] | None = None) -> None:
        self.knobs = knobs
        self.name = f"simulated:{knobs.name}"
        #: If a list: every element store on a buffer is appended to it, as (buffer, byte position), in order.
        self.trace = trace

    def info(self) -> BackendInfo:
        return BackendInfo(self.name, "test", "simulated driver", HIGHEST, "claims every level")

    def close(self) -> None:
        pass

    def run(self, case: Case) -> Outcome:
        refusal = self._refusal(case)
        if refusal is not None:
            return Outcome.refused(refusal)
        if case.uses_buffers:
            return Outcome.ran_buffers(_run_on_buffers(self.knobs, case, self.trace))
        return Outcome.ran({"OutputGradientTensor": _compute(self.knobs, case.description, case.inputs)})

    def _refusal(self, case: Case) -> str | None:
        bug = self.knobs.bug
        dtype = case.dtype
        if bug == "integer-sums-saturate" and case.op.name in _SUMMING and not dtype.is_float and dtype.bits <= 32:
            return None  # the driver has (saturating) integer paths for the summing operators
        if bug == "clip-refuses-min-above-max" and case.op.name == "ELEMENT_WISE_CLIP_GRAD1":
            params = case.description.params
            if _scalar(params["Min"], dtype.numpy) > _scalar(params["Max"], dtype.numpy):
                return "Min > Max"
        if bug == "clip-v0-refuses-min-above-max" and case.op.name == "ELEMENT_WISE_CLIP_GRAD":
            params = case.description.params
            if float(params["Min"]) > float(params["Max"]):
                return "Min > Max"
        if bug == "slice-accepts-zero-stride" and case.op.name == "SLICE_GRAD" and 0 in \
                case.description.params["InputWindowStrides"]:
            return None
        try:
            case.op.validate(case.description)
        except DescriptionError as exc:
            return str(exc)
        if self.knobs.pool_gradient_size == "refused" and case.op.name == "MAX_POOLING_GRAD" \
                and not _gradient_is_pooled_size(case):
            return "InputGradientTensor.Sizes: not the pooled size"
        if self.knobs.avg_gradient_size == "refused" and case.op.name == "AVERAGE_POOLING_GRAD" \
                and not _avg_windows_fit(case):
            return "InputGradientTensor.Sizes: not the pooled size, or a window larger than the padded input"
        return None


def _gradient_is_pooled_size(case: Case) -> bool:
    p = case.description.params
    x = case.description.tensors["InputTensor"].shape[2:]
    dy = case.description.tensors["InputGradientTensor"].shape[2:]
    return all(dy[d] == (x[d] + p["StartPadding"][d] + p["EndPadding"][d]
                         - ((p["WindowSize"][d] - 1) * p["Dilations"][d] + 1)) // p["Strides"][d] + 1
               for d in range(len(x)))


def _avg_windows_fit(case: Case) -> bool:
    """dY is the pooled size, (In + StartPadding + EndPadding - WindowSize) // Strides + 1, and that is at least 1."""
    p = case.description.params
    dx = case.description.tensors["OutputGradientTensor"].shape[2:]
    dy = case.description.tensors["InputGradientTensor"].shape[2:]
    sizes = [(dx[d] + p["StartPadding"][d] + p["EndPadding"][d] - p["WindowSize"][d]) // p["Strides"][d] + 1
             for d in range(len(dx))]
    return all(size >= 1 and size == dy[d] for d, size in enumerate(sizes))


_SUMMING = ("MAX_POOLING_GRAD", "RESAMPLE_GRAD1", "AVERAGE_POOLING_GRAD", "RESAMPLE_GRAD")


#: _compute's outputs by what they are computed from. A case's graph and in-place runs hand a driver the same logical
#: inputs as its operator run (read through the buffers), and the mutation tests run every case on every path: a
#: driver being a function of its inputs, a hit is what computing again would give. Bounded, the oldest dropped.
_COMPUTED: OrderedDict[tuple, np.ndarray] = OrderedDict()
_COMPUTED_MAX = 4096


def _compute(knobs: Knobs, desc: Description, inputs: Mapping[str, np.ndarray],
             shape: tuple[int, ...] | None = None) -> np.ndarray:
    """The operator's logical output from its logical inputs (`shape`: the output's, if not the description's)."""
    shape = desc.output.shape if shape is None else shape
    key = (knobs, desc.op.name, pickle.dumps(desc.params), shape,
           tuple((name, array.dtype.str, array.shape, array.tobytes()) for name, array in sorted(inputs.items())))
    output = _COMPUTED.get(key)
    if output is None:
        output = _COMPUTED[key] = _compute_afresh(knobs, desc, inputs, shape)
        if len(_COMPUTED) > _COMPUTED_MAX:
            _COMPUTED.popitem(last=False)
    else:
        _COMPUTED.move_to_end(key)
    return output.copy()


def _compute_afresh(knobs: Knobs, desc: Description, inputs: Mapping[str, np.ndarray],
                    shape: tuple[int, ...]) -> np.ndarray:
    output = _OPERATORS[desc.op.name](knobs, desc.params, inputs, shape)
    if knobs.bug == "fp16-denormals-flushed" and output.dtype == np.float16:
        output = np.where(np.abs(output) < np.finfo(np.float16).tiny, np.float16(0), output)
    return output


# -- buffers: layouts, graphs, in place (contract §9) ------------------------------------------------------------
# Written again from the pages, not from dmlconform.surface (which only builds the images the driver is handed):
# element i of a buffer tensor lies at byte Offset + (Σ_k i_k·Strides_k)·element size of its binding's buffer,
# Strides default to packed row-major, and a driver may store nothing but the output's elements.
def _packed(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(math.prod(shape[k + 1:]) for k in range(len(shape)))


def _byte_positions(shape: tuple[int, ...], strides: tuple[int, ...], offset: int, itemsize: int) -> np.ndarray:
    """Where each element's first byte lies in its buffer, elements in row-major order."""
    index = np.indices(shape, dtype=np.int64).reshape(len(shape), -1)
    return offset + index.T.dot(np.asarray(strides, np.int64)) * itemsize


def _write_order(shape: tuple[int, ...], order: str) -> np.ndarray:
    """The row-major numbers of the elements, in the order a driver stores them."""
    numbers = np.arange(math.prod(shape), dtype=np.int64)
    if order == "column-major":  # the first axis fastest
        return numbers.reshape(shape).transpose().reshape(-1)
    if order == "reverse":
        return numbers[::-1]
    return numbers


class _Buffers:
    """The buffers of one dispatch as the driver sees them: bytes it loads from and stores to."""

    def __init__(self, knobs: Knobs, case: Case, trace: list[tuple[str, int]] | None) -> None:
        self.knobs, self.desc, self.binding, self.trace = knobs, case.description, case.binding, trace
        before = images_before(self.desc, self.binding, case.inputs)
        self.raw = {name: bytearray(before[name]) for name in self.binding.buffers()}

    def _where(self, tensor: str, packed: bool) -> tuple[tuple[int, ...], tuple[int, ...], int, np.dtype]:
        desc, layout = self.desc.tensors[tensor], self.desc.layout(tensor)
        strides = layout.strides if layout.strides is not None and not packed else _packed(desc.shape)
        offset = 0 if self.knobs.bug == "layout-offset-ignored" else layout.offset
        return desc.shape, strides, offset, desc.dtype.numpy

    def load(self, tensor: str, buffer: str, packed: bool = False) -> np.ndarray:
        """A tensor's logical elements, read from `buffer` through its layout (`packed`: strides lost)."""
        shape, strides, offset, dtype = self._where(tensor, packed)
        raw = np.frombuffer(self.raw[buffer], np.uint8)
        picks = _byte_positions(shape, strides, offset, dtype.itemsize)[:, None] + np.arange(dtype.itemsize)
        if picks.size and picks.max() >= raw.size:  # a buggy read past the buffer's end reads zeros
            raw = np.concatenate([raw, np.zeros(int(picks.max()) + 1 - raw.size, np.uint8)])
        return raw[picks.reshape(-1)].view(dtype.newbyteorder("<")).astype(dtype).reshape(shape)

    def store(self, tensor: str, buffer: str, values: np.ndarray, packed: bool = False,
              only: np.ndarray | None = None) -> None:
        """Store a tensor's elements into `buffer` through its layout, one element after another in the driver's
        write order (`only`: the row-major element numbers to store, the others left alone)."""
        shape, strides, offset, dtype = self._where(tensor, packed)
        numbers = _write_order(shape, self.knobs.write_order)
        if only is not None:
            numbers = numbers[np.isin(numbers, only)]
        positions = _byte_positions(shape, strides, offset, dtype.itemsize)[numbers]
        data = np.ascontiguousarray(values, dtype=dtype.newbyteorder("<")).reshape(-1)[numbers]
        raw = np.frombuffer(self.raw[buffer], np.uint8)
        for position, value in zip(positions.tolist(), data.view(np.uint8).reshape(-1, dtype.itemsize), strict=True):
            end = min(position + dtype.itemsize, raw.size)  # a buggy store past the buffer's end is lost
            raw[position:end] = value[:end - position]
            if self.trace is not None:
                self.trace.append((buffer, position))

    def zero_binding(self, tensor: str, buffer: str) -> None:
        """`layout-padding-zeroed`: every byte of the binding's TotalTensorSizeInBytes set to 0."""
        desc, layout = self.desc.tensors[tensor], self.desc.layout(tensor)
        strides = layout.strides if layout.strides is not None else _packed(desc.shape)
        footprint = (sum((n - 1) * s for n, s in zip(desc.shape, strides, strict=True)) + 1) * desc.dtype.numpy.itemsize
        total = layout.total_bytes if layout.total_bytes is not None else (footprint + 3) & ~3
        raw = np.frombuffer(self.raw[buffer], np.uint8)
        raw[layout.offset:layout.offset + total] = 0

    def images(self) -> dict[str, bytes]:
        return {name: bytes(image) for name, image in self.raw.items()}


def _run_on_buffers(knobs: Knobs, case: Case, trace: list[tuple[str, int]] | None) -> dict[str, bytes]:
    """Run a case on whole buffers: read each input from its buffer, compute, store each output's elements into
    its buffer (in place: the input's buffer it aliases; on the graph path also the copy between identity nodes)."""
    buffers, desc = _Buffers(knobs, case, trace), case.description
    binding = case.binding
    name = case.op.outputs[0]
    target = binding.aliases.get(name, name)
    packed_inputs = knobs.bug == "layout-input-strides-ignored"
    inputs = {tensor: buffers.load(tensor, tensor, packed_inputs) for tensor in binding.inputs}
    output = _compute(knobs, desc, inputs)
    if knobs.bug == "output-read-before-write" and case.op.name in _SUMMING:
        # Sums added onto what the output's buffer held (canaries), never initialised.
        with np.errstate(over="ignore", invalid="ignore"):
            output = (buffers.load(name, target) + output).astype(output.dtype)
    packed_output = knobs.bug == "layout-output-written-packed"
    if knobs.bug == "layout-padding-zeroed":
        buffers.zero_binding(name, target)
    if knobs.output_init == "zero-elements":
        buffers.store(name, target, np.zeros_like(output), packed_output)
    if case.path is ExecutionPath.IN_PLACE and target != name:
        _store_in_place(knobs, case, buffers, inputs, output, target, packed_output)
    else:
        buffers.store(name, target, output, packed_output)
    if binding.edges:
        copy = output
        if knobs.bug == "graph-edge-strides-lost":  # the copy's operator reads its input edges packed
            copy = _compute(knobs, desc, {tensor: buffers.load(tensor, tensor, packed=True)
                                          for tensor in binding.inputs})
        buffers.store(name, name + EDGES_SUFFIX, copy, packed_output)
    return buffers.images()


#: ClipGrad1 in place processes vectors of this many elements (`in-place-vector-tail-rereads-output`).
_VECTOR = 4


def _store_in_place(knobs: Knobs, case: Case, buffers: _Buffers, inputs: Mapping[str, np.ndarray],
                    output: np.ndarray, target: str, packed: bool) -> None:
    """The output stored over the input it aliases (ClipGrad1's X)."""
    name, desc = case.op.outputs[0], case.description
    if knobs.bug == "in-place-gradient-copied-first":
        # Two passes: dY copied into the output, then the elements whose X is out of range zeroed, reading X from
        # the buffer the copy has just overwritten.
        buffers.store(name, target, inputs["InputGradientTensor"])
        reread = {tensor: buffers.load(tensor, tensor) for tensor in case.binding.inputs}
        buffers.store(name, target, _compute(knobs, desc, reread))
        return
    if knobs.in_place_pass == "element-by-element":
        # Each element's inputs read just before its output is stored over X's element (the same element).
        numbers = _write_order(output.shape, knobs.write_order)
        for number in numbers:
            index = np.unravel_index(int(number), output.shape)
            single = {tensor: buffers.load(tensor, tensor)[index].reshape((1,) * output.ndim)
                      for tensor in case.binding.inputs}
            one = _compute(knobs, desc, single, (1,) * output.ndim).reshape(-1)[0]
            value = np.full(output.shape, one, dtype=output.dtype)
            buffers.store(name, target, value, only=np.array([number]))
        return
    buffers.store(name, target, output, packed)
    size = output.size
    if knobs.bug == "in-place-vector-tail-rereads-output" and size > _VECTOR and size % _VECTOR:
        # The last vector is the last _VECTOR elements: those the vector before it already stored are computed
        # again from X read back from the buffer, which now holds their outputs.
        reread = {tensor: buffers.load(tensor, tensor) for tensor in case.binding.inputs}
        again = _compute(knobs, desc, reread)
        buffers.store(name, target, again, only=np.arange(size - _VECTOR, size - size % _VECTOR))


# -- helpers shared by the operators ---------------------------------------------------------------------------
def _scalar(value: Any, dtype: np.dtype) -> np.generic:
    return np.asarray(value).astype(dtype)[()]


def _flushes(knobs: Knobs, dtype: np.dtype, arithmetic: bool) -> bool:
    if dtype != np.float32:
        return False
    return knobs.fp32_denormals == "flushed" or (knobs.fp32_denormals == "flushed-in-arithmetic" and arithmetic)


def _flush(values: np.ndarray, knobs: Knobs, arithmetic: bool = True) -> np.ndarray:
    """D3D's fp32 denormal rule when flushing: a denormal becomes a zero of its sign. `arithmetic`: the values
    are compared or summed (False where they are only moved)."""
    if not _flushes(knobs, values.dtype, arithmetic):
        return values
    tiny = (values != 0) & (np.abs(values) < np.finfo(np.float32).tiny)
    return np.where(tiny, np.copysign(np.float32(0), values), values).astype(values.dtype)


def _zeros(shape: tuple[int, ...], dtype: np.dtype, knobs: Knobs) -> np.ndarray:
    if knobs.bug == "slice-no-zero-fill":
        return np.frombuffer(b"\xab" * (int(np.prod(shape)) * dtype.itemsize), dtype=dtype).reshape(shape).copy()
    return np.full(shape, knobs.zero if dtype.kind == "f" else 0, dtype=dtype)


def _one_ulp_up(value: np.floating) -> np.floating:
    with np.errstate(over="ignore"):  # the largest finite value steps up to infinity: still a wrong copy
        return np.nextafter(value, value.dtype.type(np.inf))


def _through_float64(values: np.ndarray, knobs: Knobs) -> np.ndarray:
    """The `int64-through-float64` bug: 64-bit integers copied through a double."""
    if knobs.bug == "int64-through-float64" and values.dtype.kind in "iu" and values.dtype.itemsize == 8:
        with np.errstate(over="ignore", invalid="ignore"):
            return values.astype(np.float64).astype(values.dtype)
    return values


def _fp16_result(value: np.floating, terms: Terms, knobs: Knobs) -> np.floating:
    """Bugs in how a float16 result is produced from its sum."""
    if value.dtype != np.float16 or (knobs.bug != "fp16-double-rounding" and knobs.fp16_conversion == "nearest"):
        return value
    if not all(np.isfinite(v) for _, v in terms):
        return value
    exact_sum = exact_total(terms)
    if knobs.bug == "fp16-double-rounding":
        return round_fraction(exact(round_fraction(exact_sum, np.dtype(np.float32))), np.dtype(np.float16))
    # Truncation (round toward zero) never overflows: a sum past the largest fp16 value gives that value.
    nearest = round_fraction(exact_sum, np.dtype(np.float16))
    if not np.isfinite(nearest) or abs(exact(nearest)) > abs(exact_sum):
        return np.nextafter(nearest, np.float16(0))
    return nearest


def _finish_sums(terms_per_element: dict[int, Terms], shape: tuple[int, ...], dtype: np.dtype,
                 knobs: Knobs) -> np.ndarray:
    out = _zeros(shape, dtype, knobs).ravel()
    if knobs.bug == "denormal-where-nothing-lands":
        empty = [i for i in range(out.size) if i not in terms_per_element]
        if empty:
            out[empty[0]] = np.finfo(dtype).smallest_subnormal
    copied_one = False
    for index in sorted(terms_per_element):
        terms = terms_per_element[index]
        if dtype.kind in "iu":  # only a driver that wrongly accepts integer types gets here
            info = np.iinfo(dtype)
            out[index] = min(max(sum(int(v) for _, v in terms), info.min), info.max)
            continue
        value = knobs.summation.total(terms, dtype)
        value = _fp16_result(value, terms, knobs)
        if knobs.bug == "one-ulp-on-a-copy" and not copied_one and len(terms) == 1 and weight_value(terms[0][0]) == 1 \
                and np.isfinite(value) and value != 0:
            value, copied_one = _one_ulp_up(value), True
        out[index] = value
    return _flush(out.reshape(shape), knobs)


# -- ACTIVATION_RELU_GRAD ----------------------------------------------------------------------------------------
def relu_grad(knobs: Knobs, params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
              shape: tuple[int, ...]) -> np.ndarray:
    x, dy = _flush(inputs["InputTensor"], knobs), _flush(inputs["InputGradientTensor"], knobs, arithmetic=False)
    x, dy = _through_float64(x, knobs), _through_float64(dy, knobs)
    out = _zeros(shape, dy.dtype, knobs)
    zero = out.dtype.type(knobs.zero if out.dtype.kind == "f" else 0)
    for i in np.ndindex(shape):
        xi, gi = x[i], dy[i]
        if knobs.bug == "relu-ge":
            keep = xi >= 0
        elif knobs.bug == "relu-reads-gradient":
            keep = gi > 0
        elif knobs.relu_nan == "nan-passes":
            keep = not xi <= 0
        else:
            keep = xi > 0
        if knobs.bug == "relu-multiplies-by-mask":
            with np.errstate(invalid="ignore"):
                out[i] = gi * out.dtype.type(keep)
        elif knobs.bug == "relu-nan-gives-nan" and out.dtype.kind == "f" and np.isnan(xi):
            out[i] = out.dtype.type(np.nan)
        else:
            out[i] = gi if keep else zero
    if knobs.bug == "one-ulp-on-a-copy":
        _bump_first_copy(out)
    return _flush(out, knobs, arithmetic=knobs.bug == "relu-multiplies-by-mask")


def _bump_first_copy(out: np.ndarray) -> None:
    flat = out.reshape(-1)
    for j in range(flat.size):
        if out.dtype.kind == "f" and np.isfinite(flat[j]) and flat[j] != 0:
            flat[j] = _one_ulp_up(flat[j])
            return


# -- ELEMENT_WISE_CLIP_GRAD1 -------------------------------------------------------------------------------------
def clip_grad1(knobs: Knobs, params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
               shape: tuple[int, ...]) -> np.ndarray:
    x, dy = _flush(inputs["InputTensor"], knobs), _flush(inputs["InputGradientTensor"], knobs, arithmetic=False)
    dy = _through_float64(dy, knobs)
    # Min and Max are compared as X is: a flush of the comparison's inputs flushes them too.
    low, high = (_flush(np.asarray(_scalar(params[n], x.dtype)), knobs)[()] for n in ("Min", "Max"))
    if knobs.bug == "clip-min-max-swapped":
        low, high = high, low
    if knobs.bug == "clip-compares-in-float32":
        x, low, high = x.astype(np.float32), np.float32(low), np.float32(high)
    if knobs.bug == "int64-through-float64" and x.dtype.kind in "iu" and x.dtype.itemsize == 8:
        x, low, high = x.astype(np.float64), np.float64(low), np.float64(high)
    out = _zeros(shape, dy.dtype, knobs)
    zero = out.dtype.type(knobs.zero if out.dtype.kind == "f" else 0)
    for i in np.ndindex(shape):
        xi = x[i]
        below = xi < low if knobs.bug in ("clip-passes-at-min", "clip-passes-at-bounds") else xi <= low
        above = xi > high if knobs.bug in ("clip-passes-at-max", "clip-passes-at-bounds") else xi >= high
        keep = (xi > low) & (xi < high) if knobs.clip_nan == "nan-zero" else not (below or above)
        if knobs.bug == "clip-nan-gives-max" and out.dtype.kind == "f" and np.isnan(xi):
            out[i] = out.dtype.type(high)  # the select's seed, which no branch overwrites at NaN
            continue
        out[i] = dy[i] if keep else zero
    return _flush(out, knobs, arithmetic=False)


# -- ELEMENT_WISE_CLIP_GRAD (v0) --------------------------------------------------------------------------------
#: What x64's conversion makes of a NaN bound, as DirectML 1.15.4 was measured (examples/dml_harness/investigate/
#: clip_grad_bounds.py): INT32 through a 32-bit register, UINT32 and the 64-bit types through a 64-bit one, each
#: giving the sign bit alone ("integer indefinite"), cut to the type; the narrower types keep none of it.
_V0_NAN_AS = {np.dtype(np.int32): -(2**31), np.dtype(np.int64): -(2**63), np.dtype(np.uint64): 2**63}


def _v0_integer_bound(knobs: Knobs, bound: float, dtype: np.dtype) -> Fraction | None:
    """A FLOAT bound as an integer X meets it; None where the compare is with NaN (false whatever X is)."""
    info = np.iinfo(dtype)
    way = knobs.clip_v0_bounds
    if knobs.bug == "clip-v0-bound-bits-reinterpreted":  # the float's bits read as the type, zero-extended
        bits = int(np.array(bound, np.float32).view(np.uint32)).to_bytes(8, "little")
        return Fraction(int(np.frombuffer(bits[:dtype.itemsize], dtype.newbyteorder("<"))[0]))
    if knobs.bug == "clip-v0-bound-cast-unclamped":  # x86's cast: out of range gives the integer indefinite
        wide = 64 if dtype.itemsize == 8 or dtype == np.uint32 else 32
        whole = -(2 ** (wide - 1)) if math.isnan(bound) or not -(2 ** (wide - 1)) <= bound < 2 ** (wide - 1) \
            else math.trunc(bound)
        whole %= 2 ** (8 * dtype.itemsize)
        if info.min < 0 and whole >= 2 ** (8 * dtype.itemsize - 1):
            whole -= 2 ** (8 * dtype.itemsize)
        return Fraction(whole)
    if way in ("exact", "x-in-float32", "x-in-float64"):  # the bound as a number (an infinity stays a float)
        if math.isnan(bound):
            return None
        return exact(bound) if math.isfinite(bound) else bound  # type: ignore[return-value]
    if math.isnan(bound):
        return Fraction(_V0_NAN_AS.get(dtype, 0) if knobs.clip_v0_nan_bound == "indefinite" else 0)
    if math.isinf(bound):
        return Fraction(int(info.max) if bound > 0 else int(info.min))
    value = exact(bound)
    if way == "rounded":
        whole = round(value)  # Fraction rounds half to even
    elif way == "rounded-away":
        whole = math.floor(abs(value) + Fraction(1, 2)) * (1 if value >= 0 else -1)
    else:
        whole = math.trunc(value)
    return Fraction(min(max(whole, int(info.min)), int(info.max)))


def _v0_integer_x(knobs: Knobs, value: int, dtype: np.dtype) -> Fraction:
    if knobs.bug == "clip-v0-low-words" and dtype.itemsize == 8:
        low = value & 0xFFFFFFFF
        return Fraction(low - 2**32 if dtype.kind == "i" and low >= 2**31 else low)
    if knobs.clip_v0_bounds in ("x-in-float32", "x-in-float64"):
        return exact(round_fraction(Fraction(value), np.dtype(np.float32 if knobs.clip_v0_bounds == "x-in-float32"
                                                              else np.float64)))
    return Fraction(value)


def _v0_half_bound(knobs: Knobs, bound: float) -> float:
    """A FLOAT bound as a FLOAT16 X meets it (a Python float, exact)."""
    way = knobs.clip_v0_bounds
    if knobs.bug == "clip-v0-bound-bits-reinterpreted":
        return float(np.array([int(np.array(bound, np.float32).view(np.uint32)) & 0xFFFF], np.uint16).view(
            np.float16)[0])
    if math.isnan(bound) or way in ("exact", "x-in-float32", "x-in-float64"):
        return bound
    top = 65504.0
    if way == "half-toward-zero":  # toward zero, a finite bound past the range at ±65504
        if math.isinf(bound):
            return bound
        nearest = round_fraction(exact(bound), np.dtype(np.float16))
        if not np.isfinite(nearest) or abs(exact(nearest)) > abs(exact(bound)):
            nearest = np.nextafter(nearest, np.float16(0))
        return float(nearest)
    if way != "half-overflowing":
        bound = min(max(bound, -top), top)
    if math.isinf(bound):
        return bound
    return float(round_fraction(exact(bound), np.dtype(np.float16)))


def _v0_order(value: Fraction | float, bound: Fraction | float | None) -> int | None:
    """-1, 0 or 1 as value is below, at or above the bound; None where either is NaN (no comparison holds)."""
    if bound is None or any(isinstance(v, float) and math.isnan(v) for v in (value, bound)):
        return None
    return int(value > bound) - int(value < bound)


def clip_grad(knobs: Knobs, params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
              shape: tuple[int, ...]) -> np.ndarray:
    """dX = X <= Min or X >= Max ? 0 : dY, Min and Max DML FLOATs, element by element in exact arithmetic."""
    x, dy = _flush(inputs["InputTensor"], knobs), _flush(inputs["InputGradientTensor"], knobs, arithmetic=False)
    dy = _through_float64(dy, knobs)
    low, high = (float(_flush(np.asarray(np.float32(params[n])), knobs)[()]) for n in ("Min", "Max"))
    if knobs.bug == "clip-v0-min-max-swapped":
        low, high = high, low
    dtype = x.dtype
    if dtype.kind in "iu":
        lo, hi = _v0_integer_bound(knobs, low, dtype), _v0_integer_bound(knobs, high, dtype)
    elif dtype == np.float16:
        lo, hi = _v0_half_bound(knobs, low), _v0_half_bound(knobs, high)
    else:
        lo, hi = low, high
    out = _zeros(shape, dy.dtype, knobs)
    zero = out.dtype.type(knobs.zero if out.dtype.kind == "f" else 0)
    at_bounds_pass = knobs.bug == "clip-v0-passes-at-bounds"
    for i in np.ndindex(shape):
        value = _v0_integer_x(knobs, int(x[i]), dtype) if dtype.kind in "iu" else float(x[i])
        nan = isinstance(value, float) and math.isnan(value)
        to_lo, to_hi = _v0_order(value, lo), _v0_order(value, hi)
        if knobs.clip_nan == "nan-zero":  # Min < X < Max ? dY : 0
            keep = to_lo is not None and to_hi is not None and (to_lo > 0 or (at_bounds_pass and to_lo == 0)) and (
                to_hi < 0 or (at_bounds_pass and to_hi == 0))
        else:  # the page's X <= Min or X >= Max ? 0 : dY
            zeroed = (to_lo is not None and (to_lo < 0 or (to_lo == 0 and not at_bounds_pass))) or (
                to_hi is not None and (to_hi > 0 or (to_hi == 0 and not at_bounds_pass)))
            keep = not zeroed
        if knobs.bug == "clip-v0-nan-gives-max" and nan:
            out[i] = out.dtype.type(high)  # the select's seed, which no branch overwrites at NaN
        elif knobs.bug == "clip-v0-multiplies-by-mask":
            with np.errstate(invalid="ignore"):
                out[i] = dy[i] * out.dtype.type(keep)
        else:
            out[i] = dy[i] if keep else zero
    if knobs.bug == "one-ulp-on-a-copy":
        _bump_first_copy(out)
    return _flush(out, knobs, arithmetic=knobs.bug == "clip-v0-multiplies-by-mask")


# -- SLICE_GRAD --------------------------------------------------------------------------------------------------
def slice_grad(knobs: Knobs, params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
               shape: tuple[int, ...]) -> np.ndarray:
    dy = _through_float64(inputs["InputGradientTensor"], knobs)
    out = _zeros(shape, dy.dtype, knobs)
    offsets, sizes, strides = (params[n] for n in ("InputWindowOffsets", "InputWindowSizes", "InputWindowStrides"))
    if knobs.bug == "slice-merges-whole-axes":
        _scatter_merged(dy, out, list(offsets), list(sizes), list(strides))
        return out
    for c in np.ndindex(dy.shape):
        target: list[list[int]] = []
        for d, (offset, size, stride) in enumerate(zip(offsets, sizes, strides, strict=True)):
            if knobs.bug == "slice-single-element-window-spread" and size >= 2 and abs(stride) >= size:
                # MLX: the singleton axis kept stride 1 but not the narrowed stop, so the gradient's region is the
                # whole span [start, stop), empty where the stride was negative (stop below start).
                target.append(list(range(offset, offset + size)) if stride > 0 else [])
                continue
            if knobs.bug == "slice-negative-stride-starts-at-offset" or (knobs.bug == "slice-ignores-stride-sign"):
                start = offset
            else:
                start = offset if stride > 0 else offset + size - 1
            step = abs(stride) if knobs.bug == "slice-ignores-stride-sign" else stride
            if knobs.bug == "slice-accepts-zero-stride" and step == 0:
                step = 1
            position = start + step * c[d]
            if knobs.bug == "slice-offset-off-by-one":
                position += 1
            target.append([position % shape[d]])
        for place in itertools.product(*target):
            out[place] = dy[c]
    if knobs.bug == "one-ulp-on-a-copy":
        _bump_first_copy(out)
    return out


def _scatter_merged(dy: np.ndarray, out: np.ndarray, offsets: list[int], sizes: list[int], strides: list[int]
                    ) -> None:
    """DirectML 1.15.4's SliceGrad (examples/dml_harness/investigate/slice_grad_merged_axes.py, which reproduces
    its outputs bit for bit): an axis read whole, forwards, one by one is merged into its outer neighbour when that
    one is read forwards one by one too, and the gradient is read as if it were contiguous across the two."""
    dy_sizes, dx_sizes = list(dy.shape), list(out.shape)
    axis = len(dx_sizes) - 1
    while axis > 0:
        whole = offsets[axis] == 0 and sizes[axis] == dx_sizes[axis] and strides[axis] == 1
        if whole and strides[axis - 1] == 1:
            offsets[axis - 1] *= dx_sizes[axis]
            sizes[axis - 1] *= dx_sizes[axis]
            dx_sizes[axis - 1] *= dx_sizes[axis]
            dy_sizes[axis - 1] *= dy_sizes[axis]
            for values in (dy_sizes, dx_sizes, offsets, sizes, strides):
                del values[axis]
        axis -= 1
    merged_out, merged_dy = out.reshape(dx_sizes), dy.reshape(dy_sizes)  # out is contiguous: a view
    for c in np.ndindex(*dy_sizes):
        merged_out[tuple((offset if stride > 0 else offset + size - 1) + stride * i
                         for offset, size, stride, i in zip(offsets, sizes, strides, c, strict=True))] = merged_dy[c]


# -- MAX_POOLING_GRAD --------------------------------------------------------------------------------------------
def _window_taps(knobs: Knobs, o: tuple[int, ...], params: Mapping[str, Any], spatial: tuple[int, ...]
                 ) -> Iterator[tuple[tuple[int, ...], bool]]:
    """Each tap of window `o` in row-major order: its position and whether it lies inside the input."""
    strides = list(params["Strides"])
    if knobs.bug == "pool-strides-swapped-between-axes":
        strides = strides[::-1]
    dilations = [1] * len(spatial) if knobs.bug == "pool-dilation-ignored" else list(params["Dilations"])
    if knobs.bug == "pool-dilation-off-by-one":  # oneDNN counts dilation from 0: ONNX's 1 passed as is spaces taps by 2
        dilations = [d + 1 for d in dilations]
    start = [0] * len(spatial) if knobs.bug == "pool-start-padding-ignored" else params["StartPadding"]
    for k in itertools.product(*(range(w) for w in params["WindowSize"])):
        p = tuple(o[d] * strides[d] - start[d] + k[d] * dilations[d] for d in range(len(spatial)))
        inside = all(0 <= p[d] < spatial[d] for d in range(len(spatial)))
        if knobs.bug == "pool-negative-tap-wraps" and all(-spatial[d] <= p[d] < spatial[d] for d in range(len(p))):
            p, inside = tuple(p[d] % spatial[d] for d in range(len(p))), True
        yield p, inside


def _better(v: np.floating, best: np.floating | None, knobs: Knobs) -> bool:
    if best is None:
        return True
    if knobs.bug == "pool-ties-go-to-last":
        return bool(v >= best) or (knobs.pool_nan != "nan-sticks" and bool(np.isnan(v)))
    rule = knobs.pool_nan
    if rule == "nan-wins":
        return bool(v > best) or (bool(np.isnan(v)) and not bool(np.isnan(best)))
    if rule == "nan-wins-last":
        return bool(v > best) or bool(np.isnan(v))
    if rule == "nan-ignored":
        return bool(v > best) or (bool(np.isnan(best)) and not bool(np.isnan(v)))
    return bool(v > best)


def max_pooling_grad(knobs: Knobs, params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
                     shape: tuple[int, ...]) -> np.ndarray:
    x, dy = (_flush(inputs[n], knobs) for n in ("InputTensor", "InputGradientTensor"))
    spatial = x.shape[2:]
    windows = dy.shape[2:]
    if knobs.bug in ("pool-end-padding-ignored", "pool-gradient-beyond-pooled-size-ignored"):
        end = [0] * len(spatial) if knobs.bug == "pool-end-padding-ignored" else params["EndPadding"]
        windows = tuple(min(windows[d], max(0, (spatial[d] + params["StartPadding"][d] + end[d]
                                                 - ((params["WindowSize"][d] - 1) * params["Dilations"][d] + 1))
                                           // params["Strides"][d] + 1)) for d in range(len(spatial)))
    terms: dict[int, Terms] = {}
    with np.errstate(invalid="ignore"):
        for n, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
            for o in itertools.product(*(range(w) for w in windows)):
                winner, best = None, None
                first_tap = None
                taps = list(_window_taps(knobs, o, params, spatial))
                for p, inside in taps:
                    first_tap = p if first_tap is None else first_tap
                    if not inside and knobs.bug != "pool-padding-competes":
                        continue
                    value = x[(n, c, *p)] if inside else x.dtype.type(0)
                    if _better(value, best, knobs):
                        winner, best = (p if inside else None), value
                if winner is None and knobs.pool_padding_only == "edge-clamped" and first_tap is not None \
                        and best is None:
                    winner = tuple(min(max(first_tap[d], 0), spatial[d] - 1) for d in range(len(spatial)))
                winners = _buggy_winners(knobs, x, (n, c), taps, winner, best)
                for chosen in winners:
                    flat = int(np.ravel_multi_index((n, c, *chosen), x.shape))
                    term = ((Fraction(1),), dy[(n, c, *o)])
                    if knobs.bug == "pool-overlaps-overwrite":
                        terms[flat] = [term]
                    else:
                        terms.setdefault(flat, []).append(term)
    out = _finish_sums(terms, shape, dy.dtype, knobs)
    if knobs.bug == "pool-accumulates-onto-stale-output":
        with np.errstate(over="ignore", invalid="ignore"):
            out = (out + out.dtype.type(_STALE)).astype(out.dtype)
    return out


_WINNER_BUGS = ("pool-max-starts-at-flt-max", "pool-lowest-window-loses-gradient", "pool-ties-all-receive")
#: What `pool-accumulates-onto-stale-output` finds in the output buffer (ExecuTorch's regression test fills it so).
_STALE = 999.0


def _buggy_winners(knobs: Knobs, x: np.ndarray, plane: tuple[int, int], taps: list[tuple[tuple[int, ...], bool]],
                   winner: tuple[int, ...] | None, best: np.floating | None) -> list[tuple[int, ...]]:
    """The taps that receive a window's gradient: the scan's winner, or what a real implementation's bug picked.
    For Theano's bug a window holding a NaN keeps the scan's pick (what Theano did there is unknown, and a driver
    killed only there would prove nothing about the bug)."""
    if knobs.bug not in _WINNER_BUGS:
        return [] if winner is None else [winner]
    values = [(p, x[(*plane, *p)]) for p, inside in taps if inside]
    if knobs.bug == "pool-max-starts-at-flt-max" and values:
        # DirectML 1.15.4: a running maximum that starts at -FLT_MAX on the window's first tap, moved on a strict `>`
        # (NaN never moves it: with a value above -FLT_MAX it reads as `nan-ignored`, with none it keeps the first tap,
        # which no NaN reading picks unless that tap is the NaN).
        pick, running = values[0][0], -float(np.finfo(np.float32).max)
        for p, v in values:
            if float(v) > running:
                pick, running = p, float(v)
        return [pick]
    if knobs.bug == "pool-lowest-window-loses-gradient":
        # PyTorch before #7670 and #23161: the maximum starts at the lowest finite value with index -1, which the
        # backward skips; NaN never moves it (a NaN window with a value above it reads as `nan-ignored`).
        pick, running = None, float(np.finfo(x.dtype).min)
        for p, v in values:
            if float(v) > running:
                pick, running = p, float(v)
        return [] if pick is None else [pick]
    if knobs.bug == "pool-ties-all-receive" and winner is not None and best is not None and not np.isnan(best) \
            and not any(np.isnan(v) for _, v in values):
        return [p for p, v in values if v == best]  # Theano's CPU pooling: every element equal to the maximum
    return [] if winner is None else [winner]


# -- AVERAGE_POOLING_GRAD ----------------------------------------------------------------------------------------
def _avg_divisor(knobs: Knobs, positions: list[range], spatial: tuple[int, ...], start: list[int], end: list[int],
                 include: bool) -> int:
    """The window's divisor, from its positions along each axis: what counts of them, multiplied over the axes."""
    def counted(low: list[int], high: list[int]) -> int:
        return math.prod(sum(1 for p in axis if lo <= p < hi) for axis, lo, hi in zip(positions, low, high,
                                                                                      strict=True))

    full = math.prod(len(axis) for axis in positions)
    inside = counted([0] * len(spatial), list(spatial))
    bug = knobs.bug
    if bug == "avgpool-divisor-ignores-include-padding" or (
            bug == "avgpool-padding-counted-when-excluded" and not include and start != end):
        return full
    if not include:
        return inside
    low = [-a for a in start]
    if bug == "avgpool-end-padding-dropped":  # the padded input taken as [-StartPadding, In)
        return counted(low, list(spatial))
    if bug == "avgpool-end-padding-of-another-axis":
        # ONNX Runtime's pool_functors.h before #27375: the 2-D end clamp of H used W's start pad (pads[1]); in 3-D,
        # H's used W's start pad and W's used H's end pad (DML axes: 0 = H, 1 = W, 2 = D in ORT's order).
        wrong = [start[1], end[1]] if len(spatial) == 2 else [start[1], end[0], end[2]]
        return counted(low, [n + e for n, e in zip(spatial, wrong, strict=True)])
    reading = knobs.avg_divisor
    if reading == "full-window":
        return full
    if reading == "in-bounds-overhang":
        past = any(axis[-1] >= n + e for axis, n, e in zip(positions, spatial, end, strict=True))
        return inside if past else full
    tail = start if reading == "end-padding-as-start" else end
    return counted(low, [n + t for n, t in zip(spatial, tail, strict=True)])


def _two_ulp(value: np.floating, low: bool) -> np.floating:
    toward = value.dtype.type(0.0) if low else value.dtype.type(np.copysign(np.inf, value))
    return np.nextafter(np.nextafter(value, toward), toward)


def _avg_quotient(knobs: Knobs, dy: np.floating, divisor: int) -> tuple[Weight, np.floating]:
    """The term dy / divisor as (weight, value) for `_finish_sums`."""
    if knobs.bug == "avgpool-not-divided":
        return (Fraction(1),), dy
    if knobs.avg_division == "weight" or divisor == 1 or not np.isfinite(dy):
        return (Fraction(1, divisor),), dy
    exact_q = exact(dy) / divisor
    q = round_fraction(exact_q, np.dtype(np.float32))
    if exact(q) != exact_q:  # an inexact quotient: where D3D's 2.5-ULP division may land
        q = _two_ulp(q, knobs.avg_division == "low")
    work = np.dtype(np.float32) if knobs.summation.accumulate in ("float32", "exact") else dy.dtype
    return (Fraction(1),), round_fraction(exact(q), work)


def average_pooling_grad(knobs: Knobs, params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
                         shape: tuple[int, ...]) -> np.ndarray:
    """dX[x] = Σ over the windows o covering x of dY[o] / divisor(o); window o covers o·Strides − StartPadding + k,
    k < WindowSize, per axis (the page, and its forward's)."""
    dy = _flush(inputs["InputGradientTensor"], knobs)
    spatial = tuple(shape[2:])
    strides, window = list(params["Strides"]), list(params["WindowSize"])
    start, end = list(params["StartPadding"]), list(params["EndPadding"])
    include = bool(params["IncludePadding"]) != (knobs.bug == "avgpool-include-padding-inverted")
    offsets = [0] * len(spatial) if knobs.bug == "avgpool-start-padding-ignored" else start
    windows = dy.shape[2:]
    if knobs.bug == "avgpool-gradient-beyond-pooled-size-ignored":
        windows = tuple(min(o, max(0, (n + a + e - k) // s + 1)) for o, n, a, e, k, s in
                        zip(windows, spatial, start, end, window, strides, strict=True))
    overwrite = knobs.bug == "avgpool-3d-overlaps-overwrite" and len(spatial) == 3
    terms: dict[int, Terms] = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        for n, c in itertools.product(range(shape[0]), range(shape[1])):
            for o in itertools.product(*(range(w) for w in windows)):
                positions = [range(o[d] * strides[d] - offsets[d], o[d] * strides[d] - offsets[d] + window[d])
                             for d in range(len(spatial))]
                inside = [[p for p in axis if 0 <= p < spatial[d]] for d, axis in enumerate(positions)]
                gradient = dy[(n, c, *o)]
                if not all(inside):
                    if knobs.bug == "avgpool-padding-window-clamped":
                        # The window's taps clamped into the input, divided by its count of input positions (0).
                        nearest = tuple(min(max(axis[0], 0), spatial[d] - 1) for d, axis in enumerate(positions))
                        flat = int(np.ravel_multi_index((n, c, *nearest), shape))
                        terms.setdefault(flat, []).append(((Fraction(1),), gradient / gradient.dtype.type(0)))
                    continue
                divisor = _avg_divisor(knobs, positions, spatial, start, end, include)
                if divisor == 0:
                    continue
                term = _avg_quotient(knobs, gradient, divisor)
                for place in itertools.product(*inside):
                    flat = int(np.ravel_multi_index((n, c, *place), shape))
                    if overwrite:
                        terms[flat] = [term]
                    else:
                        terms.setdefault(flat, []).append(term)
    return _finish_sums(terms, shape, dy.dtype, knobs)


# -- RESAMPLE_GRAD1 ----------------------------------------------------------------------------------------------
def _coordinate(knobs: Knobs, o: int, scale: float, ipo: float, opo: float, n_in: int, n_out: int,
                mode: str) -> float:
    """The forward's source coordinate for output `o`, as the driver computes it (float32 by the contract)."""
    f = np.float64 if knobs.bug == "resample-coordinate-in-float64" else np.float32
    if knobs.bug == "resample-offsets-ignored":
        ipo = opo = 0.0
    if knobs.bug == "resample-offset-signs-flipped":
        ipo, opo = -ipo, -opo
    if knobs.bug == "resample-scale-from-sizes":
        scale = n_out / n_in
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if knobs.bug == "resample-scale-inverted":
            x = (f(o) - f(opo)) * f(scale) - f(ipo)
        elif knobs.bug == "resample-half-pixel-off":
            x = (f(o) + f(0.5) - f(opo)) / f(scale) - f(0.5) - f(ipo)
        elif knobs.coordinates == "reciprocal" or (knobs.coordinates == "linear-reciprocal-1-ulp"
                                                    and mode == "LINEAR"):
            r = f(1) / f(scale)  # (o − OPO)·(1/S) − IPO, 1/S a float32 constant
            if knobs.coordinates == "linear-reciprocal-1-ulp" and not inverts_exactly(scale):
                r = np.nextafter(r, f(np.inf))  # D3D's reciprocal is 1 ULP: one ULP high where 1/S rounds
            x = (f(o) - f(opo)) * r - f(ipo)
        elif knobs.coordinates in ("division-low", "division-high") and np.isfinite(f(scale)) \
                and np.isfinite(f(opo)):
            # D3D allows a float32 division 2.5 ULP: an inexact quotient 2 ULP from the nearest float32, toward
            # zero or away; an exact one exact (as both real stacks keep it).
            shifted = f(o) - f(opo)
            quotient = exact(shifted) / exact(f(scale))
            q = round_fraction(quotient, np.dtype(np.float32))
            if exact(q) != quotient:
                toward = f(0) if knobs.coordinates == "division-low" else f(np.inf) * np.sign(q)
                q = np.nextafter(np.nextafter(q, toward), toward)
            x = q - f(ipo)
        elif knobs.coordinates == "folded":  # o·(1/S) − (OPO·(1/S) + IPO): offsets folded into one bias
            r = f(1) / f(scale)
            x = f(o) * r - (f(opo) * r + f(ipo))
        elif knobs.coordinates == "divided-bias":  # o/S − (OPO/S + IPO)
            x = f(o) / f(scale) - (f(opo) / f(scale) + f(ipo))
        else:
            x = (f(o) - f(opo)) / f(scale) - f(ipo)
    return float(x)


def _axis_taps(knobs: Knobs, x: float, n_in: int, mode: str, rounding: str) -> list[tuple[int, Fraction]]:
    """The forward's taps along one axis for coordinate x: (input index, weight), clamped to the edge."""
    if not np.isfinite(x):  # an infinite coordinate (an infinite scale or offset) is beyond an edge;
        x = 0.0 if np.isnan(x) else min(max(x, -1.0), float(n_in))  # a buggy NaN one lands somewhere

    def clamp(i: int) -> int | None:
        if knobs.bug == "resample-edge-taps-dropped" and not 0 <= i < n_in:
            return None
        return min(max(i, 0), n_in - 1)

    if mode == "NEAREST_NEIGHBOR":
        if knobs.bug in ("resample-nearest-rounds-half-even", "resample-v0-nearest-rounds-half-to-even"):
            pick = int(np.rint(x))
        elif rounding == V0:  # ResampleGrad (v0): round half up
            if knobs.bug == "resample-v0-nearest-floors":
                pick = math.floor(x)
            elif knobs.v0_half == "float32-sum":
                pick = math.floor(np.float32(x) + np.float32(0.5))
            else:
                pick = math.floor(exact(x) + Fraction(1, 2))
        elif rounding == V0_FOLDED:  # the half already in the coordinate
            pick = math.floor(x)
        else:
            increasing = rounding == "INCREASING"
            if knobs.bug == "resample-rounding-swapped":
                increasing = not increasing
            pick = int(np.ceil(x)) if increasing else int(np.floor(x))
        index = clamp(pick)
        return [] if index is None else [(index, Fraction(1))]
    low = int(np.floor(x))
    t = exact(x) - low
    weights = (t, 1 - t) if knobs.bug == "resample-linear-weights-swapped" else (1 - t, t)
    taps = []
    for position, weight in zip((low, low + 1), weights, strict=True):
        index = clamp(position)
        if index is not None and (weight != 0 or knobs.zero_weight_taps == "read"):
            taps.append((index, weight))
    return taps


def _real_bug_taps(knobs: Knobs, o: int, scale: float, ipo: float, opo: float, n_in: int, n_out: int, mode: str,
                   rounding: str, taps: list[tuple[int, Fraction]]) -> list[tuple[int, Fraction]]:
    """The taps of output `o` along one axis as real implementations with a bug computed them (`taps`: as the
    driver would otherwise). Exact arithmetic on the float32 parameters: what each bug changes is which element is
    reached, not how a coordinate rounds."""
    bug = knobs.bug
    params = tuple(np.float32(v) for v in (scale, ipo, opo))
    if bug not in _RESAMPLE_REAL_BUGS or not all(np.isfinite(v) for v in params) or params[0] == 0:
        return taps
    s, i_off, o_off = (exact(v) for v in params)
    if bug == "resample-nearest-inverse-window-floored" and mode == "NEAREST_NEIGHBOR" and rounding == "DECREASING":
        # PyTorch's CUDA backward before #39055 gathered into input i the outputs o with floor((i + IPO)·S + OPO)
        # <= o < floor((i + 1 + IPO)·S + OPO): floor where the forward's inverse needs ceil. Output o lands on the
        # largest such i; nothing gathers an output whose i falls outside the input.
        pick = math.ceil((o + 1 - o_off) / s - i_off) - 1
        return [(pick, Fraction(1))] if 0 <= pick < n_in else []
    if bug == "resample-nearest-integer-ratio-floors" and mode == "NEAREST_NEIGHBOR" and i_off == 0 and o_off == 0 \
            and n_out % n_in == 0:
        # TVM's resize before #18838: where the output is k times the input (asymmetric offsets), the coordinate is an
        # integer division o // k, whatever the rounding direction (and the scale) asks.
        return [(min(o // (n_out // n_in), n_in - 1), Fraction(1))]
    if bug == "resample-gather-window-five-outputs" and mode == "LINEAR":
        # FlagGems' upsample_linear1d_backward: input i gathers only the outputs within 2 of floor(its centre
        # (i + IPO)·S + OPO); a tap from any farther output is dropped.
        return [(i, w) for i, w in taps if abs(o - math.floor((i + i_off) * s + o_off)) <= 2]
    return taps


_RESAMPLE_REAL_BUGS = ("resample-nearest-inverse-window-floored", "resample-nearest-integer-ratio-floors",
                       "resample-gather-window-five-outputs")


def resample_grad1(knobs: Knobs, params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
                   shape: tuple[int, ...]) -> np.ndarray:
    dy = _flush(inputs["InputGradientTensor"], knobs)
    mode, rounding = params["InterpolationMode"], params.get("RoundingDirection", V0)
    scales = list(params["Scales"])
    ipo, opo = list(params["InputPixelOffsets"]), list(params["OutputPixelOffsets"])
    if knobs.resample_offsets == "swapped":
        ipo, opo = opo, ipo
    if knobs.bug == "resample-axes-reversed":
        scales, ipo, opo = scales[::-1], ipo[::-1], opo[::-1]
    if rounding == V0 and ((mode == "NEAREST_NEIGHBOR" and knobs.v0_half == "folded")
                           or (mode == "LINEAR" and knobs.bug == "resample-v0-half-in-linear-too")):
        # Resample1 as Resample2 DECREASING with the input offsets half a pixel lower, in float32 (for LINEAR too,
        # the bug).
        ipo = [float(np.float32(i) - np.float32(0.5)) for i in ipo]
        rounding = V0_FOLDED
    per_axis = []
    for a, (n_in, n_out) in enumerate(zip(shape, dy.shape, strict=True)):
        per_axis.append([_real_bug_taps(knobs, o, scales[a], ipo[a], opo[a], n_in, n_out, mode, rounding,
                                        _axis_taps(knobs, _coordinate(knobs, o, scales[a], ipo[a], opo[a], n_in,
                                                                      n_out, mode), n_in, mode, rounding))
                         for o in range(n_out)])
    terms: dict[int, Terms] = {}
    strides = _packed(shape)  # the row-major element number of a tap: Σ index·stride (every index is in range)
    for o in np.ndindex(dy.shape):
        value = dy[o]
        for combination in itertools.product(*(per_axis[a][o[a]] for a in range(len(shape)))):
            weight = tuple(w for _, w in combination)
            flat = sum(i * stride for (i, _), stride in zip(combination, strides, strict=True))
            terms.setdefault(flat, []).append((weight, value))
    return _finish_sums(terms, shape, dy.dtype, knobs)


#: ResampleGrad (v0)'s rounding "direction": none in its struct; DirectML rounds half up (measured, 1.8.0 to 1.15.4:
#: examples/dml_harness/investigate/resample_grad_readings.md). V0_FOLDED: the half folded into the coordinate.
V0, V0_FOLDED = "v0-round-half-up", "v0-folded"
#: ResampleGrad1's simulated bugs a ResampleGrad (v0) driver has the same way, named `resample-v0-<name>`.
_V0_SHARED_BUGS = ("offsets-ignored", "scale-inverted", "edge-taps-dropped", "half-pixel-off",
                   "nearest-integer-ratio-floors")


def resample_grad(knobs: Knobs, params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
                  shape: tuple[int, ...]) -> np.ndarray:
    """ResampleGrad (v0): ResampleGrad1's loops with Resample1's NEAREST_NEIGHBOR rule, floor(x + 0.5), in place of a
    RoundingDirection; a shared bug runs as ResampleGrad1's of that name."""
    bug = knobs.bug or ""
    if bug.startswith("resample-v0-") and bug.removeprefix("resample-v0-") in _V0_SHARED_BUGS:
        knobs = replace(knobs, bug=bug.replace("resample-v0-", "resample-"))
    return resample_grad1(knobs, {k: v for k, v in params.items() if k != "RoundingDirection"}, inputs, shape)


_OPERATORS = {
    "ACTIVATION_RELU_GRAD": relu_grad,
    "ELEMENT_WISE_CLIP_GRAD1": clip_grad1,
    "SLICE_GRAD": slice_grad,
    "MAX_POOLING_GRAD": max_pooling_grad,
    "RESAMPLE_GRAD1": resample_grad1,
    "AVERAGE_POOLING_GRAD": average_pooling_grad,
    "RESAMPLE_GRAD": resample_grad,
    "ELEMENT_WISE_CLIP_GRAD": clip_grad,
}


# -- the catalogue -----------------------------------------------------------------------------------------------
STRAIGHT = Knobs("straight", "every sum exact, rounded once (the contract's model, written again)")

LEGITIMATE: tuple[Knobs, ...] = (
    STRAIGHT,
    Knobs("reverse-order", "sums in reverse order", Summation(order="reverse")),
    Knobs("pairwise-order", "pairwise (tree) summation", Summation(order="pairwise")),
    Knobs("accumulate-in-data-type", "products and partial sums rounded to the data type (fp16 in fp16)",
          Summation(accumulate="data")),
    Knobs("accumulate-in-data-type-reverse", "the same, in reverse order", Summation(order="reverse", accumulate="data")),
    Knobs("accumulate-in-data-type-pairwise", "the same, pairwise", Summation(order="pairwise", accumulate="data")),
    Knobs("accumulate-in-float32", "fp16 data summed in fp32, rounded once at the end",
          Summation(accumulate="float32")),
    Knobs("fma-in-data-type", "acc = fma(w, dy, acc) in the data type", Summation(accumulate="data", fma=True)),
    Knobs("fma-in-float32", "acc = fma(w, dy, acc) in fp32", Summation(accumulate="float32", fma=True)),
    Knobs("weights-in-float32", "resample weights computed and multiplied in fp32",
          Summation(accumulate="float32", weights="float32")),
    Knobs("weights-in-data-type", "resample weights rounded to the data type, products and sums too",
          Summation(accumulate="data", weights="data")),
    Knobs("per-axis-weights-in-float32", "separable weights: per-axis factors multiplied in fp32, sums in fp32",
          Summation(accumulate="float32", weights="per-axis-float32")),
    Knobs("per-axis-weights-in-data-type", "separable weights: per-axis factors multiplied in the data type",
          Summation(accumulate="data", weights="per-axis-data")),
    Knobs("negative-zeros", "-0 written wherever the pages say 0", zero=-0.0),
    Knobs("other-nan-readings", "ReluGrad passes dY at NaN, ClipGrad1 zeroes it, MaxPoolingGrad's last NaN wins",
          relu_nan="nan-passes", clip_nan="nan-zero", pool_nan="nan-wins-last"),
    Knobs("first-nan-wins", "MaxPoolingGrad: the first NaN of a window wins", pool_nan="nan-wins"),
    Knobs("nan-ignored", "MaxPoolingGrad: NaN wins only if every tap is NaN (HLSL max)", pool_nan="nan-ignored"),
    Knobs("edge-clamped-windows", "padding-only windows send their gradient to the nearest edge element",
          pool_padding_only="edge-clamped"),
    Knobs("swapped-offsets", "ResampleGrad1 reads its offsets with the other convention", resample_offsets="swapped"),
    Knobs("zero-weight-taps-read", "LINEAR taps of weight 0 are multiplied anyway (0·inf = NaN)",
          zero_weight_taps="read"),
    Knobs("fp32-denormals-flushed", "fp32 denormal inputs and results flushed to signed zero (D3D allows it)",
          fp32_denormals="flushed"),
    Knobs("fp32-denormals-flushed-in-arithmetic", "fp32 denormals flushed where compared or summed, kept where a "
          "select only moves them (D3D11's rule; DirectML on an H100)", fp32_denormals="flushed-in-arithmetic"),
    Knobs("fp16-sums-converted-toward-zero", "fp16 sums accumulated wider, converted by D3D's rule (toward zero, "
          "a finite sum past 65504 gives 65504; DirectML on lavapipe and an H100)", fp16_conversion="toward-zero"),
    Knobs("coordinates-by-reciprocal", "ResampleGrad1 coordinates as (o − OPO)·(1/S) − IPO, sums in fp32",
          Summation(accumulate="float32"), coordinates="reciprocal"),
    Knobs("coordinates-folded", "ResampleGrad1 coordinates as o·(1/S) − (OPO·(1/S) + IPO)", coordinates="folded"),
    Knobs("coordinates-division-2-ulp-low", "ResampleGrad1 coordinates by a division 2 ULP toward zero where the "
          "quotient is inexact (D3D allows 2.5 ULP)", coordinates="division-low"),
    Knobs("coordinates-division-2-ulp-high", "ResampleGrad1 coordinates by a division 2 ULP away from zero where the "
          "quotient is inexact (D3D allows 2.5 ULP)", coordinates="division-high"),
    Knobs("coordinates-divided-bias", "ResampleGrad1 coordinates as o/S − (OPO/S + IPO)",
          coordinates="divided-bias"),
    Knobs("linear-coordinates-by-a-1-ulp-reciprocal", "ResampleGrad1 LINEAR coordinates as (o − OPO)·r − IPO with r "
          "one ULP above the float32 1/S (D3D's reciprocal is 1 ULP), even where the quotient is a float32 value "
          "(DirectML 1.15.4's LINEAR weights on lavapipe)", coordinates="linear-reciprocal-1-ulp"),
    Knobs("v0-half-added-in-float32", "ResampleGrad (v0) NEAREST picks floor(x + 0.5) with the sum in float32 (it rounds "
          "to 1.0 at x = 0.49999997)", v0_half="float32-sum"),
    Knobs("v0-half-folded-into-offset", "ResampleGrad (v0) NEAREST as Resample2 DECREASING with InputPixelOffsets "
          "lowered by 0.5 in float32 (how ONNX Runtime's DirectML EP asks Resample2 for round_prefer_ceil)",
          v0_half="folded"),
    Knobs("refuses-gradient-not-pooled-size", "MaxPoolingGrad refuses a gradient that is not the pooled size "
          "(as DirectML 1.15.4 does)", pool_gradient_size="refused"),
    Knobs("avgpool-full-window", "AveragePoolingGrad with IncludePadding divides every window by its size, past the "
          "padded input too (OC-AP1: ONNX Runtime's CPU AveragePoolGrad, PyTorch Inductor's backward)",
          avg_divisor="full-window"),
    Knobs("avgpool-in-bounds-overhang", "AveragePoolingGrad divides a window past the padded input by its positions in "
          "the input (OC-AP1)", avg_divisor="in-bounds-overhang"),
    Knobs("avgpool-end-padding-as-start", "AveragePoolingGrad with IncludePadding counts the positions in "
          "[-StartPadding, In + StartPadding) (OC-AP3: a symmetric-padding implementation's clip)",
          avg_divisor="end-padding-as-start"),
    Knobs("avgpool-refuses-sizes", "AveragePoolingGrad refuses a gradient that is not the pooled size and a window "
          "larger than the padded input", avg_gradient_size="refused"),
    Knobs("avgpool-division-2-ulp-low", "AveragePoolingGrad divides in float32 2 ULP toward zero wherever the quotient "
          "is inexact (D3D allows 2.5 ULP), sums in the data type", Summation(accumulate="data"), avg_division="low"),
    Knobs("avgpool-division-2-ulp-high", "AveragePoolingGrad divides in float32 2 ULP away from zero wherever the "
          "quotient is inexact, sums in float32", Summation(accumulate="float32"), avg_division="high"),
    Knobs("clip-v0-bounds-exact", "ClipGrad (v0) compares X with its FLOAT bounds as numbers (a double compare)",
          clip_v0_bounds="exact"),
    Knobs("clip-v0-x-in-float32", "ClipGrad (v0) converts an integer X to float32 (nearest even) to compare it, as an "
          "HLSL (float)x would, and as Core ML's converter does with an integer clamp (apple/coremltools#2839)",
          clip_v0_bounds="x-in-float32"),
    Knobs("clip-v0-x-in-float64", "ClipGrad (v0) converts an integer X to a double to compare it",
          clip_v0_bounds="x-in-float64"),
    Knobs("clip-v0-bounds-rounded", "ClipGrad (v0) rounds its bounds into an integer type, ties to even (HLSL round)",
          clip_v0_bounds="rounded"),
    Knobs("clip-v0-bounds-rounded-away", "ClipGrad (v0) rounds its bounds into an integer type, ties away from zero "
          "(C's lround)", clip_v0_bounds="rounded-away"),
    Knobs("clip-v0-half-bounds-overflowing", "ClipGrad (v0) converts its bounds to FLOAT16 by IEEE's rule, unclamped "
          "(past 65504 to ±inf)", clip_v0_bounds="half-overflowing"),
    Knobs("clip-v0-half-bounds-toward-zero", "ClipGrad (v0) converts its bounds to FLOAT16 by D3D's rule (toward zero, "
          "past the range to ±65504)", clip_v0_bounds="half-toward-zero"),
    Knobs("clip-v0-nan-bound-zero", "ClipGrad (v0) converts a NaN bound to 0 in an integer type (D3D's rule; an ARM64 "
          "conversion)", clip_v0_nan_bound="zero"),
    # How a driver meets its buffers (contract §9): free as long as it stores the output's elements and nothing else.
    Knobs("writes-in-reverse-order", "stores the output's elements last to first", write_order="reverse"),
    Knobs("writes-in-column-order", "stores the output's elements first axis fastest (column-major)",
          write_order="column-major"),
    Knobs("zeroes-output-elements-first", "stores a zero in every output element (through its layout, no other byte) "
          "before the values", output_init="zero-elements"),
    Knobs("in-place-element-by-element", "in place, reads each element's X and dY just before storing its output "
          "over X's element, in reverse order", in_place_pass="element-by-element", write_order="reverse"),
)

@dataclass(frozen=True)
class Bug:
    """A simulated bug: what the driver does, the tier that must catch it, and where a real implementation had it.

    `must_die_on`: "smoke" where the bug breaks a rule the pages or contract §1 state outright (the tie rule,
    padding never winning, negative strides, bounds excluded, zero fill, overlaps adding, the coordinate formula),
    so that the smoke tier CI runs on every commit must fail it; "standard" where it needs a particular geometry
    or special value, which the standard tier holds. `source`: the issue, pull request or document that shows a
    real implementation doing it (None: a plausible mistake nobody has been seen to make); `seen_in` says what
    that implementation did, in its own terms. `knobs`: other knob settings of the driver (name, value)."""

    name: str
    summary: str
    must_die_on: str = "standard"
    seen_in: str = ""
    source: str | None = None
    knobs: tuple[tuple[str, str], ...] = ()


TIERS_THAT_KILL = ("smoke", "standard")

#: Every simulated bug. The ones with a source are the catalogue of real bugs (docs/oracle.md).
BUGS: tuple[Bug, ...] = (
    Bug("relu-ge", "ReluGrad passes the gradient at X = 0 (`>=`)",
        must_die_on="smoke", seen_in="PyTorch's tutorial ReLU backward, `grad_h[h < 0] = 0`, keeps the gradient at h = 0",
        source="https://github.com/pytorch/tutorials/pull/269"),
    Bug("clip-passes-at-min", "ClipGrad1 passes the gradient at X = Min", must_die_on="smoke"),
    Bug("clip-passes-at-max", "ClipGrad1 passes the gradient at X = Max", must_die_on="smoke"),
    Bug("clip-min-max-swapped", "ClipGrad1 reads Min as Max and Max as Min", must_die_on="smoke"),
    Bug("slice-negative-stride-starts-at-offset", "SliceGrad starts a negative-stride window at its offset",
        must_die_on="smoke"),
    Bug("slice-no-zero-fill", "SliceGrad leaves untouched output elements as they were", must_die_on="smoke"),
    Bug("slice-offset-off-by-one", "SliceGrad writes one element past each position", must_die_on="smoke"),
    Bug("pool-ties-go-to-last", "MaxPoolingGrad sends ties to the last index (`>=`)", must_die_on="smoke"),
    Bug("pool-padding-competes", "MaxPoolingGrad lets a padding tap (value 0) win",
        must_die_on="smoke", seen_in="MXNet's CPU max pooling padded with 0: a window of -1 and padding gave 0, not -1",
        source="https://github.com/apache/mxnet/issues/2753"),
    Bug("pool-dilation-ignored", "MaxPoolingGrad ignores Dilations", must_die_on="smoke"),
    Bug("pool-overlaps-overwrite", "MaxPoolingGrad overwrites instead of adding where windows overlap",
        must_die_on="smoke", seen_in="NNlib's ∇maxpool gave 1, not 2-4, where stride-1 windows overlap on one maximum",
        source="https://github.com/FluxML/NNlib.jl/issues/205"),
    Bug("pool-end-padding-ignored", "MaxPoolingGrad sizes its loop without EndPadding, dropping the last windows",
        must_die_on="smoke"),
    Bug("pool-strides-swapped-between-axes", "MaxPoolingGrad applies the strides to the wrong axes",
        must_die_on="smoke"),
    Bug("resample-rounding-swapped", "ResampleGrad1 swaps INCREASING and DECREASING", must_die_on="smoke"),
    Bug("resample-offsets-ignored", "ResampleGrad1 ignores both pixel offsets", must_die_on="smoke"),
    Bug("resample-offset-signs-flipped", "ResampleGrad1 adds the offsets it should subtract", must_die_on="smoke"),
    Bug("resample-linear-weights-swapped", "ResampleGrad1 gives weight t to floor(x) and 1 - t to floor(x) + 1",
        must_die_on="smoke"),
    Bug("resample-edge-taps-dropped", "ResampleGrad1 drops taps outside the input instead of clamping them",
        must_die_on="smoke"),
    Bug("resample-half-pixel-off", "ResampleGrad1 adds ONNX's half-pixel shift on top of DML's offsets",
        must_die_on="smoke"),
    Bug("resample-scale-inverted", "ResampleGrad1 multiplies by the scale instead of dividing",
        must_die_on="smoke", seen_in="TensorFlow-DirectML's ResizeGrad passed TF's scale (in/out), the reciprocal of DirectML's, to DML_RESAMPLE_GRAD",
        source="https://github.com/microsoft/tensorflow-directml/pull/48"),
    Bug("one-ulp-on-a-copy", "one copied element comes out 1 ULP high"),
    Bug("denormal-where-nothing-lands", "the smallest denormal appears in an element nothing reaches"),
    Bug("int64-through-float64", "64-bit integers are copied and compared through a double"),
    Bug("integer-sums-saturate", "the summing operators accept integer types (and saturate their sums)"),
    # Our own: mistakes a real driver could make, beyond the issue's list.
    Bug("relu-multiplies-by-mask", "ReluGrad computes dY·(X > 0): NaN and inf gradients leak where X <= 0"),
    Bug("relu-reads-gradient", "ReluGrad tests the gradient's sign instead of X's", must_die_on="smoke"),
    Bug("clip-compares-in-float32", "ClipGrad1 compares integers after converting them to float32"),
    Bug("clip-refuses-min-above-max", "ClipGrad1 refuses Min > Max, which the pages define (every element 0)"),
    Bug("slice-ignores-stride-sign", "SliceGrad walks negative strides forwards", must_die_on="smoke"),
    Bug("slice-accepts-zero-stride", "SliceGrad accepts stride 0 instead of refusing it", must_die_on="smoke"),
    Bug("pool-start-padding-ignored", "MaxPoolingGrad ignores StartPadding", must_die_on="smoke"),
    Bug("pool-negative-tap-wraps", "MaxPoolingGrad indexes a tap before the input from the other end",
        must_die_on="smoke"),
    Bug("pool-gradient-beyond-pooled-size-ignored", "MaxPoolingGrad ignores dY elements past the pooled size",
        must_die_on="smoke"),
    Bug("resample-nearest-rounds-half-even", "ResampleGrad1 NEAREST rounds to nearest instead of floor/ceil",
        must_die_on="smoke"),
    Bug("resample-axes-reversed", "ResampleGrad1 applies each axis' scale and offsets to the mirrored axis",
        must_die_on="smoke"),
    Bug("resample-scale-from-sizes", "ResampleGrad1 derives the scale from the tensor sizes",
        must_die_on="standard", seen_in="PyTorch 1.8's nearest interpolate used out/in although a scale (1.00001) was given; 1.9 used the scale",
        source="https://github.com/pytorch/pytorch/issues/62237"),
    Bug("fp16-denormals-flushed", "fp16 denormals flushed to zero (D3D requires them preserved)"),
    # Real bugs (each with its source): DirectML 1.15.4's own, then other implementations of these gradients.
    Bug("slice-merges-whole-axes", "SliceGrad merges an axis read whole, forwards, one by one into its outer "
        "neighbour read forwards one by one, reading dY as contiguous across them",
        must_die_on="smoke", seen_in="DirectML 1.15.4 (DECISIONS.md §7, both stacks): six full-tier SliceGrad cases whose dY is "
        "smaller than the window on such an axis; the model reproduces DirectML's outputs bit for bit",
        source=DECISIONS_7),
    Bug("pool-max-starts-at-flt-max", "MaxPoolingGrad's running maximum starts at -FLT_MAX on the window's first "
        "tap and moves on `>`: a window of -inf, -FLT_MAX and NaN only sends its gradient to the first tap",
        must_die_on="smoke", seen_in="DirectML 1.15.4 (DECISIONS.md §7, both stacks): windows (-inf, -inf, -FLT_MAX) routed to the "
        "first -inf; the model predicts all 272 probed windows",
        source=DECISIONS_7),
    Bug("pool-lowest-window-loses-gradient", "MaxPoolingGrad's maximum starts at the lowest finite value with no "
        "index, and NaN never moves it: a window with nothing above it (only -inf or NaN) sends its gradient nowhere",
        must_die_on="smoke", seen_in="PyTorch max_pool_with_indices returned -3.4028e+38 and index -1 for an all -inf "
        "window, and before #7670 for an all-NaN one (the backward skips index -1)",
        source="https://github.com/pytorch/pytorch/pull/23161"),
    Bug("pool-ties-all-receive", "MaxPoolingGrad sends a window's gradient to every tap equal to its maximum",
        must_die_on="smoke", seen_in="Theano's CPU and non-cuDNN GPU max pooling gradient back-propagated to every "
        "maximum of a patch", source="https://github.com/Theano/Theano/issues/5404"),
    Bug("pool-dilation-off-by-one", "MaxPoolingGrad spaces the window's taps Dilations + 1 apart",
        must_die_on="smoke", seen_in="onnxruntime's oneDNN MaxPoolGrad passed ONNX's dilation 1 to oneDNN, which "
        "counts dilation from 0 (so taps 2 apart)", source="https://github.com/microsoft/onnxruntime/pull/15557"),
    Bug("pool-accumulates-onto-stale-output", "MaxPoolingGrad adds its sums onto what the output buffer held (999) "
        "instead of zeroing it first",
        must_die_on="smoke", seen_in="ExecuTorch's max_pool2d_with_indices_backward scatter-added into a grad_input it "
        "never zeroed", source="https://github.com/pytorch/executorch/issues/21686"),
    Bug("slice-single-element-window-spread", "SliceGrad, on an axis whose window of 2 or more elements yields one "
        "(abs(stride) >= size), writes the gradient over the whole window (positive stride) or nowhere (negative)",
        seen_in="MLX's slice vjp: a strided slice selecting one element of a span broadcast the cotangent over "
        "[start, stop); negative strides zeroed it", source="https://github.com/ml-explore/mlx/issues/4444"),
    Bug("relu-nan-gives-nan", "ReluGrad writes NaN where X is NaN (neither dY nor 0)",
        seen_in="MXNet's relu gradient was changed to propagate NaN inputs",
        source="https://github.com/apache/mxnet/pull/14262"),
    Bug("clip-nan-gives-max", "ClipGrad1 writes Max where X is NaN",
        seen_in="tt-metal's relu6_bw (ClipGrad with Min 0, Max 6) returned 6.0 for a NaN input: the select's seed "
        "that no branch overwrote", source="https://github.com/tenstorrent/tt-metal/issues/57455"),
    Bug("clip-passes-at-bounds", "ClipGrad1 passes the gradient at X = Min and at X = Max (`<`, `>`)",
        must_die_on="smoke", seen_in="PyTorch's clamp backward gives gradient 1 at both bounds (hardtanh, DirectML's "
        "reading, gives 0)", source="https://github.com/pytorch/pytorch/issues/184574"),
    Bug("resample-nearest-inverse-window-floored", "ResampleGrad1 NEAREST (DECREASING) gathers into input i the "
        "outputs from floor((i + IPO)·S + OPO) to floor((i + 1 + IPO)·S + OPO), where the forward's inverse needs "
        "ceil: a 1/k downsample sends each gradient to the block's last element",
        seen_in="PyTorch's CUDA nearest backward sent the gradient of a scale-0.25 downsample to the bottom-right "
        "pixel instead of the top-left", source="https://github.com/pytorch/pytorch/issues/38985"),
    Bug("resample-nearest-integer-ratio-floors", "ResampleGrad1 NEAREST with zero offsets and an output k times the "
        "input picks o // k, whatever the rounding direction and the scale",
        seen_in="TVM's resize replaced the coordinate by an integer division where the size ratio is an integer, "
        "even for ceil and round rounding", source="https://github.com/apache/tvm/pull/18838"),
    Bug("resample-gather-window-five-outputs", "ResampleGrad1 LINEAR gathers into each input only the outputs within "
        "2 of floor((i + IPO)·S + OPO), dropping taps from outputs farther away (scales above about 2)",
        seen_in="FlagGems' upsample_linear1d_backward scans a fixed window of outputs around each input's centre and "
        "drops the terms outside it", source="https://github.com/flagos-ai/FlagGems/issues/5218"),
    # ResampleGrad (v0): ResampleGrad1's mistakes that apply to it, then its rounding's, plausible and real.
    Bug("resample-v0-offsets-ignored", "ResampleGrad (v0) ignores both pixel offsets", must_die_on="smoke"),
    Bug("resample-v0-scale-inverted", "ResampleGrad (v0) multiplies by the scale instead of dividing",
        must_die_on="smoke", seen_in="TensorFlow-DirectML's ResizeGrad passed TF's scale (in/out), the reciprocal of "
        "DirectML's, to DML_RESAMPLE_GRAD itself", source="https://github.com/microsoft/tensorflow-directml/pull/48"),
    Bug("resample-v0-edge-taps-dropped", "ResampleGrad (v0) drops LINEAR taps outside the input instead of clamping "
        "them (the `edges-dropped` reading, which DirectML does not follow)"),
    Bug("resample-v0-half-pixel-off", "ResampleGrad (v0) adds ONNX's half-pixel shift on top of DML's offsets",
        must_die_on="smoke"),
    Bug("resample-v0-half-in-linear-too", "ResampleGrad (v0) folds NEAREST's half pixel into the input offsets for "
        "LINEAR too, shifting its taps by half an element", must_die_on="smoke"),
    Bug("resample-v0-nearest-floors", "ResampleGrad (v0) NEAREST picks floor(x), not the nearest element floor(x + 0.5)",
        seen_in="pic-scale-safe's nearest resize truncated the half-pixel coordinate (dst + 0.5)·scale - 0.5 instead "
        "of rounding it (PyTorch's `nearest`, floor(o·scale), misaligns images likewise: pytorch#34808)",
        source="https://github.com/awxkee/pic-scale-safe/pull/13"),
    Bug("resample-v0-nearest-rounds-half-to-even", "ResampleGrad (v0) NEAREST rounds a tie to the even element "
        "(lrint, HLSL's round) where DirectML rounds it up",
        seen_in="CuPy's ndimage order-0 interpolation picked lrint(c), ties to even, until it became floor(c + 0.5)",
        source="https://github.com/cupy/cupy/pull/4570"),
    Bug("resample-v0-nearest-integer-ratio-floors", "ResampleGrad (v0) NEAREST with zero offsets and an output k times "
        "the input picks o // k instead of rounding o/k",
        seen_in="TVM's resize turned nearest asymmetric coordinates into an integer division where the sizes' ratio is "
        "an integer, whatever the rounding method (round gave floor)", source="https://github.com/apache/tvm/pull/18835"),
    # Buffers (contract §9): layouts, graphs and in place. Each shows only on a case with whole buffers.
    Bug("layout-input-strides-ignored", "reads its inputs packed row-major, whatever their Strides",
        must_die_on="smoke", seen_in="cutorch's copy read a non-contiguous source (a[{{},{},{2}}] of a 2x2x2 "
        "tensor) as if it were contiguous", source="https://github.com/torch/cutorch/issues/39"),
    Bug("layout-offset-ignored", "reads and writes every tensor at byte 0 of its buffer, ignoring the binding's "
        "Offset", must_die_on="smoke", seen_in="TensorFlow-DirectML's DeepCopy copied between buffer regions from "
        "offset 0 (a constant src_offset/dst_offset) instead of each buffer's Offset()",
        source="https://github.com/microsoft/tensorflow-directml/pull/247"),
    Bug("layout-output-written-packed", "stores the output packed row-major from its binding's start, whatever its "
        "Strides", must_die_on="smoke", seen_in="fused-ssim's kernels indexed a stride-preserving (non-dense) output "
        "as a dense array: with a permuted input only 288 of 36,864 elements were written where they belong",
        source="https://github.com/rahul-goel/fused-ssim/pull/44"),
    Bug("layout-padding-zeroed", "clears the output's whole binding (TotalTensorSizeInBytes from its Offset) "
        "before storing the elements: gaps between strided elements and the padding become 0", must_die_on="smoke"),
    Bug("output-read-before-write", "MaxPoolingGrad and ResampleGrad1 add their sums onto what the output's buffer "
        "held (they never initialise it)", must_die_on="smoke", seen_in="HeCBench's unfold backward kernel "
        "accumulated with += into a buffer it never initialised", source="https://github.com/ORNL/HeCBench/pull/289"),
    Bug("in-place-gradient-copied-first", "ClipGrad1 in place copies dY into the output first, then zeroes where X "
        "is out of range, reading X from the buffer the copy overwrote", must_die_on="smoke"),
    Bug("in-place-vector-tail-rereads-output", "ClipGrad1 in place works in vectors of 4 and, where the size is no "
        "multiple of 4, runs the last 4 elements again, reading X where it already stored their outputs",
        must_die_on="smoke", seen_in=".NET's TensorPrimitives redid the last vector over elements already written; "
        "with the output aliasing the input it read them back as inputs", source="https://github.com/dotnet/runtime/pull/92820"),
    Bug("graph-edge-strides-lost", "on the graph path the operator between identity nodes reads its input edges "
        "packed, losing the graph inputs' Strides", must_die_on="smoke"),
    # AveragePoolingGrad: plausible mistakes, then real ones.
    Bug("avgpool-divisor-ignores-include-padding", "AveragePoolingGrad divides every window by its size, whatever "
        "IncludePadding says", must_die_on="smoke"),
    Bug("avgpool-include-padding-inverted", "AveragePoolingGrad reads IncludePadding TRUE as FALSE and FALSE as TRUE",
        must_die_on="smoke"),
    Bug("avgpool-not-divided", "AveragePoolingGrad spreads each gradient over its window without dividing it",
        must_die_on="smoke"),
    Bug("avgpool-start-padding-ignored", "AveragePoolingGrad places its windows without StartPadding",
        must_die_on="smoke"),
    Bug("avgpool-gradient-beyond-pooled-size-ignored", "AveragePoolingGrad ignores dY elements past the pooled size"),
    Bug("avgpool-padding-window-clamped", "AveragePoolingGrad clamps a window with no position in the input onto "
        "the nearest element and adds its gradient divided by its count there, 0: an infinity or a NaN"),
    Bug("avgpool-3d-overlaps-overwrite", "AveragePoolingGrad in 3-D assigns each window's share instead of adding it, "
        "so where 3-D windows overlap the last one wins",
        must_die_on="smoke", seen_in="ONNX Runtime's CPU AveragePoolGrad: Compute3DAveragePoolGrad writes "
        "`dX_arr.block(...) = dY * scale` where the 1-D and 2-D paths use `+=`",
        source="examples/dml_harness/investigate/average_pooling_grad.md"),
    Bug("avgpool-end-padding-dropped", "AveragePoolingGrad with IncludePadding counts the start padding but not the "
        "end padding in a window's divisor",
        must_die_on="smoke", seen_in="ONNX Runtime's AveragePool 19 with count_include_pad=1 included only the zeros of "
        "the start padding (v11 both)", source="https://github.com/microsoft/onnxruntime/issues/24681"),
    Bug("avgpool-end-padding-of-another-axis", "AveragePoolingGrad with IncludePadding clamps a window's end with "
        "another axis' padding (2-D: H with W's start padding)",
        seen_in="ONNX Runtime's AveragePool2DTask clamped hend with pads[1] (w_begin) instead of pads[2] (h_end), and "
        "its 3-D task two axes likewise", source="https://github.com/microsoft/onnxruntime/pull/27375"),
    Bug("avgpool-padding-counted-when-excluded", "AveragePoolingGrad with IncludePadding FALSE divides by the whole "
        "window wherever the padding is asymmetric",
        seen_in="Burn's AvgPool1d/AvgPool2d ignored count_include_pad(false) whenever the padding was asymmetric "
        "(every SAME padding of an odd total)", source="https://github.com/tracel-ai/burn/issues/5450"),
    # ClipGrad (v0): Min and Max are FLOATs whatever the tensors' type.
    Bug("clip-v0-passes-at-bounds", "ClipGrad (v0) passes the gradient at X = Min and X = Max, as a clamp's backward "
        "does", must_die_on="smoke", seen_in="PyTorch's clamp backward has passed the gradient at min and max "
        "(subgradient 1) since this pull request; the page zeroes it there",
        source="https://github.com/pytorch/pytorch/pull/7049"),
    Bug("clip-v0-bound-bits-reinterpreted", "ClipGrad (v0) reads each FLOAT bound's bits as a value of the tensors' "
        "type (as if it were ClipGrad1's scalar union)", must_die_on="smoke",
        seen_in="onnx-tensorrt read Clip-6's float min and max attributes as the input's integer type: clip(0.0, 1.0) "
        "became clip(0, 0)", source="https://github.com/onnx/onnx-tensorrt/pull/788"),
    Bug("clip-v0-bound-cast-unclamped", "ClipGrad (v0) casts its bounds into an integer type without clamping them "
        "(x86: out of range gives the integer indefinite, narrower types wrap)", must_die_on="smoke"),
    Bug("clip-v0-low-words", "ClipGrad (v0) compares 64-bit integers on their low 32 bits", must_die_on="smoke"),
    Bug("clip-v0-min-max-swapped", "ClipGrad (v0) reads Min as Max and Max as Min", must_die_on="smoke"),
    Bug("clip-v0-refuses-min-above-max", "ClipGrad (v0) refuses Min > Max, which its page defines (every element 0)"),
    Bug("clip-v0-multiplies-by-mask", "ClipGrad (v0) computes dY·(Min < X < Max): NaN and inf gradients leak as NaN "
        "where X is out of range"),
    Bug("clip-v0-nan-gives-max", "ClipGrad (v0) writes Max where X is NaN",
        seen_in="tt-metal's relu6_bw (ClipGrad with Min 0, Max 6, as TensorFlow-DirectML's Relu6Grad uses "
        "DML_ELEMENT_WISE_CLIP_GRAD) returned 6.0 for a NaN input", source="https://github.com/tenstorrent/tt-metal/issues/57455"),
)

#: Mistakes that no rule accepting the legitimate variants can catch, with the reason (docs/tolerances.md §6).
INSIDE_THE_BOUND: tuple[tuple[str, str, str], ...] = (
    ("fp16-double-rounding", "fp16 sums rounded to fp32, then to fp16",
     "this is what `accumulate-in-float32` does to its last partial sum; wherever it differs from the golden "
     "the element has n >= 2 or a weight that rounds, and the contract lets such an element be 1 ULP off"),
    ("resample-coordinate-in-float64", "ResampleGrad1 computes coordinates in float64 instead of float32",
     "D3D's float32 division may be 2.5 ULP off, so a float32 coordinate may land wherever the float64 one does: "
     "the two differ only within γ_7·A of an integer, where a NEAREST pick is open and a LINEAR weight has slack "
     "(an H100 picked as float64 would at x = 0.5/0.33333334 + 0.5; docs/tolerances.md §5b)"),
)


#: Which operators' code reads each knob (see the functions above): a driver that differs from `straight` only in
#: knobs an operator never reads computes exactly what `straight` computes for that operator, so running it there
#: proves nothing new. Every knob is listed; tests/oracle/test_mutants.py checks that.
_ALL = frozenset({"ACTIVATION_RELU_GRAD", "ELEMENT_WISE_CLIP_GRAD1", "SLICE_GRAD", "MAX_POOLING_GRAD",
                  "RESAMPLE_GRAD1", "AVERAGE_POOLING_GRAD", "RESAMPLE_GRAD", "ELEMENT_WISE_CLIP_GRAD"})
#: The operators whose page lets the output alias InputTensor (in place).
_IN_PLACE = frozenset({"ELEMENT_WISE_CLIP_GRAD1", "ELEMENT_WISE_CLIP_GRAD"})
#: ResampleGrad1 and ResampleGrad (v0): one driver's loops (`resample_grad1`).
_RESAMPLING = frozenset({"RESAMPLE_GRAD1", "RESAMPLE_GRAD"})
KNOB_OPERATORS: dict[str, frozenset[str]] = {
    "summation": frozenset(_SUMMING),
    "zero": _ALL,
    "relu_nan": frozenset({"ACTIVATION_RELU_GRAD"}),
    "clip_nan": frozenset({"ELEMENT_WISE_CLIP_GRAD1", "ELEMENT_WISE_CLIP_GRAD"}),
    "pool_nan": frozenset({"MAX_POOLING_GRAD"}),
    "pool_padding_only": frozenset({"MAX_POOLING_GRAD"}),
    "resample_offsets": _RESAMPLING,
    "zero_weight_taps": _RESAMPLING,
    "fp32_denormals": frozenset({"ACTIVATION_RELU_GRAD", "ELEMENT_WISE_CLIP_GRAD1", "MAX_POOLING_GRAD",
                                 "RESAMPLE_GRAD1", "AVERAGE_POOLING_GRAD", "RESAMPLE_GRAD", "ELEMENT_WISE_CLIP_GRAD"}),
    "coordinates": _RESAMPLING,
    "v0_half": frozenset({"RESAMPLE_GRAD"}),
    "fp16_conversion": frozenset(_SUMMING),
    "pool_gradient_size": frozenset({"MAX_POOLING_GRAD"}),
    "avg_divisor": frozenset({"AVERAGE_POOLING_GRAD"}),
    "avg_division": frozenset({"AVERAGE_POOLING_GRAD"}),
    "avg_gradient_size": frozenset({"AVERAGE_POOLING_GRAD"}),
    "clip_v0_bounds": frozenset({"ELEMENT_WISE_CLIP_GRAD"}),
    "clip_v0_nan_bound": frozenset({"ELEMENT_WISE_CLIP_GRAD"}),
    "write_order": _ALL,
    "output_init": _ALL,
    "in_place_pass": _IN_PLACE,
}
#: Knobs that only change how buffers are met: they show only on cases with whole buffers (`Case.uses_buffers`).
BUFFER_KNOBS = frozenset({"write_order", "output_init", "in_place_pass"})
#: Bugs whose code sits in one operator's function, by name prefix; any other bug may show anywhere.
#: (ResampleGrad v0's `resample-v0-` before ResampleGrad1's `resample-`, ClipGrad v0's `clip-v0-` before ClipGrad1's
#: `clip-`: the first prefix that matches counts.)
_BUG_PREFIXES = {"relu-": "ACTIVATION_RELU_GRAD", "clip-v0-": "ELEMENT_WISE_CLIP_GRAD",
                 "clip-": "ELEMENT_WISE_CLIP_GRAD1", "slice-": "SLICE_GRAD",
                 "pool-": "MAX_POOLING_GRAD", "resample-v0-": "RESAMPLE_GRAD", "resample-": "RESAMPLE_GRAD1",
                 "avgpool-": "AVERAGE_POOLING_GRAD"}
_BUGS_EVERYWHERE = {"slice-no-zero-fill"}  # `_zeros` serves every operator
#: The buffer bugs: the operators they can touch, the path they show on (None: any path with buffers), and whether
#: they need a tensor with a layout (a read or store that ignores Strides or Offset is right on a default layout).
BUFFER_BUGS: dict[str, tuple[frozenset[str], ExecutionPath | None, bool]] = {
    "layout-input-strides-ignored": (_ALL, None, True),
    "layout-offset-ignored": (_ALL, None, True),
    "layout-output-written-packed": (_ALL, None, True),
    "layout-padding-zeroed": (_ALL, None, False),
    "output-read-before-write": (frozenset(_SUMMING), None, False),
    "in-place-gradient-copied-first": (_IN_PLACE, ExecutionPath.IN_PLACE, False),
    "in-place-vector-tail-rereads-output": (_IN_PLACE, ExecutionPath.IN_PLACE, False),
    "graph-edge-strides-lost": (_ALL, ExecutionPath.GRAPH, True),
}


@functools.cache  # asked for every case a mutation test tries
def operators_affected(knobs: Knobs) -> frozenset[str]:
    """The operators on which this driver can differ from `straight`."""
    if knobs.bug is not None:
        if knobs.bug in BUFFER_BUGS:
            return BUFFER_BUGS[knobs.bug][0]
        if knobs.bug == "integer-sums-saturate":
            return frozenset(_SUMMING)
        for prefix, op in _BUG_PREFIXES.items():
            if knobs.bug.startswith(prefix) and knobs.bug not in _BUGS_EVERYWHERE:
                return frozenset({op})
        return _ALL
    changed = [name for name in KNOB_OPERATORS if name != "bug" and getattr(knobs, name) != getattr(STRAIGHT, name)]
    return frozenset().union(*(KNOB_OPERATORS[name] for name in changed)) if changed else _ALL


def in_scope(knobs: Knobs, case: Case) -> bool:
    """Whether this driver can differ from `straight` on this case: its operators, and for what only changes how
    buffers are met, a case with whole buffers (on its path)."""
    if case.op.name not in operators_affected(knobs):
        return False
    if knobs.bug is not None:
        if knobs.bug not in BUFFER_BUGS:
            return True
        _, path, layouts = BUFFER_BUGS[knobs.bug]
        return case.uses_buffers and (path is None or case.path is path) and (
            not layouts or case.description.has_layouts)
    if is_buffer_variant(knobs):
        in_place = knobs.in_place_pass != STRAIGHT.in_place_pass
        return case.uses_buffers and (not in_place or case.path is ExecutionPath.IN_PLACE)
    return True


def is_buffer_variant(knobs: Knobs) -> bool:
    """A legitimate driver that differs from `straight` only in how it meets buffers."""
    changed = {name for name in KNOB_OPERATORS if getattr(knobs, name) != getattr(STRAIGHT, name)}
    return knobs.bug is None and bool(changed) and changed <= BUFFER_KNOBS


def _bug(bug: Bug) -> Knobs:
    return replace(STRAIGHT, name=bug.name, summary=bug.summary, bug=bug.name, **dict(bug.knobs))


BUGGY: tuple[Knobs, ...] = tuple(_bug(bug) for bug in BUGS)
UNCATCHABLE: tuple[Knobs, ...] = tuple(_bug(Bug(name, summary)) for name, summary, _ in INSIDE_THE_BOUND)
#: Each bug's catalogue entry, by driver name.
BUG_ENTRIES: dict[str, Bug] = {bug.name: bug for bug in BUGS}
