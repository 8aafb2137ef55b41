"""Layout families (generation/families/layout.py): every layout kind per operator, valid by the operator's rules
with the data logical; negative cases refused by the rule they name; the bundled tiers hold them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from dmlconform.generation.build import freeze_plan
from dmlconform.generation.description import Family
from dmlconform.generation.draw import Draw
from dmlconform.generation.families.layout import (
    CANDIDATES,
    CYCLE,
    layout_negative,
    layout_variants,
    order_strides,
    spec_kind,
    with_layout,
)
from dmlconform.generation.freeze import Rejected, freeze
from dmlconform.generation.spec import TensorSpec
from dmlconform.interactions.layout import BROADCAST, LAYOUTS, PACKED, PERMUTED, tensor_kind
from dmlconform.ops import find_operator
from dmlconform.suite.loader import load_paths
from dmlconform.suite.tiers import Tier
from dmlconform.surface.layout import TensorLayout, check_layout

OPS = sorted(CANDIDATES)
#: Operators whose candidates take over half a second to draw and freeze 30 of.
SLOW_CANDIDATES = ("MAX_POOLING_GRAD", "RESAMPLE_GRAD1")
VECTORS = Path(__file__).resolve().parents[2] / "test_vectors"


def family(op: str, kind: str = "layout-pairs") -> Family:
    counts = {Tier.SMOKE: 5, Tier.STANDARD: 80} if kind == "layout-pairs" else {Tier.STANDARD: 1}
    return Family(Path(__file__), find_operator(op), "lay", kind, 11, counts, "test family", {"candidates": 300})


def test_nhwc_strides_keep_the_sizes_in_nchw_order_with_c_fastest():
    assert order_strides((2, 3, 4, 5), [0, 2, 3, 1]) == (60, 1, 15, 3)
    assert order_strides((2, 3), [1, 0]) == (1, 2)


@pytest.mark.parametrize("op", [pytest.param(op, marks=pytest.mark.slow) if op in SLOW_CANDIDATES else op
                                for op in OPS])
def test_each_layout_a_candidate_takes_is_what_it_claims_and_valid(op):
    """A candidate laid out as each kind holds that kind (or stays packed where its sizes cannot: one dimension
    is not permuted), and the freezer accepts it: op.validate passes its layouts and the broadcast data repeat."""
    fam = family(op)
    made: dict[str, int] = {}
    for index in range(30):
        spec = CANDIDATES[op](fam, Draw(fam.seed, index), index, f"c{index}")
        kind = CYCLE[index % len(CYCLE)]
        laid = with_layout(fam.op, spec, kind, Draw(fam.seed, index, 5))
        found = spec_kind(fam.op, laid)
        # a mixed draw whose other tensor could not take its kind holds one kind
        assert found in (kind, PACKED) or kind == "mixed", (index, kind, found)
        for name, tensor in laid.inputs.items():
            if tensor.layout is not None and tensor.layout.strides is not None:
                for axis, stride in enumerate(tensor.layout.strides):
                    if stride == 0:
                        first = np.take(tensor.array, [0], axis=axis)
                        assert np.broadcast_to(first, tensor.array.shape).tobytes() == tensor.array.tobytes(), name
        output = fam.op.outputs[0]
        for name, tensor in (*laid.inputs.items(), (output, laid.output)):
            if tensor.layout is not None:
                check_layout(name, tensor, tensor.layout, output=name == output)  # type: ignore[arg-type]
        try:
            frozen = freeze(laid, "data/x.npz")
        except Rejected:
            continue
        made[found] = made.get(found, 0) + 1
        spec_inputs = frozen.entry["inputs"]
        for name, tensor in laid.inputs.items():
            if tensor.layout is not None:
                for key, value in tensor.layout.to_dict().items():
                    assert spec_inputs[name][key] == value
    assert set(CYCLE) <= set(made), made


@pytest.mark.parametrize("op", OPS)
def test_every_layout_rule_has_a_negative_case_refused_for_its_field(op):
    fam = family(op, "layout-negative")
    variants = list(layout_variants(fam.op))
    labels = {label.rsplit("-", 1)[0] if label.startswith(("output-stride-zero", "total-bytes")) else label
              for label, *_ in variants}
    assert {"output-stride-zero", "output-overlap", "total-bytes-below"} <= labels
    refused = set()
    for plan in layout_negative(fam, Tier.STANDARD):
        frozen = freeze_plan(fam, plan, "data/x.npz")  # the freezer checks the reference refuses that very field
        assert frozen.entry["expect"] == "invalid"
        refused.add(plan.id)
    assert len(refused) == len(variants)
    assert not list(layout_negative(fam, Tier.SMOKE))


def test_the_freezer_takes_a_broadcast_gradient_as_its_one_slice():
    """The gradient's distinct values are counted along the dimensions it is not broadcast on."""
    op = find_operator("SLICE_GRAD")
    dy = np.tile(np.arange(1, 5, dtype=np.float32), (3, 1))
    spec = CANDIDATES["SLICE_GRAD"](family("SLICE_GRAD"), Draw(1), 0, "c")
    params = {"InputWindowOffsets": [0, 0], "InputWindowSizes": [3, 4], "InputWindowStrides": [1, 1]}
    out = TensorSpec(spec.output.dtype.FLOAT32, (4, 4))
    base = replace(spec, params=params, output=out, candidates={}, behaviour=None, tags=("t",))
    broadcast = replace(base, inputs={"InputGradientTensor": TensorSpec(out.dtype, (3, 4), dy, layout=TensorLayout((0, 1)))})
    assert freeze(broadcast, "d.npz").entry["inputs"]["InputGradientTensor"]["strides"] == [0, 1]
    packed = replace(base, inputs={"InputGradientTensor": TensorSpec(out.dtype, (3, 4), dy)})
    with pytest.raises(Rejected, match="distinct"):
        freeze(packed, "d.npz")
    assert op.name == "SLICE_GRAD"


