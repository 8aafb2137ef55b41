"""ResampleGrad1's sites: per output coordinate along an axis, how its source coordinate falls (as the reference
treats it), beside the mode, rounding, scale and offsets; the universe the probed axes give; the pairwise candidates
the generator draws from them."""

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
from dmlconform.interactions.resample_grad1 import (
    COORDINATES,
    MODES,
    NONE,
    OFFSETS,
    SCALES,
    ResampleGrad1Model,
    coordinate_classes,
    scale_kind,
)
from dmlconform.ops import _resample_coordinates as coordinates
from dmlconform.ops.resample_grad1 import source_coordinates

DESCRIPTION = Path(__file__).resolve().parents[2] / "dmlconform/generation/descriptions/resample_grad1.yaml"


@pytest.fixture(scope="module")
def model() -> ResampleGrad1Model:
    return ResampleGrad1Model()


def classes(n_in, n_out, scale, offset, mode="NEAREST_NEIGHBOR", rounding="DECREASING"):
    return [COORDINATES[c] for c in coordinate_classes(n_in, n_out, scale, offset, offset, mode, rounding)]


def test_a_knife_edge_is_a_coordinate_the_reference_lets_either_pick_take():
    # x = 0.5/0.33333334 + 0.5 = 1.99999995 (real), which the division rounds to 2 and an H100 computes as 1.9999999.
    x = source_coordinates(1, 0.33333334, -0.5, -0.5).astype(np.float64)
    delta = coordinates.uncertainty(1, 0.33333334, -0.5, -0.5)
    assert coordinates.ambiguous_picks(x, delta, "DECREASING").all()
    assert classes(4, 1, 0.33333334, -0.5) == ["knife-edge"]
    # The same coordinate with one input: both picks clamp onto it, nothing can move.
    assert classes(1, 1, 0.33333334, -0.5) == ["clamped-high"]


def test_exact_coordinates_integers_halves_and_the_clamps():
    # x = o/2 on 2 inputs: 0, 0.5, 1, 1.5, 2, 2.5.
    assert classes(2, 6, 2.0, 0.0) == ["integer", "half", "integer", "half", "clamped-high", "clamped-high"]
    assert classes(2, 6, 2.0, 0.0, rounding="INCREASING") == ["integer", "half", "integer"] + ["clamped-high"] * 3
    assert classes(2, 6, 2.0, 0.0, "LINEAR", NONE) == ["integer", "half", "integer"] + ["clamped-high"] * 3
    # x = o - 1 (offsets 0.5): the first pick is -1.
    assert classes(3, 3, 1.0, 0.5, rounding="INCREASING") == ["clamped-low", "integer", "integer"]


def test_linear_coordinates_are_exact_only_with_a_power_of_two():
    # x = o/0.75: 0, 1.33, 2.67, 4, 5.33. 4 is a float32 value every order gives, so NEAREST_NEIGHBOR's pick is
    # fixed there; LINEAR's weights may move (DirectML's reciprocal, DECISIONS.md §7), and 4 ± Δx spans two pairs.
    assert classes(6, 5, 0.75, 0.0) == ["integer", "interior", "interior", "integer", "interior"]
    assert classes(6, 5, 0.75, 0.0, "LINEAR", NONE) == ["integer", "interior", "interior", "knife-edge",
                                                        "clamped-high"]


def test_sites_read_the_gradients_offsets_as_directml_does(model):
    """Unequal offsets: the coordinates are those of the `swapped` reading (forward input offset = the gradient's
    OutputPixelOffsets): x = (0 - 0.5)/2 + 0.5 = 0.25, where the literal reading's -0.25 would clamp."""
    params = {"InterpolationMode": "NEAREST_NEIGHBOR", "RoundingDirection": "DECREASING", "Scales": [2.0, 1.0],
              "InputPixelOffsets": [0.5, 0.0], "OutputPixelOffsets": [-0.5, 0.0]}
    found = model.sites(params, {"InputGradientTensor": np.zeros((1, 2), np.float16)}, (3, 2))
    assert found == {("FLOAT16", "2", "NEAREST_NEIGHBOR", "DECREASING", "interior", "up-pow2", "unequal"),
                     ("FLOAT16", "2", "NEAREST_NEIGHBOR", "DECREASING", "integer", "identity", "zero")}


def test_scale_kinds():
    assert [scale_kind(s) for s in (1.0, 2.0, np.inf, 1.5, 0.25, 1 / 3)] == [
        "identity", "up-pow2", "up-pow2", "up-other", "down-pow2", "down-other"]


def ruled_out(mode, rounding, coordinate, scale, offsets):
    """What the formula x = (o - OPO)/S - IPO itself rules out."""
    if (mode == "LINEAR") != (rounding == NONE):
        return True
    if offsets != "zero":
        return False
    # Zero offsets: x = o/S >= 0, never clamped low; o/S is exact for a power of two, never a knife edge; o for 1
    # and o·2^k when down by a power of two are integers.
    exact = scale in ("identity", "up-pow2", "down-pow2")
    integers = scale in ("identity", "down-pow2")
    return (coordinate == "clamped-low" or (exact and coordinate == "knife-edge")
            or (integers and coordinate not in ("integer", "clamped-high")))


@pytest.mark.slow
def test_the_probed_universe_is_all_the_formula_allows(model):
    axes = model.project(model.universe, Interaction(("mode", "rounding", "coordinate", "scale", "offsets")))
    every = set(itertools.product(MODES, ("DECREASING", "INCREASING", NONE), COORDINATES, SCALES, OFFSETS))
    assert axes == {combo for combo in every if not ruled_out(*combo)}
    head = model.project(model.universe, Interaction(("dtype", "rank")))
    assert head == {(dtype, rank) for dtype in ("FLOAT16", "FLOAT32") for rank in "1234"}


@pytest.fixture(scope="module")
def family():
    description = load_description(DESCRIPTION, KINDS)
    return replace(description.families[0], name="pairs", kind="resample-pairs", seed=5700,
                   settings={"candidates": 400})


def test_candidates_are_small_valid_cases_whose_sites_are_possible(model, family):
    rejected = 0
    for index in range(40):
        spec = pairs_candidate(family, Draw(family.seed, index), index, f"c{index}")
        assert {site[:-1] for site in pairs.spec_sites(model, spec)} <= model.universe
        assert max(int(np.prod(t.shape)) for t in (*spec.inputs.values(), spec.output)) <= 1300
        try:
            freeze(spec, "data/check.npz")
        except Rejected:  # unequal offsets whose two readings agree
            rejected += 1
    assert rejected <= 20
