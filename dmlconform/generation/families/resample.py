"""Families of ResampleGrad1 (the adjoint of Resample2 with the same scales and pixel offsets) and of ResampleGrad
(v0, the adjoint of Resample1: no RoundingDirection field, its NEAREST_NEIGHBOR rule DirectML's round half up).

Scales cover up- and down-sampling by integer and non-integer factors (some, like 1/3, not exact in
float32), the identity, both modes and (ResampleGrad1) both rounding directions. Offsets are equal on every axis (one
answer) or unequal (candidates `literal` and `swapped`, docs/reference/operators.md, kept only where the two readings
differ). Each family serves the operator of its description; `resample-readings` holds ResampleGrad's candidate
cases for the rounding and LINEAR edge rules its page leaves open.
Gradients are distinct, non-zero and moderate, so no summation order can overflow.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import replace
from fractions import Fraction
from functools import cache
from typing import Any

import numpy as np

from dmlconform.dtypes import DataType
from dmlconform.generation.description import Family
from dmlconform.generation.draw import Draw
from dmlconform.generation.families.common import Cell, Plan, cell_plans, generated, tensor
from dmlconform.generation.families.common import cells as cells_of
from dmlconform.generation.families.pairs import pairwise_plans
from dmlconform.generation.spec import CaseSpec, TensorSpec
from dmlconform.generation.values import gradients
from dmlconform.interactions import resample_grad as v0_interactions
from dmlconform.interactions.resample_grad1 import NONE, Recipe, probed_recipes
from dmlconform.ops import resample_grad as v0
from dmlconform.ops.base import Operator
from dmlconform.suite.tiers import Tier

MODES = ("NEAREST_NEIGHBOR", "LINEAR")
ROUNDINGS = ("DECREASING", "INCREASING")
#: Scale classes of the grid; 1/3 and 0.6 are not exact in float32, so their coordinates round.
SCALE_CLASSES = {"up-int": [2.0, 3.0, 4.0], "up-frac": [1.5, 2.5, 1.25], "down-int": [0.5, 0.25, 1 / 3],
                 "down-frac": [0.75, 0.6, 0.4], "identity": [1.0]}
EQUAL_OFFSETS = {"zero": 0.0, "half": 0.5, "quarter": 0.25, "negative": -0.5}


def roundings(op: Operator) -> tuple[str | None, ...]:
    """The RoundingDirection values a family varies: ResampleGrad1's two, or none (None) for ResampleGrad v0."""
    return ROUNDINGS if any(param.name == "RoundingDirection" for param in op.params) else (None,)


def _label(rounding: str | None) -> str:
    """The rounding's part of a case id: `-decreasing`, or nothing for an operator without the field."""
    return f"-{rounding.lower()}" if rounding is not None else ""


def f32(value: float) -> float:
    """The float32 value a DML FLOAT field will hold, as the exact Python float written to the suite."""
    return float(np.float32(value))


def resample_case(family: Family, case_id: str, dtype: DataType, dx: tuple[int, ...], dy_shape: tuple[int, ...],
                  mode: str, rounding: str | None, scales: list[float], ipo: list[float], opo: list[float],
                  draw: Draw, tags: tuple[str, ...] = (), large: bool = False) -> CaseSpec:
    params: dict[str, Any] = {"InterpolationMode": mode}
    if rounding is not None:
        params["RoundingDirection"] = rounding
    params |= {"Scales": [f32(s) for s in scales], "InputPixelOffsets": [f32(o) for o in ipo],
               "OutputPixelOffsets": [f32(o) for o in opo]}
    if large:
        dy = generated(dtype, dy_shape, {"dist": "normal", "seed": draw.below(2**31), "std": 4})
    else:
        dy = tensor(gradients(dtype, int(np.prod(dy_shape)), draw, with_specials=False).reshape(dy_shape))
    candidates: dict[str, str] = {}
    behaviour = None
    if params["InputPixelOffsets"] != params["OutputPixelOffsets"]:
        candidates = {"literal": "literal", "swapped": "swapped"}
        behaviour, tags = "resample-offset-convention", (*tags, "candidates")
    rounding_tags = (rounding.lower(),) if rounding is not None else ()
    return CaseSpec(case_id, family.op.name, params, {"InputGradientTensor": dy}, TensorSpec(dtype, tuple(dx)),
                    tags=("generated", family.name, mode.lower(), *rounding_tags, *tags),
                    candidates=candidates, behaviour=behaviour)


