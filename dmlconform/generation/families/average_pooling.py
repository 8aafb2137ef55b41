"""Families of AveragePoolingGrad: each gradient element spread evenly over its window, divided by the window's divisor.

Gradients are distinct and non-zero (a gradient sent to the wrong window, or divided by the wrong divisor, changes
the output). Where the page leaves the answer open a case lists every reading that gives a different answer
(docs/reference/operators.md): a gradient that is not the pooled size, or a window larger than the padded input, may
be refused, and a window past the padded input divides by what OC-AP1's readings say; asymmetric padding with
IncludePadding TRUE reads EndPadding as the reference does or as StartPadding (OC-AP3). A window with no position in
the input reaches nothing in every reading (OC-AP2), so it needs no candidates.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from dmlconform.dtypes import DataType
from dmlconform.generation.description import Family
from dmlconform.generation.draw import Draw
from dmlconform.generation.families.common import Cell, Plan, cell_plans, generated, tensor
from dmlconform.generation.families.common import cells as cells_of
from dmlconform.generation.families.pairs import pairwise_plans
from dmlconform.generation.families.pooling import integer_root, shape_geometry
from dmlconform.generation.spec import FLUSHED, REFUSED, CaseSpec, TensorSpec
from dmlconform.generation.values import distinct_nonzero, gradients
from dmlconform.ops.average_pooling_grad import AVERAGE_POOLING_GRAD, pooled_size
from dmlconform.ops.base import Description, TensorDesc
from dmlconform.suite.generate import generate
from dmlconform.suite.tiers import Tier

OP = "AVERAGE_POOLING_GRAD"
#: The candidate of a case whose readings all agree but which may be refused: the one answer, computed.
COMPUTED = "computed"


@dataclass(frozen=True)
class Geometry:
    window: tuple[int, ...]
    strides: tuple[int, ...]
    start: tuple[int, ...]
    end: tuple[int, ...]
    include: bool

    @property
    def params(self) -> dict[str, Any]:
        return {"Strides": list(self.strides), "WindowSize": list(self.window), "StartPadding": list(self.start),
                "EndPadding": list(self.end), "IncludePadding": self.include}

    def formula(self, spatial: tuple[int, ...]) -> tuple[int, ...]:
        """The forward pages' output sizes (0 or less where no whole window fits the padded input)."""
        return tuple(pooled_size(n, k, s, a, e) for n, k, s, a, e in
                     zip(spatial, self.window, self.strides, self.start, self.end, strict=True))

    def pooled(self, spatial: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(max(1, size) for size in self.formula(spatial))


def readings(geometry: Geometry, dtype: DataType, dy: np.ndarray, dx_shape: tuple[int, ...]) -> list[str]:
    """The reference's variants that give distinct answers, the first of each answer (the default first)."""
    op = AVERAGE_POOLING_GRAD
    desc = Description(op, op.parse_params(geometry.params, dtype),
                       {"InputGradientTensor": TensorDesc(dtype, tuple(dy.shape)),
                        "OutputGradientTensor": TensorDesc(dtype, tuple(dx_shape))})
    seen: list[bytes] = []
    names = []
    with np.errstate(invalid="ignore", over="ignore"):
        for variant in op.variants:
            bits = op.reference(desc, {"InputGradientTensor": dy}, variant).outputs["OutputGradientTensor"].tobytes()
            if bits not in seen:
                seen.append(bits)
                names.append(variant)
    return names


def avg_case(family: Family, case_id: str, dtype: DataType, dy: TensorSpec, dx_shape: tuple[int, ...],
             geometry: Geometry, tags: tuple[str, ...] = (), denormal: bool = False) -> CaseSpec:
    """A case for the geometry, framed by what it leaves open (the first that applies, as MaxPoolingGrad's cases are):
    a gradient that is not the pooled size, or a window larger than the padded input, may be refused, and is computed
    under every reading of OC-AP1 that gives another answer; asymmetric padding lists OC-AP3's readings; fp32
    denormals in the gradient may be flushed (`denormal`, only where nothing else is open)."""
    array = dy.array if dy.array is not None else generate(dy.generate or {}, dtype, dy.shape)
    spatial = tuple(dx_shape[2:])
    answers = readings(geometry, dtype, array, dx_shape)
    computed = {name: name for name in answers} if len(answers) > 1 else {COMPUTED: answers[0]}
    candidates: dict[str, str] = {}
    behaviour = None
    if tuple(dy.shape[2:]) != geometry.pooled(spatial):
        behaviour, candidates = "avgpool-gradient-not-pooled-size", {**computed, REFUSED: REFUSED}
    elif min(geometry.formula(spatial)) < 1:
        behaviour, candidates = "avgpool-window-beyond-padded-input", {**computed, REFUSED: REFUSED}
    elif len(answers) > 1:
        behaviour, candidates = "avgpool-asymmetric-padding", dict(computed)
    elif denormal:
        behaviour, candidates = "fp32-denormal-sum", {"preserved": answers[0], "flushed": FLUSHED}
    if behaviour is not None:
        tags = (*tags, "candidates")
    if denormal:
        tags = (*tags, "denormal")
    return CaseSpec(case_id, OP, geometry.params, {"InputGradientTensor": dy}, TensorSpec(dtype, tuple(dx_shape)),
                    tags=("generated", family.name, *tags), candidates=candidates, behaviour=behaviour)


def random_geometry(draw: Draw, dims: int) -> Geometry:
    window = tuple(draw.between(1, 4) for _ in range(dims))
    strides = tuple(draw.between(1, 3) for _ in range(dims))
    start = tuple(draw.below(k + 1) for k in window)
    end = tuple(draw.below(k + 1) for k in window)
    return Geometry(window, strides, start, end, draw.chance(1, 2))


def avg_cells(family: Family, tier: Tier) -> Iterator[Plan]:
    """Per cell (FLOAT32 and FLOAT16, 4-D and 5-D, all from 3_0): random windows up to 4, strides up to 3, start and
    end padding up to the window (windows of padding only among them), IncludePadding either way, dY at, one below or
    one above the pooled size."""
    elements = family.per_tier("elements", tier)

    def make(draw: Draw, cell: Cell, case_id: str, index: int) -> CaseSpec:
        dims = cell.rank - 2
        geometry = random_geometry(draw, dims)
        side = max(2, integer_root(elements // 4, dims))
        spatial = tuple(draw.between(max(1, side // 2), side) for _ in range(dims))
        change = draw.choice([0, 0, 0, -1, 1])
        out = tuple(max(1, p + change) for p in geometry.pooled(spatial))
        shape = (draw.between(1, 2), draw.between(1, 2))
        count = int(np.prod(shape + out))
        dy = gradients(cell.dtype, count, draw, with_specials=False).reshape(shape + out)
        return avg_case(family, case_id, cell.dtype, tensor(dy), (*shape, *spatial), geometry)

    return cell_plans(family, tier, make)


#: The parameter grid: 2-D or 3-D, windows apart or overlapping, padding at neither end, the start, the end or both,
#: IncludePadding FALSE or TRUE, and dY at the pooled size, one smaller or one larger.
GRID = [(dims, overlap, padding, include, dy_change) for dims in (2, 3) for overlap in (False, True)
        for padding in ("none", "start", "end", "both") for include in (False, True) for dy_change in (0, -1, 1)]


def avg_grid(family: Family, tier: Tier) -> Iterator[Plan]:
    order = Draw(family.seed).shuffled(range(len(GRID)))
    for index in family.new_in(tier):
        if index >= len(GRID):
            break
        dims, overlap, padding, include, dy_change = GRID[order[index]]
        dtype = DataType.FLOAT32 if index % 2 else DataType.FLOAT16
        label = (f"{dims}d-{'overlap' if overlap else 'apart'}-pad-{padding}-"
                 f"{'include' if include else 'exclude'}-dy{dy_change:+d}")
        case_id = f"{family.name}-{label}-{dtype.name.lower()}"

        def make(draw: Draw, dims=dims, overlap=overlap, padding=padding, include=include, dy_change=dy_change,
                 dtype=dtype, case_id=case_id) -> CaseSpec:
            window = tuple(draw.between(2, 3) for _ in range(dims))
            strides = tuple(max(1, k - 1) if overlap else k for k in window)
            start = tuple(draw.between(1, k - 1) if padding in ("start", "both") else 0 for k in window)
            end = tuple(draw.between(1, k - 1) if padding in ("end", "both") else 0 for k in window)
            geometry = Geometry(window, strides, start, end, include)
            spatial = tuple(draw.between(5, 9 if dims == 2 else 6) for _ in range(dims))
            out = tuple(max(1, p + dy_change) for p in geometry.pooled(spatial))
            shape = (1, draw.between(1, 2))
            dy = gradients(dtype, int(np.prod(shape + out)), draw, with_specials=False).reshape(shape + out)
            return avg_case(family, case_id, dtype, tensor(dy), (*shape, *spatial), geometry)

        yield Plan(case_id, (index,), make)


def avg_shapes(family: Family, tier: Tier) -> Iterator[Plan]:
    """Typed-in shapes (the average-pooling layers of real networks, oneDNN benchdnn's pooling corner cases) with
    channels and batch capped as the family says (`channels: 0` keeps the typed count); IncludePadding as typed
    (`include`, default alternating), gradients from generate specs."""
    shapes = family.setting("shapes", list)
    channel_cap = family.setting("channels", int, 0)
    batch_cap = family.setting("batch", int, 1)
    for index in family.new_in(tier):
        if index >= len(shapes):
            break
        entry = shapes[index]
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise family.error(f"shapes[{index}]", "must be a mapping with a name")
        try:
            pool, spatial, out = shape_geometry({**entry, "dilations": [1] * len(entry.get("in", []))})
        except ValueError as exc:
            raise family.error(f"shapes[{index}].{exc}".split(":")[0], str(exc)) from None
        include = entry.get("include", bool(index % 2))
        if not isinstance(include, bool):
            raise family.error(f"shapes[{index}].include", f"{include!r} is not true or false")
        geometry = Geometry(pool.window, pool.strides, pool.start, pool.end, include)
        dtype = DataType.parse(entry["dtype"]) if "dtype" in entry else \
            (DataType.FLOAT32 if index % 2 else DataType.FLOAT16)
        channels = int(entry.get("channels", 1))
        channels = min(channels, channel_cap) if channel_cap else channels
        batch = min(int(entry.get("batch", 1)), batch_cap)
        case_id = f"{family.name}-{entry['name']}-{dtype.name.lower()}"

        def make(draw: Draw, geometry=geometry, spatial=spatial, out=out, dtype=dtype, channels=channels,
                 batch=batch, case_id=case_id) -> CaseSpec:
            dy = generated(dtype, (batch, channels, *out), {"dist": "normal", "seed": draw.below(2**31), "std": 4})
            return avg_case(family, case_id, dtype, dy, (batch, channels, *spatial), geometry, tags=("shapes",))

        yield Plan(case_id, (index,), make)


KINDS = {"avgpool-cells": avg_cells, "avgpool-grid": avg_grid, "avgpool-shapes": avg_shapes}


def _pair_axis(draw: Draw, padded: bool) -> tuple[int, int, int, int, int]:
    """One axis over the interaction model's ranges (dmlconform/interactions/average_pooling_grad.py): extent, window,
    stride, and, where `padded`, start and end padding up to a window and one (windows of padding only), the same at
    both ends a third of the time."""
    window = draw.between(1, 4)
    stride = draw.between(1, 4)
    extent = draw.between(1, 6)
    padding = draw.below(3) if padded else 0  # none, the same at both ends, or each its own
    start = draw.between(1, window + 1) if padding else 0
    end = start if padding == 1 else (draw.below(window + 2) if padding else 0)
    return extent, window, stride, start, end


def pairs_candidate(family: Family, draw: Draw, index: int, case_id: str) -> CaseSpec:
    """A small case over the interaction model's features: a random geometry per axis, IncludePadding either way, a
    gradient of distinct normal values with, now and then, one NaN, an infinity of each sign and (fp16, or fp32 in
    a case of its own: its denormals may be flushed) denormals."""
    cell = draw.choice(sorted(cells_of(family.op)))
    dtype, dims = cell.dtype, cell.rank - 2
    padded = not draw.chance(1, 4)
    axes = [_pair_axis(draw, padded) for _ in range(dims)]
    if draw.chance(1, 3):  # windows that tile the input: a stride of the window's size on every axis
        axes = [(extent, window, window, start, end) for extent, window, _, start, end in axes]
    geometry = Geometry(tuple(a[1] for a in axes), tuple(a[2] for a in axes), tuple(a[3] for a in axes),
                        tuple(a[4] for a in axes), draw.chance(1, 2))
    spatial = tuple(a[0] for a in axes)
    # The gradient at the pooled size two times in three, else one axis one smaller, one or two larger.
    out = list(geometry.pooled(spatial))
    if draw.chance(1, 3):
        axis = draw.below(dims)
        out[axis] = max(1, out[axis] + draw.choice([-1, 1, 2]))
    out = tuple(out)
    planes = draw.between(1, 3)
    shape = (1, planes, *out)
    count = int(np.prod(shape))
    dy = distinct_nonzero(dtype, count, draw, exponents=(-3, 4))
    # fp32 denormals make a candidate case of their own (preserved or flushed): only where nothing else is open.
    closed = (out == geometry.formula(spatial) and
              (not geometry.include or all(a >= e for a, e in zip(geometry.start, geometry.end, strict=True))))
    fp32_denormal = dtype is DataType.FLOAT32 and closed and draw.chance(1, 3)
    specials: list[float] = []
    if draw.chance(1, 3):
        specials.append(float("nan"))
    if draw.chance(1, 3):
        specials += [float("inf"), float("-inf")]
    places = draw.shuffled(range(count))
    for place, value in zip(places, specials, strict=False):
        dy[place] = value
    if (dtype is DataType.FLOAT16 and draw.chance(1, 3)) or fp32_denormal:
        tiny = float(np.finfo(dtype.numpy).smallest_subnormal)
        taken = len(specials)
        for offset, place in enumerate(places[taken:taken + max(1, count // 8)]):
            dy[place] = (-1) ** offset * (offset + 3) * tiny
    return avg_case(family, case_id, dtype, tensor(dy.reshape(shape)), (1, planes, *spatial), geometry,
                    tags=("pairwise",), denormal=fp32_denormal)


KINDS["avgpool-pairs"] = pairwise_plans(pairs_candidate)