def test_the_smoke_tier_holds_every_layout_per_operator_each_valid():
    """Whole-tier check on the smoke tier (the standard tier's is the slow test below)."""
    cases = [case for case in load_paths([VECTORS / "smoke"], Tier.SMOKE) if "layout" in case.tags]
    assert {case.suite.rsplit(".", 1)[1] for case in cases} == {"smoke"}
    _check_tier(cases, per_op_valid=5)


@pytest.mark.slow
def test_the_standard_tier_holds_every_layout_and_data_type_per_operator():
    cases = [case for case in load_paths([VECTORS / "smoke", VECTORS / "standard"], Tier.STANDARD)
             if "layout" in case.tags]
    _check_tier(cases, per_op_valid=14)
    for op in OPS:
        mine = [case for case in cases if case.op.name == op and not case.expect_invalid]
        dtypes = {case.description.tensors[case.op.outputs[0]].dtype for case in mine}
        assert dtypes == set(find_operator(op).support.all_dtypes) & dtypes and len(dtypes) >= 2
        refused = [case for case in cases if case.op.name == op and case.expect_invalid]
        assert len(refused) >= 5


def kinds_of_case(tensor_kinds: set[str]) -> str:
    return next(iter(tensor_kinds)) if len(tensor_kinds) == 1 else "mixed"


def _check_tier(cases, per_op_valid: int) -> None:
    for op in OPS:
        mine = [case for case in cases if case.op.name == op and not case.expect_invalid]
        assert len(mine) >= per_op_valid, op
        kinds = set()
        for case in mine:
            case.op.validate(case.description)  # the layouts pass DirectML's rules
            shapes = {name: desc.shape for name, desc in case.description.tensors.items()}
            itemsize = case.description.tensors[case.op.outputs[0]].dtype.numpy.itemsize
            tensor_kinds = {tensor_kind(shapes[name], itemsize, layout)
                            for name, layout in case.description.layouts.items()} - {PACKED}
            kinds.add(kinds_of_case(tensor_kinds))
            assert case.id.split("-")[2] == kinds_of_case(tensor_kinds), case.id
        assert kinds == set(LAYOUTS) - {PACKED}, (op, kinds)
        assert BROADCAST in kinds and PERMUTED in kinds