def output_size(extent: int, scale: float, draw: Draw, vary: bool = True) -> int:
    """dY's extent: floor(extent · scale), sometimes one more or one fewer."""
    # Exactly, with the scale as the float32 DML holds: no arithmetic whose rounding depends on the NumPy version.
    size = max(1, math.floor(Fraction(extent) * Fraction(f32(scale))))
    return max(1, size + (draw.choice([0, 0, 0, -1, 1]) if vary else 0))


def resample_cells(family: Family, tier: Tier) -> Iterator[Plan]:
    """Per cell (FLOAT32 and FLOAT16, ranks 1 to 4): mode, rounding, per-axis scales and equal offsets at random."""
    side = family.per_tier("side", tier)
    all_scales = [s for group in SCALE_CLASSES.values() for s in group]

    def make(draw: Draw, cell: Cell, case_id: str, index: int) -> CaseSpec:
        mode, rounding = draw.choice(MODES), draw.choice(roundings(family.op))
        scales = [draw.choice(all_scales) for _ in range(cell.rank)]
        offsets = [draw.choice(list(EQUAL_OFFSETS.values())) for _ in range(cell.rank)]
        dx = tuple(draw.between(1, side) for _ in range(cell.rank))
        dy = tuple(output_size(n, s, draw) for n, s in zip(dx, scales, strict=True))
        return resample_case(family, case_id, cell.dtype, dx, dy, mode, rounding, scales, offsets, offsets, draw)

    return cell_plans(family, tier, make)


def grid(op: Operator) -> list[tuple[str, str | None, str, str]]:
    return [(mode, rounding, scale_class, offset) for mode in MODES for rounding in roundings(op)
            for scale_class in SCALE_CLASSES for offset in EQUAL_OFFSETS]


def resample_grid(family: Family, tier: Tier) -> Iterator[Plan]:
    """Mode × rounding × scale class (up or down, integer or not, identity) × equal offsets (0, 0.5, 0.25, -0.5),
    on a 1- to 3-D case whose every axis takes a scale of the class."""
    cells = grid(family.op)
    order = Draw(family.seed).shuffled(range(len(cells)))
    for index in family.new_in(tier):
        if index >= len(cells):
            break
        mode, rounding, scale_class, offset_name = cells[order[index]]
        dtype = DataType.FLOAT32 if index % 2 else DataType.FLOAT16
        case_id = f"{family.name}-{mode.lower()}{_label(rounding)}-{scale_class}-{offset_name}-{dtype.name.lower()}"

        def make(draw: Draw, mode=mode, rounding=rounding, scale_class=scale_class, offset_name=offset_name,
                 dtype=dtype, case_id=case_id) -> CaseSpec:
            rank = 1 + draw.below(3)
            scales = [draw.choice(SCALE_CLASSES[scale_class]) for _ in range(rank)]
            offsets = [EQUAL_OFFSETS[offset_name]] * rank
            dx = tuple(draw.between(2, 9 if rank == 1 else 6) for _ in range(rank))
            dy = tuple(output_size(n, s, draw) for n, s in zip(dx, scales, strict=True))
            return resample_case(family, case_id, dtype, dx, dy, mode, rounding, scales, offsets, offsets, draw)

        yield Plan(case_id, (index,), make)


def _triples(family: Family) -> list[tuple[float, float, float]]:
    raw = family.setting("coordinates", list)
    triples = []
    for position, item in enumerate(raw):
        if not (isinstance(item, list) and len(item) == 3 and all(isinstance(v, int | float) for v in item)):
            raise family.error(f"coordinates[{position}]", f"{item!r} must be [scale, input offset, output offset]")
        triples.append((float(item[0]), float(item[1]), float(item[2])))
    return triples


def resample_boundaries(family: Family, tier: Tier) -> Iterator[Plan]:
    """(scale, offsets) per axis chosen so that source coordinates land exactly on integers and half-integers,
    where floor and ceil meet or a round-half rule would differ; each triple with both modes and roundings."""
    triples = _triples(family)
    combos = [(triple, mode, rounding) for triple in triples for mode in MODES for rounding in roundings(family.op)]
    for index in family.new_in(tier):
        if index >= len(combos):
            break
        (scale, ipo, opo), mode, rounding = combos[index]
        dtype = DataType.FLOAT16 if index % 3 == 0 else DataType.FLOAT32
        case_id = f"{family.name}-s{scale:g}-i{ipo:g}-o{opo:g}-{mode.lower()}{_label(rounding)}"

        def make(draw: Draw, scale=scale, ipo=ipo, opo=opo, mode=mode, rounding=rounding, dtype=dtype,
                 case_id=case_id) -> CaseSpec:
            rank = 1 + draw.below(2)
            dx = tuple(draw.between(3, 8) for _ in range(rank))
            dy = tuple(output_size(n, scale, draw, vary=False) for n in dx)
            return resample_case(family, case_id, dtype, dx, dy, mode, rounding, [scale] * rank, [ipo] * rank,
                                 [opo] * rank, draw, tags=("boundaries",))

        yield Plan(case_id, (index,), make)


