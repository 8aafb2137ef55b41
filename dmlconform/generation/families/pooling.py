"""Families of MaxPoolingGrad: route each dY element to the first maximum of its window in X.

X is drawn in four styles: distinct values (one winner per window), ties from a few levels (the lowest
flat index must win), all negative values (a padding tap, read as 0, must never win) and edge values
(±inf and the type's extremes). Gradients are distinct and non-zero. A geometry whose windows include
some that cover only padding becomes a candidate case (`dropped` or `edge-clamped`, contract §2) with
integer gradients, whose sums every summation order computes exactly.
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
from dmlconform.generation.spec import EDGE_CLAMPED, REFUSED, CaseSpec, TensorSpec
from dmlconform.generation.values import distinct_nonzero, gradients, pick, small_integer_gradients, specials
from dmlconform.ops.max_pooling_grad import argmax_indices, pooled_size
from dmlconform.suite.generate import generate
from dmlconform.suite.tiers import Tier

OP = "MAX_POOLING_GRAD"
X_STYLES = ("distinct", "ties", "negative", "edges")


@dataclass(frozen=True)
class Geometry:
    window: tuple[int, ...]
    strides: tuple[int, ...]
    start: tuple[int, ...]
    end: tuple[int, ...]
    dilations: tuple[int, ...]

    @property
    def params(self) -> dict[str, list[int]]:
        return {"Strides": list(self.strides), "WindowSize": list(self.window), "StartPadding": list(self.start),
                "EndPadding": list(self.end), "Dilations": list(self.dilations)}

    def pooled(self, spatial: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(pooled_size(n, k, s, a, e, d) for n, k, s, a, e, d in
                     zip(spatial, self.window, self.strides, self.start, self.end, self.dilations, strict=True))

    def overlaps(self) -> bool:
        return any((k - 1) * d + 1 > s for k, s, d in zip(self.window, self.strides, self.dilations, strict=True))


def x_values(style: str, dtype: DataType, count: int, draw: Draw) -> np.ndarray:
    t = dtype.numpy.type
    if style == "ties":
        levels = distinct_nonzero(dtype, 3, draw, exponents=(-2, 3))
        return pick(np.concatenate([levels, np.array([0], dtype=dtype.numpy)]), count, draw)
    if style == "negative":
        return -np.abs(distinct_nonzero(dtype, count, draw, exponents=(-6, 6)))
    values = distinct_nonzero(dtype, count, draw, exponents=(-6, 6))
    if style == "edges":
        edges = np.array([t(0), t(-0.0), *specials(dtype, with_nan=False)], dtype=dtype.numpy)
        at_edge = draw.indices(count, 3) == 0
        values[at_edge] = pick(edges, int(at_edge.sum()), draw)
    return values


def padding_only(x: np.ndarray, dy_shape: tuple[int, ...], geometry: Geometry) -> bool:
    params = {k: tuple(v) for k, v in geometry.params.items()}
    with np.errstate(invalid="ignore"):
        return bool((argmax_indices(x, tuple(dy_shape[2:]), params) < 0).any())


def pool_case(family: Family, case_id: str, dtype: DataType, x: TensorSpec, dy_shape: tuple[int, ...],
              geometry: Geometry, draw: Draw, tags: tuple[str, ...] = (), large: bool = False) -> CaseSpec:
    """A case for the geometry; a candidate case when some window covers only padding, and one that may be
    refused when dY is not the pooled size (the page says "typically"; DirectML 1.15.4 refuses it)."""
    x_array = x.array if x.array is not None else generate(x.generate or {}, dtype, x.shape)
    count = int(np.prod(dy_shape))
    candidates: dict[str, str] = {}
    behaviour = None
    only_padding = padding_only(x_array, dy_shape, geometry)
    routed = {"dropped": "nan-sticks", "edge-clamped": EDGE_CLAMPED} if only_padding else {"computed": "nan-sticks"}
    formula = geometry.pooled(tuple(x.shape[2:]))
    # No whole dilated window fits some padded axis: the formula gives 0 or less there, and the smallest gradient
    # D3D12 can hold, 1, is what DirectML takes for the pooled size (it computes these, refusing any other size).
    sized = tuple(dy_shape[2:]) == tuple(max(1, n) for n in formula)
    # The behaviour a case reports is the first of these that leaves its answer open: a refusal of its size
    # decides the case before anything a padding-only window does.
    if not sized:
        behaviour = "maxpool-gradient-not-pooled-size"
        candidates = {**({"computed": "nan-sticks", "computed-edge-clamped": EDGE_CLAMPED} if only_padding
                         else routed), REFUSED: REFUSED}
    elif min(formula) < 1:
        behaviour = "maxpool-window-beyond-padded-input"
        candidates = {**({"computed": "nan-sticks", "computed-edge-clamped": EDGE_CLAMPED} if only_padding
                         else routed), REFUSED: REFUSED}
    elif only_padding:
        behaviour, candidates = "maxpool-padding-only-window", routed
    if behaviour is not None:
        tags = (*tags, "candidates")
    if only_padding:
        if large:
            dy = generated(dtype, dy_shape, {"dist": "ints", "seed": draw.below(2**31), "low": -255, "high": 255})
        else:
            dy = tensor(small_integer_gradients(dtype, count, draw).reshape(dy_shape))
    elif large:
        dy = generated(dtype, dy_shape, {"dist": "normal", "seed": draw.below(2**31), "std": 4})
    else:
        dy = tensor(gradients(dtype, count, draw, with_specials=False).reshape(dy_shape))
    return CaseSpec(case_id, OP, geometry.params, {"InputTensor": x, "InputGradientTensor": dy},
                    TensorSpec(dtype, x.shape), tags=("generated", family.name, *tags), candidates=candidates,
                    behaviour=behaviour)


def integer_root(value: int, degree: int) -> int:
    """The largest s with s**degree <= value, in integers (a float root's last bit depends on the platform's libm)."""
    root = 0
    while (root + 1) ** degree <= value:
        root += 1
    return root


def random_geometry(draw: Draw, dims: int) -> Geometry:
    window = tuple(draw.between(1, 4) for _ in range(dims))
    strides = tuple(draw.between(1, 3) for _ in range(dims))
    dilations = tuple(draw.between(1, 2) for _ in range(dims))
    start = tuple(draw.below(k) for k in window)
    end = tuple(draw.below(k) for k in window)
    return Geometry(window, strides, start, end, dilations)


def pool_cells(family: Family, tier: Tier) -> Iterator[Plan]:
    """Per cell (FLOAT32 and FLOAT16, 4-D from 3_0 and 5-D from 4_0): random geometry, X in each style in turn,
    dY at, one below or one above the pooled size."""
    elements = family.per_tier("elements", tier)

    def make(draw: Draw, cell: Cell, case_id: str, index: int) -> CaseSpec:
        dims, style = cell.rank - 2, X_STYLES[index % len(X_STYLES)]
        geometry = random_geometry(draw, dims)
        side = max(2, integer_root(elements // 4, dims))
        spatial = tuple(draw.between(max(1, side // 2), side) for _ in range(dims))
        pooled = geometry.pooled(spatial)
        change = draw.choice([0, 0, 0, -1, 1])
        out = tuple(max(1, p + change) for p in pooled)
        if min(pooled) < 1:
            out = tuple(max(1, p) for p in pooled)
        x_shape = (draw.between(1, 2), draw.between(1, 2), *spatial)
        x = x_values(style, cell.dtype, int(np.prod(x_shape)), draw).reshape(x_shape)
        return pool_case(family, case_id, cell.dtype, tensor(x), (*x_shape[:2], *out), geometry, draw,
                         tags=(style,) if style != "distinct" else ())

    return cell_plans(family, tier, make, label=lambda cell, index: X_STYLES[index % len(X_STYLES)])


#: The parameter grid: 2-D or 3-D, overlapping windows or not, padding at neither end, the start, the end or
#: both, dilation 1 or 2, and dY at the pooled size, one smaller (a negative end padding) or one larger.
GRID = [(dims, overlap, padding, dilation, dy_change) for dims in (2, 3) for overlap in (False, True)
        for padding in ("none", "start", "end", "both") for dilation in (1, 2) for dy_change in (0, -1, 1)]


def pool_grid(family: Family, tier: Tier) -> Iterator[Plan]:
    order = Draw(family.seed).shuffled(range(len(GRID)))
    for index in family.new_in(tier):
        if index >= len(GRID):
            break
        dims, overlap, padding, dilation, dy_change = GRID[order[index]]
        dtype = DataType.FLOAT32 if index % 2 else DataType.FLOAT16
        style = X_STYLES[index % len(X_STYLES)]
        label = f"{dims}d-{'overlap' if overlap else 'apart'}-pad-{padding}-dil{dilation}-dy{dy_change:+d}"
        case_id = f"{family.name}-{label}-{dtype.name.lower()}"

        def make(draw: Draw, dims=dims, overlap=overlap, padding=padding, dilation=dilation, dy_change=dy_change,
                 dtype=dtype, style=style, case_id=case_id) -> CaseSpec:
            window = tuple(draw.between(2, 3) for _ in range(dims))
            strides = tuple(max(1, k - 1) if overlap else (k - 1) * dilation + 1 for k in window)
            start = tuple(draw.between(1, k - 1) if padding in ("start", "both") else 0 for k in window)
            end = tuple(draw.between(1, k - 1) if padding in ("end", "both") else 0 for k in window)
            geometry = Geometry(window, strides, start, end, (dilation,) * dims)
            spatial = tuple(draw.between(5, 9 if dims == 2 else 6) for _ in range(dims))
            out = tuple(max(1, p + dy_change) for p in geometry.pooled(spatial))
            x_shape = (1, draw.between(1, 2), *spatial)
            x = x_values(style, dtype, int(np.prod(x_shape)), draw).reshape(x_shape)
            return pool_case(family, case_id, dtype, tensor(x), (*x_shape[:2], *out), geometry, draw)

        yield Plan(case_id, (index,), make)


def _ints(entry: dict[str, Any], key: str, dims: int, default: int | None = None) -> tuple[int, ...]:
    value = entry.get(key, [default] * dims if default is not None else None)
    if not isinstance(value, list) or len(value) != dims or not all(isinstance(v, int) and v >= 0 for v in value):
        raise ValueError(f"{key}: {value!r} must be {dims} non-negative integers")
    return tuple(value)


def shape_geometry(entry: dict[str, Any]) -> tuple[Geometry, tuple[int, ...], tuple[int, ...]]:
    """(geometry, input spatial sizes, dY spatial sizes) of a typed-in shape. The end padding is what makes the
    pooled size equal the given output, and 0 where that would be negative (benchdnn's negative right padding,
    which leaves the last rows in no window)."""
    spatial = entry.get("in")
    if not isinstance(spatial, list) or len(spatial) not in (2, 3):
        raise ValueError(f"in: {spatial!r} must be 2 or 3 spatial sizes")
    dims = len(spatial)
    spatial_t, out = _ints(entry, "in", dims), _ints(entry, "out", dims)
    window, strides = _ints(entry, "window", dims), _ints(entry, "strides", dims, 1)
    start, dilations = _ints(entry, "start", dims, 0), _ints(entry, "dilations", dims, 1)
    end = tuple(max(0, (o - 1) * s - n + (k - 1) * d + 1 - a) for n, o, k, s, a, d in
                zip(spatial_t, out, window, strides, start, dilations, strict=True))
    return Geometry(window, strides, start, end, dilations), spatial_t, out


def pool_shapes(family: Family, tier: Tier) -> Iterator[Plan]:
    """Typed-in shapes (real networks, oneDNN benchdnn's backward-pooling corner cases) with channels and batch
    capped as the family says (`channels: 0` keeps the typed count); X in the styles in turn and gradients, both
    from generate specs."""
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
            geometry, spatial, out = shape_geometry(entry)
        except ValueError as exc:
            raise family.error(f"shapes[{index}].{exc}".split(":")[0], str(exc)) from None
        dtype = DataType.parse(entry["dtype"]) if "dtype" in entry else \
            (DataType.FLOAT32 if index % 2 else DataType.FLOAT16)
        channels = int(entry.get("channels", 1))
        channels = min(channels, channel_cap) if channel_cap else channels
        batch = min(int(entry.get("batch", 1)), batch_cap)
        style = ("distinct", "ties", "negative")[index % 3]
        case_id = f"{family.name}-{entry['name']}-{dtype.name.lower()}"

        def make(draw: Draw, geometry=geometry, spatial=spatial, out=out, dtype=dtype, channels=channels,
                 batch=batch, style=style, case_id=case_id) -> CaseSpec:
            x_shape = (batch, channels, *spatial)
            seed = draw.below(2**31)
            spec = {"ties": {"dist": "ties", "seed": seed, "values": [-1, 0, 0.5, 2]},
                    "negative": {"dist": "uniform", "seed": seed, "low": -10, "high": -0.5}}.get(
                style, {"dist": "uniform", "seed": seed, "low": -10, "high": 10})
            x = generated(dtype, x_shape, spec)
            return pool_case(family, case_id, dtype, x, (batch, channels, *out), geometry, draw,
                             tags=("shapes", style), large=True)

        yield Plan(case_id, (index,), make)


def pool_nan(family: Family, tier: Tier) -> Iterator[Plan]:
    """NaN in X, which the pages leave open: each of the reference's four NaN readings is a candidate."""
    for index in family.new_in(tier):
        dims = 2 + index % 2
        dtype = DataType.FLOAT32 if index % 4 < 2 else DataType.FLOAT16
        case_id = f"{family.name}-{dims + 2}d-{dtype.name.lower()}-{index}"

        def make(draw: Draw, dims=dims, dtype=dtype, case_id=case_id) -> CaseSpec:
            window = tuple(draw.between(2, 3) for _ in range(dims))
            geometry = Geometry(window, tuple(draw.between(1, k) for k in window), (0,) * dims, (0,) * dims,
                                (1,) * dims)
            spatial = tuple(draw.between(3, 6) for _ in range(dims))
            x_shape = (1, 1, *spatial)
            x = x_values("ties", dtype, int(np.prod(x_shape)), draw)
            x[draw.shuffled(range(x.size))[: max(1, x.size // 4)]] = np.nan
            dy_shape = (1, 1, *geometry.pooled(spatial))
            dy = gradients(dtype, int(np.prod(dy_shape)), draw, with_specials=False).reshape(dy_shape)
            return CaseSpec(case_id, OP, geometry.params, {"InputTensor": tensor(x.reshape(x_shape)),
                                                           "InputGradientTensor": tensor(dy)},
                            TensorSpec(dtype, x_shape), tags=("generated", family.name, "nan", "candidates"),
                            candidates={v: v for v in family.op.variants}, behaviour="maxpool-nan-input")

        yield Plan(case_id, (index,), make)


KINDS = {"pool-cells": pool_cells, "pool-grid": pool_grid, "pool-shapes": pool_shapes, "pool-nan": pool_nan}
