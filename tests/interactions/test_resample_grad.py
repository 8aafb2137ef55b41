"""ResampleGrad (v0)'s sites: ResampleGrad1's coordinate classes under v0's round half up and DirectML's offset
reading, without a rounding feature; the universe its probed axes give; the pairwise candidates drawn from them."""

import itertools
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from dmlconform.generation.description import load_description
from dmlconform.generation.draw import Draw
from dmlconform.generation.families import KINDS, pairs
from dmlconform.generation.families.resample import pairs_candidate
from dmlconform.generation.freeze import Rejected, freeze
from dmlconform.interactions.model import Interaction
from dmlconform.interactions.resample_grad import ResampleGradModel
from dmlconform.interactions.resample_grad1 import COORDINATES, MODES, OFFSETS, SCALES, coordinate_classes

DESCRIPTION = Path(__file__).resolve().parents[2] / "dmlconform/generation/descriptions/resample_grad.yaml"


@pytest.fixture(scope="module")
def model() -> ResampleGradModel:
    return ResampleGradModel()


def classes(n_in, n_out, scale, offset, mode="NEAREST_NEIGHBOR", rounding="half-up"):
    return [COORDINATES[c] for c in coordinate_classes(n_in, n_out, scale, offset, offset, mode, rounding)]


def test_a_tie_is_where_round_half_up_changes_its_pick():
    # x = o/2 on 3 inputs: 0, 0.5, 1, 1.5, 2, 2.5: the halves are ties (floor(x + 0.5) rounds them up); 2.5 picks 3,
    # past the last element.
    assert classes(3, 6, 2.0, 0.0) == ["integer", "half", "integer", "half", "integer", "clamped-high"]
    # Floor (ResampleGrad1's DECREASING) picks element 2 at 2.5: inside, a half like the others.
    assert classes(3, 6, 2.0, 0.0, rounding="DECREASING") == ["integer", "half"] * 3


def test_the_half_s_own_rounding_makes_a_knife_edge():
    # x(0) = (0 - c) - c = 0.49999997 with c = -(0.25 - 2^-26): floor(x + 0.5) is 0, but x + 0.5 rounds to 1.0 in
    # float32. Under floor (no half added) the same coordinate is plainly interior.
    c = -(0.25 - 2.0**-26)
    assert classes(2, 1, 1.0, c) == ["knife-edge"]
    assert classes(2, 1, 1.0, c, rounding="DECREASING") == ["interior"]


def test_sites_read_the_offsets_swapped_and_have_no_rounding(model):
    """x = (0 - 0.5)/2 + 0.5 = 0.25 under the swapped reading (the literal one would give -0.25, clamped)."""
    params = {"InterpolationMode": "NEAREST_NEIGHBOR", "Scales": [2.0, 1.0], "InputPixelOffsets": [0.5, 0.0],
              "OutputPixelOffsets": [-0.5, 0.0]}
    found = model.sites(params, {"InputGradientTensor": np.zeros((1, 2), np.float16)}, (3, 2))
    assert found == {("FLOAT16", "2", "NEAREST_NEIGHBOR", "interior", "up-pow2", "unequal"),
                     ("FLOAT16", "2", "NEAREST_NEIGHBOR", "integer", "identity", "zero")}


def ruled_out(mode, coordinate, scale, offsets):
    """What the formula x = (o - OPO)/S - IPO itself rules out with zero offsets: x = o/S >= 0 is never clamped low,
    exact for a power of two (never a knife edge), and an integer for 1 and a power-of-two downsample. An exact tie
    o/S = k + 1/2 needs S = 2o/(2k + 1), a dyadic float32: (2k + 1) divides o, so S is an even integer (6, 10, ...,
    up-other) and never below 1; with NEAREST's round half up an inexact one is a knife edge, not a half."""
    if offsets != "zero":
        return False
    exact = scale in ("identity", "up-pow2", "down-pow2")
    integers = scale in ("identity", "down-pow2")
    return (coordinate == "clamped-low" or (exact and coordinate == "knife-edge")
            or (integers and coordinate not in ("integer", "clamped-high"))
            or (mode == "NEAREST_NEIGHBOR" and coordinate == "half" and scale == "down-other"))


@pytest.mark.slow
def test_the_probed_universe_is_all_the_formula_allows(model):
    axes = model.project(model.universe, Interaction(("mode", "coordinate", "scale", "offsets")))
    every = set(itertools.product(MODES, COORDINATES, SCALES, OFFSETS))
    assert axes == {combo for combo in every if not ruled_out(*combo)}
    head = model.project(model.universe, Interaction(("dtype", "rank")))
    assert head == {(dtype, rank) for dtype in ("FLOAT16", "FLOAT32") for rank in "1234"}


@pytest.fixture(scope="module")
def family():
    description = load_description(DESCRIPTION, KINDS)
    pairs_family = next(f for f in description.families if f.kind == "resample-pairs")
    return replace(pairs_family, settings={"candidates": 1000})


def test_candidates_are_small_valid_cases_without_a_rounding_field(model, family):
    rejected = 0
    for index in range(40):
        spec = pairs_candidate(family, Draw(family.seed, index), index, f"c{index}")
        assert spec.op == "RESAMPLE_GRAD" and "RoundingDirection" not in spec.params
        assert {site[:-1] for site in pairs.spec_sites(model, spec)} <= model.universe
        assert max(int(np.prod(t.shape)) for t in (*spec.inputs.values(), spec.output)) <= 1300
        try:
            freeze(spec, "data/check.npz")
        except Rejected:  # unequal offsets whose two readings agree
            rejected += 1
    assert rejected <= 20
