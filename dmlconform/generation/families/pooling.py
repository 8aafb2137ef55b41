"""Families of MaxPoolingGrad: route each dY element to the first maximum of its window in X.

X is drawn in four styles: distinct values (one winner per window), ties from a few levels (the lowest
flat index must win), all negative values (a padding tap, read as 0, must never win) and edge values
(±inf and the type's extremes). Gradients are distinct and non-zero. A geometry whose windows include
some that cover only padding becomes a candidate case (`dropped` or `edge-clamped`; docs/reference/operators.md)
with integer gradients, whose sums every summation order computes exactly.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from dmlconform.dtypes import DataType
from dmlconform.generation.description import Family
from dmlconform.generation.draw import Draw
from dmlconform.generation.families.common import Cell, Plan, cell_plans, generated, tensor
from dmlconform.generation.families.common import cells as cells_of
from dmlconform.generation.families.pairs import class_values, pairwise_plans
from dmlconform.generation.spec import EDGE_CLAMPED, FLUSHED, REFUSED, CaseSpec, TensorSpec
from dmlconform.generation.values import distinct_nonzero, gradients, pick, small_integer_gradients, specials
from dmlconform.interactions.max_pooling_grad import (
    ENUMERATED_TAPS,
    AxisGeometry,
    enumerated_windows,
    lowest_windows,
    representatives,
    scan_case,
    window_choices,
)
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


def _pair_geometry(draw: Draw, dims: int, overlap: bool, dilated: bool, only_padding: bool) -> Geometry:
    """Windows of up to six taps when apart (planted whole up to four), up to 3 a side when overlapping (filled at
    random); dilation 2 or 3 on a spanned axis when dilated; padding at neither end, the start, the end or both, and,
    where `only_padding`, sometimes as wide as the window (windows of padding only)."""
    main = draw.below(dims)
    window, dilations = [1] * dims, [1] * dims
    # Three or four taps most often: the windows that hold a first tap, a maximum after it, a tie and a NaN. Five or
    # six, filled at random, put three taps in the input between padding on both sides.
    window[main] = draw.between(2, 3) if overlap else draw.choice([2, 3, 3, 4, 4, 5] if dilated else
                                                                  [1, 2, 3, 3, 4, 4, 5])
    for axis in range(dims):
        if axis != main and draw.chance(1, 3) and (overlap or window[main] <= 3):
            window[axis] = 2
    if dilated:
        dilations[main] = draw.between(2, 3)
    extents = [(k - 1) * d + 1 for k, d in zip(window, dilations, strict=True)]
    strides = [e + draw.below(2) for e in extents]
    if overlap:
        strides[main] = draw.between(1, extents[main] - 1)
    start, end = [0] * dims, [0] * dims
    for axis, extent in enumerate(extents):
        side = 2 + draw.below(4)  # 2: none, 3: start, 4: end, 5: both
        wide = only_padding and draw.chance(1, 4)
        pad = extent + draw.below(2) if wide else draw.between(1, max(1, extent - 1))
        if side in (3, 5):
            start[axis] = pad
        if side in (4, 5):
            end[axis] = pad if side == 4 else draw.between(1, max(1, extent - 1))
    return Geometry(tuple(window), tuple(strides), tuple(start), tuple(end), tuple(dilations))


def _rep_values(dtype: DataType, draw: Draw) -> np.ndarray:
    """Values for the interaction model's representatives (dmlconform/interactions/max_pooling_grad.py): the
    same class, and the same order within a class, in this data type."""
    names, _ = representatives()
    values = np.empty(len(names), dtype=dtype.numpy)
    for name in dict.fromkeys(names):
        places = [index for index, n in enumerate(names) if n == name]
        drawn = np.sort(class_values(dtype, name, len(places), draw))
        if len(places) == 2 and not drawn[0] < drawn[1]:
            drawn[1] = np.nextafter(drawn[0], dtype.numpy.type(np.inf) if name[0] == "+" else dtype.numpy.type(0))
        values[places] = drawn
    return values


def _plant(x: np.ndarray, axes: list[AxisGeometry], reps: np.ndarray, draw: Draw, nan: bool, denormal: bool,
           lowest: bool) -> None:
    """Plants a window drawn from the model's enumerated ones (a content chosen evenly, then one of its windows) in
    every window of every plane of up to four taps in the input (the windows are apart, so each is planted whole):
    windows with a NaN in a NaN case, none elsewhere."""
    planes = x.reshape(x.shape[0] * x.shape[1], -1)
    table = enumerated_windows()
    for window in itertools.product(*(range(axis.out) for axis in axes)):
        taps = [[p for p in axis.positions[o] if 0 <= p < axis.extent] for axis, o in zip(axes, window, strict=True)]
        grid = np.meshgrid(*taps, indexing="ij")
        flat = np.ravel_multi_index(tuple(g.reshape(-1) for g in grid), tuple(a.extent for a in axes)) \
            if all(taps) else np.empty(0, dtype=np.int64)
        if flat.size == 0 or flat.size > ENUMERATED_TAPS:
            continue
        choices = window_choices(int(flat.size), nan, denormal, lowest)
        content = draw.indices(planes.shape[0], choices.sizes.size)
        pick = (draw.raw(planes.shape[0]) % choices.sizes[content].astype(np.uint64)).astype(np.int64)
        rows = choices.rows[choices.starts[content] + pick]
        planes[:, flat] = reps[table.reps[rows, :flat.size]]


def pairs_candidate(family: Family, draw: Draw, index: int, case_id: str) -> CaseSpec:
    """A small case over the interaction model's window features (dmlconform/interactions/max_pooling_grad.py):
    windows apart, each planted with a window the model enumerates (its maximum's class and place, its first tap's
    class, NaN, ties), or overlapping and filled from the classes at random; dilation 1 or more, padding anywhere,
    the gradient at, below or above the pooled size. NaN and fp32 denormals come in cases of their own (each has
    its candidates), and the windows DirectML 1.15.4 routes to their first tap (nothing above −FLT_MAX, the maximum
    at a later tap: its bug, DECISIONS.md §7) only in a few, tagged `known-bug`."""
    cell = draw.choice(sorted(cells_of(family.op)))
    dtype, dims = cell.dtype, cell.rank - 2
    nan = draw.chance(1, 3)
    fp32_denormal = dtype is DataType.FLOAT32 and not nan and draw.chance(1, 4)
    lowest = draw.chance(1, 8)
    overlap, dilated = draw.chance(1, 3), draw.chance(1, 2)
    change = 0 if fp32_denormal else draw.choice([0, 0, 0, 0, 0, 0, -1, 1])
    for attempt in range(8):
        simple = not (nan or fp32_denormal)
        geometry = _pair_geometry(draw, dims, overlap, dilated, only_padding=simple)
        spatial = []
        for k, s, d in zip(geometry.window, geometry.strides, geometry.dilations, strict=True):
            along = draw.between(2, 4) if dims == 2 else draw.between(1, 3)  # windows along the axis, unpadded
            spatial.append((k - 1) * d + 1 + s * (along - 1) + draw.below(s))
        pooled = geometry.pooled(tuple(spatial))
        out = [max(1, p) for p in pooled]
        if change:
            movable = [axis for axis, o in enumerate(out) if change > 0 or o > 1]
            if movable:
                out[draw.choice(movable)] += change
        axes = [AxisGeometry(n, o, k, s, a, e, d) for n, o, k, s, a, e, d in zip(
            spatial, out, geometry.window, geometry.strides, geometry.start, geometry.end, geometry.dilations,
            strict=True)]
        # A window with no tap in the input, or no whole window in a padded axis, opens a question of its own: only
        # a case without NaN or fp32 denormals may ask it (one open question a case, as pool_case frames them).
        empty = any((~((a.positions >= 0) & (a.positions < a.extent))).all(axis=1).any() for a in axes)
        if simple or not (empty or min(pooled) < 1):
            break
        if attempt == 6:
            nan = fp32_denormal = False  # the last try asks no question of its own
    denormal = dtype is not DataType.FLOAT32 or fp32_denormal  # fp16 denormals are kept: no question
    budget = max(1, 2000 // int(np.prod(spatial)))
    # DirectML 1.15.4 refuses a gradient of another size than the pooled one: such a case, one plane, only finishes
    # what the pooled ones leave (the gradient's size beside each value), so that the cases a stack runs cover the rest.
    planes = 1 if change else draw.between(min(2, budget), min(8, budget))
    batch = 2 if planes > 3 and draw.chance(1, 2) else 1
    x_shape = (batch, max(1, planes // batch), *spatial)
    names, _ = representatives()
    reps = _rep_values(dtype, draw)
    allowed = [index for index, name in enumerate(names)
               if (nan or name != "nan") and (denormal or not name.endswith("denormal"))]
    if not lowest:  # no window at random holds nothing above −FLT_MAX at a later tap than a −∞ or a NaN
        barred = ("-inf", "-max") if nan else (draw.choice(["-inf", "-max"]),)
        allowed = [index for index in allowed if names[index] not in barred]
    x = reps[np.array(allowed)[draw.indices(int(np.prod(x_shape)), len(allowed))]].reshape(x_shape)
    if not overlap:
        _plant(x, axes, reps, draw, nan, denormal, lowest)
    dy_shape = (*x_shape[:2], *out)
    with np.errstate(invalid="ignore"):
        bug = bool(lowest_windows(scan_case(x, axes).contents()).any())
    tags = ("pairwise", *(("known-bug",) if bug else ()))
    if not (nan or fp32_denormal):
        return pool_case(family, case_id, dtype, tensor(x), dy_shape, geometry, draw, tags=tags)
    dy = tensor(gradients(dtype, int(np.prod(dy_shape)), draw, with_specials=False).reshape(dy_shape))
    if nan:
        candidates = {variant: variant for variant in family.op.variants}
        behaviour, tags = "maxpool-nan-input", (*tags, "nan", "candidates")
        if tuple(out) != tuple(max(1, p) for p in pooled):  # the refusal decides first (as pool_case says)
            candidates[REFUSED] = REFUSED
            behaviour = "maxpool-gradient-not-pooled-size"
    else:
        candidates = {"preserved": family.op.variants[0], "flushed": FLUSHED}
        behaviour, tags = "fp32-denormal-input", (*tags, "denormal", "candidates")
    return CaseSpec(case_id, OP, geometry.params, {"InputTensor": tensor(x), "InputGradientTensor": dy},
                    TensorSpec(dtype, x_shape), tags=("generated", family.name, *tags), candidates=candidates,
                    behaviour=behaviour)


KINDS["pool-pairs"] = pairwise_plans(pairs_candidate)
