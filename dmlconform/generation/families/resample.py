"""Families of ResampleGrad1: the adjoint of Resample2 with the same scales and pixel offsets.

Scales cover up- and down-sampling by integer and non-integer factors (some, like 1/3, not exact in
float32), the identity, both modes and both rounding directions. Offsets are equal on every axis (one answer)
or unequal (candidates `literal` and `swapped`, docs/reference/operators.md, kept only where the two readings
differ).
Gradients are distinct, non-zero and moderate, so no summation order can overflow.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
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
from dmlconform.interactions.resample_grad1 import NONE, Recipe, probed_recipes
from dmlconform.suite.tiers import Tier

OP = "RESAMPLE_GRAD1"
MODES = ("NEAREST_NEIGHBOR", "LINEAR")
ROUNDINGS = ("DECREASING", "INCREASING")
#: Scale classes of the grid; 1/3 and 0.6 are not exact in float32, so their coordinates round.
SCALE_CLASSES = {"up-int": [2.0, 3.0, 4.0], "up-frac": [1.5, 2.5, 1.25], "down-int": [0.5, 0.25, 1 / 3],
                 "down-frac": [0.75, 0.6, 0.4], "identity": [1.0]}
EQUAL_OFFSETS = {"zero": 0.0, "half": 0.5, "quarter": 0.25, "negative": -0.5}


def f32(value: float) -> float:
    """The float32 value a DML FLOAT field will hold, as the exact Python float written to the suite."""
    return float(np.float32(value))


def resample_case(family: Family, case_id: str, dtype: DataType, dx: tuple[int, ...], dy_shape: tuple[int, ...],
                  mode: str, rounding: str, scales: list[float], ipo: list[float], opo: list[float],
                  draw: Draw, tags: tuple[str, ...] = (), large: bool = False) -> CaseSpec:
    params: dict[str, Any] = {"InterpolationMode": mode, "RoundingDirection": rounding,
                              "Scales": [f32(s) for s in scales], "InputPixelOffsets": [f32(o) for o in ipo],
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
    return CaseSpec(case_id, OP, params, {"InputGradientTensor": dy}, TensorSpec(dtype, tuple(dx)),
                    tags=("generated", family.name, mode.lower(), rounding.lower(), *tags),
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
        mode, rounding = draw.choice(MODES), draw.choice(ROUNDINGS)
        scales = [draw.choice(all_scales) for _ in range(cell.rank)]
        offsets = [draw.choice(list(EQUAL_OFFSETS.values())) for _ in range(cell.rank)]
        dx = tuple(draw.between(1, side) for _ in range(cell.rank))
        dy = tuple(output_size(n, s, draw) for n, s in zip(dx, scales, strict=True))
        return resample_case(family, case_id, cell.dtype, dx, dy, mode, rounding, scales, offsets, offsets, draw)

    return cell_plans(family, tier, make)


GRID = [(mode, rounding, scale_class, offset) for mode in MODES for rounding in ROUNDINGS
        for scale_class in SCALE_CLASSES for offset in EQUAL_OFFSETS]


def resample_grid(family: Family, tier: Tier) -> Iterator[Plan]:
    """Mode × rounding × scale class (up or down, integer or not, identity) × equal offsets (0, 0.5, 0.25, -0.5),
    on a 1- to 3-D case whose every axis takes a scale of the class."""
    order = Draw(family.seed).shuffled(range(len(GRID)))
    for index in family.new_in(tier):
        if index >= len(GRID):
            break
        mode, rounding, scale_class, offset_name = GRID[order[index]]
        dtype = DataType.FLOAT32 if index % 2 else DataType.FLOAT16
        case_id = f"{family.name}-{mode.lower()}-{rounding.lower()}-{scale_class}-{offset_name}-{dtype.name.lower()}"

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
    grid = [(triple, mode, rounding) for triple in triples for mode in MODES for rounding in ROUNDINGS]
    for index in family.new_in(tier):
        if index >= len(grid):
            break
        (scale, ipo, opo), mode, rounding = grid[index]
        dtype = DataType.FLOAT16 if index % 3 == 0 else DataType.FLOAT32
        case_id = f"{family.name}-s{scale:g}-i{ipo:g}-o{opo:g}-{mode.lower()}-{rounding.lower()}"

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
    for index in family.new_in(tier):
        dtype = DataType.FLOAT32 if index % 3 else DataType.FLOAT16
        mode, rounding = MODES[index % 2], ROUNDINGS[(index // 2) % 2]
        case_id = f"{family.name}-{mode.lower()}-{rounding.lower()}-{dtype.name.lower()}-{index}"

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
        rounding = str(entry.get("rounding", "DECREASING"))
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
    """(scale, equal offset, dY extent, dX extent) with knife edges at integers, from the description's pools,
    most knife edges first."""
    scales = [float(v) for v in family.setting("scales", list)]
    offsets = [float(v) for v in family.setting("offsets", list)]
    n_out = family.setting("outputs", int)
    found = []
    for scale in scales:
        for offset in offsets:
            integers, halves = coordinate_edges(scale, offset, n_out)
            if integers:
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
    for index in family.new_in(tier):
        scale, offset, n_out, n_in = edges[index % len(edges)]
        mode, rounding = MODES[(index // 2) % 2], ROUNDINGS[index % 2]
        dtype = DataType.FLOAT16 if index % 4 == 3 else DataType.FLOAT32
        case_id = f"{family.name}-{mode.lower()}-{rounding.lower()}-{dtype.name.lower()}-{index}"

        def make(draw: Draw, scale=scale, offset=offset, n_out=n_out, n_in=n_in, mode=mode, rounding=rounding,
                 dtype=dtype, case_id=case_id) -> CaseSpec:
            w_scale, w_offset, w_out, w_in = WITNESS_AXIS
            return resample_case(family, case_id, dtype, (n_in, w_in), (n_out, w_out), mode, rounding,
                                 [scale, w_scale], [offset, w_offset], [offset, w_offset], draw, tags=("knife-edge",))

        yield Plan(case_id, (index,), make)


KINDS = {"resample-cells": resample_cells, "resample-grid": resample_grid, "resample-boundaries": resample_boundaries,
         "resample-offsets": resample_offsets, "resample-shapes": resample_shapes,
         "resample-knife-edges": resample_knife_edges}


#: The most elements along an axis, by rank, so that a case stays small (under 1,300 elements a tensor).
PAIR_EXTENTS = {1: 16, 2: 10, 3: 7, 4: 5}


@cache
def _recipes(mode: str, rounding: str, top: int) -> list[tuple[Recipe, ...]]:
    """Per combination the interaction model finds for this mode and rounding, the probed axes that show it within
    `top` elements a side."""
    rounding = rounding if mode == "NEAREST_NEIGHBOR" else NONE
    found = []
    for (key_mode, key_rounding, *_), recipes in sorted(probed_recipes().items()):
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
    mode, rounding = draw.choice(MODES), draw.choice(ROUNDINGS)
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