def resample_offsets(family: Family, tier: Tier) -> Iterator[Plan]:
    """InputPixelOffsets != OutputPixelOffsets on some axis: candidates `literal` and `swapped`."""
    pairs = [(0.5, -0.5), (-0.5, 0.5), (0.25, 0.0), (0.0, -0.5), (0.5, 0.0), (0.25, -0.25)]
    all_scales = [s for group in SCALE_CLASSES.values() for s in group if s != 1.0]
    kinds = roundings(family.op)
    for index in family.new_in(tier):
        dtype = DataType.FLOAT32 if index % 3 else DataType.FLOAT16
        mode, rounding = MODES[index % 2], kinds[(index // 2) % len(kinds)]
        case_id = f"{family.name}-{mode.lower()}{_label(rounding)}-{dtype.name.lower()}-{index}"

        def make(draw: Draw, dtype=dtype, mode=mode, rounding=rounding, case_id=case_id) -> CaseSpec:
            rank = 1 + draw.below(4)
            scales = [draw.choice(all_scales) for _ in range(rank)]
            chosen = [draw.choice(pairs) if draw.chance(2, 3) else (0.0, 0.0) for _ in range(rank)]
            if all(a == b for a, b in chosen):
                chosen[draw.below(rank)] = draw.choice(pairs)
            dx = tuple(draw.between(2, 7 if rank <= 2 else 4) for _ in range(rank))
            dy = tuple(output_size(n, s, draw) for n, s in zip(dx, scales, strict=True))
            return resample_case(family, case_id, dtype, dx, dy, mode, rounding, scales, [a for a, _ in chosen],
                                 [b for _, b in chosen], draw)

        yield Plan(case_id, (index,), make)


def resample_shapes(family: Family, tier: Tier) -> Iterator[Plan]:
    """Typed-in upsampling layers (N, C, H, W with scale 1 on N and C), channels capped as the family says; the
    scale is out/in (as ONNX Resize derives it from sizes), rounded to float32."""
    shapes = family.setting("shapes", list)
    channel_cap = family.setting("channels", int, 0)
    for index in family.new_in(tier):
        if index >= len(shapes):
            break
        entry = shapes[index]
        try:
            name, mode = str(entry["name"]), str(entry["mode"])
            spatial, out = [int(v) for v in entry["in"]], [int(v) for v in entry["out"]]
            ipo, opo = float(entry.get("offsets", [0, 0])[0]), float(entry.get("offsets", [0, 0])[1])
            channels = int(entry["channels"])
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise family.error(f"shapes[{index}]", f"needs name, mode, channels, in, out ({exc})") from None
        channels = min(channels, channel_cap) if channel_cap else channels
        dtype = DataType.FLOAT16 if index % 2 else DataType.FLOAT32
        rounding = str(entry.get("rounding", "DECREASING")) if roundings(family.op)[0] is not None else None
        case_id = f"{family.name}-{name}-{dtype.name.lower()}"

        def make(draw: Draw, spatial=spatial, out=out, mode=mode, rounding=rounding, ipo=ipo, opo=opo,
                 channels=channels, dtype=dtype, case_id=case_id) -> CaseSpec:
            scales = [1.0, 1.0, *(o / n for o, n in zip(out, spatial, strict=True))]
            dx, dy = (1, channels, *spatial), (1, channels, *out)
            return resample_case(family, case_id, dtype, dx, dy, mode, rounding, scales, [0.0, 0.0, ipo, ipo],
                                 [0.0, 0.0, opo, opo], draw, tags=("shapes",), large=True)

        yield Plan(case_id, (index,), make)


#: A coordinate within this many u·A of an integer or half-integer is a knife edge (u = 2^-24, A the size of the
#: evaluation's terms): D3D's float32 evaluation is known to within γ_7·A (ops/_resample_coordinates.py), so within
#: 4u·A it may land on either side, and a pick or weight there tells which way a stack evaluated.
KNIFE_EDGE = 4


def coordinate_edges(scale: float, offset: float, n_out: int) -> tuple[list[int], list[int]]:
    """For equal offsets, the outputs whose exact source coordinate lies on or within KNIFE_EDGE·u·A of an integer,
    and those within it of a half-integer."""
    s, c = Fraction(f32(scale)), Fraction(f32(offset))
    integers, halves = [], []
    for o in range(n_out):
        x = (o - c) / s - c
        size = ((abs(Fraction(o)) + abs(c)) / abs(s) + abs(c)) * Fraction(1, 2**24)
        to_integer = abs(x - round(x))
        if to_integer <= KNIFE_EDGE * size:
            integers.append(o)
        if abs(x - (math.floor(x) + Fraction(1, 2))) <= KNIFE_EDGE * size:
            halves.append(o)
    return integers, halves


#: The second axis of a knife-edge case: x = (o - 0.25)/1.5 - 0.25 = -0.42, 0.25, 0.92, 1.58, each far from an
#: integer, so floor and ceil differ there whatever the first axis holds (a wrong rounding direction shows).
WITNESS_AXIS = (1.5, 0.25, 4, 3)


def _knife_edges(family: Family) -> list[tuple[float, float, int, int]]:
    """(scale, equal offset, dY extent, dX extent) with knife edges where the operator's pick changes (at integers for
    ResampleGrad1's floor and ceil, at half-integers for ResampleGrad's round half up), from the description's pools,
    most knife edges first."""
    at_halves = roundings(family.op)[0] is None
    scales = [float(v) for v in family.setting("scales", list)]
    offsets = [float(v) for v in family.setting("offsets", list)]
    n_out = family.setting("outputs", int)
    found = []
    for scale in scales:
        for offset in offsets:
            integers, halves = coordinate_edges(scale, offset, n_out)
            if halves if at_halves else integers:
                c, s = Fraction(f32(offset)), Fraction(f32(scale))
                last = (n_out - 1 - c) / s - c
                n_in = min(256, max(2, math.floor(last) + 2))
                found.append((-(len(integers) + len(halves)), scale, offset, n_out, n_in))
    found.sort()
    return [(scale, offset, n_out, n_in) for _, scale, offset, n_out, n_in in found]


def resample_knife_edges(family: Family, tier: Tier) -> Iterator[Plan]:
    """Source coordinates on or a few ULP from integers and half-integers along the first axis, where D3D's 2.5-ULP
    division may round a pick either way (docs/tolerances.md §5b), and along the second axis coordinates far from
    any integer, where the rounding direction is fixed: so a stack's own evaluation shows (its picks at the
    edges) while a wrong rounding direction still fails. Equal offsets (one answer), both modes and directions,
    FLOAT32 and FLOAT16."""
    edges = _knife_edges(family)
    if not edges:
        raise family.error("scales", "no scale and offset of the pools gives a knife edge")
    kinds = roundings(family.op)
    for index in family.new_in(tier):
        scale, offset, n_out, n_in = edges[index % len(edges)]
        if kinds[0] is None:  # one rule: the modes alternate
            mode, rounding = MODES[index % 2], None
        else:
            mode, rounding = MODES[(index // 2) % 2], kinds[index % 2]
        dtype = DataType.FLOAT16 if index % 4 == 3 else DataType.FLOAT32
        case_id = f"{family.name}-{mode.lower()}{_label(rounding)}-{dtype.name.lower()}-{index}"

        def make(draw: Draw, scale=scale, offset=offset, n_out=n_out, n_in=n_in, mode=mode, rounding=rounding,
                 dtype=dtype, case_id=case_id) -> CaseSpec:
            w_scale, w_offset, w_out, w_in = WITNESS_AXIS
            return resample_case(family, case_id, dtype, (n_in, w_in), (n_out, w_out), mode, rounding,
                                 [scale, w_scale], [offset, w_offset], [offset, w_offset], draw, tags=("knife-edge",))

        yield Plan(case_id, (index,), make)


#: ResampleGrad's readings (dmlconform/ops/resample_grad.py) a `resample-readings` family separates, by its `choice`:
#: the mode its cases take, the behaviour, and per candidate the variant that computes it.
READINGS: dict[str, tuple[str, str, dict[str, str]]] = {
    "rounding": ("NEAREST_NEIGHBOR", "resample-v0-nearest-rounding",
                 {rounding: v0.variant(rounding=rounding) for rounding in v0.ROUNDINGS}),
    "edges": ("LINEAR", "resample-v0-linear-edges", {edges: v0.variant(edges=edges) for edges in v0.EDGE_READINGS}),
}


def resample_readings(family: Family, tier: Tier) -> Iterator[Plan]:
    """ResampleGrad (v0): cases whose first axis separates the readings of one open choice (`choice`: `rounding`,
    NEAREST_NEIGHBOR coordinates at quarters of both even and odd integers, where floor, ceil and the three half rules
    all pick differently; `edges`, LINEAR coordinates below -1, between -1 and 0 and past the last element), each
    reading a candidate (the behaviour fingerprint says which one a stack follows). `axes` lists [scale, equal
    offset] pairs for that axis; the other axes, up to the cell's rank, are identities or small resamples."""
    choice = family.setting("choice", str)
    if choice not in READINGS:
        raise family.error("choice", f"{choice!r} is not one of {', '.join(READINGS)}")
    mode, behaviour, candidates = READINGS[choice]
    axes = [(float(scale), float(offset)) for scale, offset in family.setting("axes", list)]
    others = [(1.0, 0.0), (2.0, 0.0), (0.5, 0.25)]

    def make(draw: Draw, cell: Cell, case_id: str, index: int) -> CaseSpec:
        scale, offset = axes[(index + cell.rank) % len(axes)]
        rest = [draw.choice(others) for _ in range(cell.rank - 1)]
        c = Fraction(f32(offset))
        first_in = draw.between(3, 5)
        last = (Fraction(first_in) - 1 + c) * Fraction(f32(scale)) + c  # the output whose x is the last input
        first_out = max(2, min(12, math.floor(last) + (3 if choice == "edges" else 1)))
        dx = [first_in] + [draw.between(1, 3) for _ in rest]
        dy = [first_out] + [output_size(n, s, draw, vary=False) for n, (s, _) in zip(dx[1:], rest, strict=True)]
        spec = resample_case(family, case_id, cell.dtype, tuple(dx), tuple(dy), mode, None,
                             [scale] + [s for s, _ in rest], [offset] + [o for _, o in rest],
                             [offset] + [o for _, o in rest], draw, tags=("readings", choice))
        return replace(spec, candidates=dict(candidates), behaviour=behaviour,
                       tags=(*spec.tags, "candidates"))

    return cell_plans(family, tier, make)


KINDS = {"resample-cells": resample_cells, "resample-grid": resample_grid, "resample-boundaries": resample_boundaries,
         "resample-offsets": resample_offsets, "resample-shapes": resample_shapes,
         "resample-knife-edges": resample_knife_edges, "resample-readings": resample_readings}


#: The most elements along an axis, by rank, so that a case stays small (under 1,300 elements a tensor).
PAIR_EXTENTS = {1: 16, 2: 10, 3: 7, 4: 5}


@cache
def _recipes(mode: str, rounding: str | None, top: int) -> list[tuple[Recipe, ...]]:
    """Per combination the interaction model finds for this mode and rounding, the probed axes that show it within
    `top` elements a side; rounding None: ResampleGrad's (v0) model, whose one rule is DirectML's."""
    probed = probed_recipes() if rounding is not None else v0_interactions.recipes()
    if rounding is None:
        rounding = v0_interactions.ROUNDING
    rounding = rounding if mode == "NEAREST_NEIGHBOR" else NONE
    found = []
    for (key_mode, key_rounding, *_), recipes in sorted(probed.items()):
        fit = tuple(recipe for recipe in recipes if recipe[3] <= top and recipe[4] < top)
        if (key_mode, key_rounding) == (mode, rounding) and fit:
            found.append(fit)
    return found


def pairs_candidate(family: Family, draw: Draw, index: int, case_id: str) -> CaseSpec:
    """A small case whose every axis shows a combination drawn evenly from those the interaction model finds
    (dmlconform/interactions/resample_grad1.py: a coordinate on an integer, a half, a knife edge, in between or past
    either edge, beside a scale of 1, up or down by a power of two or not, and zero, equal or unequal offsets): one
    of the model's probed axes that shows it, the output extended at random past the coordinate that shows it."""
    cell = draw.choice(sorted(cells_of(family.op)))
    mode, rounding = draw.choice(MODES), draw.choice(roundings(family.op))
    top = PAIR_EXTENTS[cell.rank]
    dx, dy, scales, ipo, opo = [], [], [], [], []
    for _ in range(cell.rank):
        scale, input_offset, output_offset, n_in, shown = draw.choice(draw.choice(_recipes(mode, rounding, top)))
        for values, value in zip((dx, dy, scales, ipo, opo),
                                 (n_in, draw.between(shown + 1, top), scale, input_offset, output_offset), strict=True):
            values.append(value)
    return resample_case(family, case_id, cell.dtype, tuple(dx), tuple(dy), mode, rounding, scales, ipo, opo, draw,
                         tags=("pairwise",))


KINDS["resample-pairs"] = pairwise_plans(pairs_candidate)
