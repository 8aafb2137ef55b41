"""AveragePoolingGrad's sites: per window, where it lies, its divisor and its gradient's class, beside the case's
IncludePadding, windows, gradient size and padding; the universe the single-axis geometries give; the pairwise
candidates the generator draws over them."""

from pathlib import Path

import numpy as np
import pytest

from dmlconform.generation.description import load_description
from dmlconform.generation.draw import Draw
from dmlconform.generation.families import KINDS
from dmlconform.generation.families.average_pooling import pairs_candidate
from dmlconform.generation.freeze import Rejected, freeze
from dmlconform.generation.spec import REFUSED
from dmlconform.interactions.average_pooling_grad import AveragePoolingGradModel
from dmlconform.interactions.model import Interaction

DESCRIPTION = Path(__file__).resolve().parents[2] / "dmlconform/generation/descriptions/average_pooling_grad.yaml"


@pytest.fixture(scope="module")
def model() -> AveragePoolingGradModel:
    return AveragePoolingGradModel()


def sites(model, dy, dx_spatial, window, strides=None, start=None, end=None, include=False):
    dims = len(window)
    params = {"WindowSize": window, "Strides": strides or window, "StartPadding": start or [0] * dims,
              "EndPadding": end or [0] * dims, "IncludePadding": include}
    return model.sites(params, {"InputGradientTensor": dy}, (*dy.shape[:2], *dx_spatial))


def test_the_pages_example_is_one_kind_of_window(model):
    dy = np.array([[1, 2], [3, 4]], np.float32).reshape(1, 1, 2, 2)
    assert sites(model, dy, (3, 3), [2, 2], [1, 1]) == {
        ("FLOAT32", "4", "false", "inside", "power-of-two", "normal", "overlapping", "pooled", "none")}


def test_places_divisors_and_gradient_classes(model):
    """Width 3, window 2, stride 2, padding 2 and 2, IncludePadding FALSE: window 0 lies in the padding (divisor 0),
    window 1 inside (2), window 2 half in the end padding (1); a NaN, an infinity and a normal gradient."""
    dy = np.array([np.nan, np.inf, 5], np.float32).reshape(1, 1, 1, 3)
    found = sites(model, dy, (1, 3), [1, 2], [1, 2], [0, 2], [0, 2])
    assert {(s[3], s[4], s[5]) for s in found} == {("outside", "0", "nan"), ("inside", "power-of-two", "infinity"),
                                                   ("beside-end", "1", "normal")}
    assert {s[6:] for s in found} == {("apart", "pooled", "symmetric")}


def test_a_window_past_the_padded_input_and_its_clipped_divisor(model):
    """Width 7, window 4, stride 3, EndPadding 1, dY of 3: window 2 runs past the padded input; with IncludePadding
    its divisor is its 2 positions inside [0, 8) (the reference's reading)."""
    dy = np.array([1, 2, 3], np.float32).reshape(1, 1, 1, 3)
    found = sites(model, dy, (1, 7), [1, 4], [1, 3], [0, 0], [0, 1], include=True)
    assert ("past-padded-end", "power-of-two") in {(s[3], s[4]) for s in found}
    assert {s[7:] for s in found} == {("larger", "asymmetric")}
    assert {s[6] for s in found} == {"overlapping"}


def test_gapped_windows_and_a_divisor_that_rounds(model):
    dy = np.ones((1, 1, 2, 2), np.float16)
    found = sites(model, dy, (7, 7), [3, 1], [4, 2])
    assert {(s[3], s[4], s[6]) for s in found} == {("inside", "other", "gapped")}


def test_refusable_sites_count_only_where_a_refusable_feature_is(model):
    """A window past the padded input is in refusable cases only: (include-padding, divisor) does not hold
    IncludePadding TRUE with a divisor of 0, which only such a window has; (place, divisor) does."""
    assert ("true", "0") not in model.possible(Interaction(("include-padding", "divisor")))
    assert ("past-padded-end", "0") not in model.possible(Interaction(("place", "divisor")))
    assert ("outside", "0") in model.possible(Interaction(("place", "divisor")))
    assert ("true", "past-padded-end", "power-of-two") in model.possible(
        Interaction(("include-padding", "place", "divisor")))


def test_the_universe_holds_what_the_bundled_hand_written_cases_exercise(model):
    from dmlconform.interactions.registry import case_sites
    from dmlconform.suite.loader import load_paths

    suites = Path(__file__).resolve().parents[2] / "test_vectors" / "average_pooling_grad"
    cases = [case for case in load_paths([suites]) if not case.expect_invalid]
    assert cases
    for case in cases:
        for site in case_sites(model, case):
            model.check_site(site)
            assert site[:-1] in model.universe, (case.full_id, site)


@pytest.fixture(scope="module")
def family():
    description = load_description(DESCRIPTION, KINDS)
    return next(f for f in description.families if f.kind == "avgpool-pairs")


def test_candidates_are_small_valid_cases_whose_sites_are_possible(model, family):
    frozen = refused = 0
    for index in range(40):
        spec = pairs_candidate(family, Draw(family.seed, index), index, f"c{index}")
        arrays = {name: tensor.array for name, tensor in spec.inputs.items()}
        for site in model.sites(spec.params, arrays, spec.output.shape):
            assert site in model.universe, site
        assert int(np.prod(spec.output.shape)) <= 3 * 6**3
        refused += REFUSED in spec.candidates.values()
        try:
            freeze(spec, "data/x.npz")
            frozen += 1
        except Rejected:
            pass
    assert frozen >= 30 and 0 < refused < 40
