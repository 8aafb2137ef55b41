"""MaxPoolingGrad's sites: per window, its maximum's class and place, its first tap's class, NaN, ties and padding,
beside the case's dilation, overlap and gradient size; the universe the enumerated windows give; the pairwise
candidates the generator draws over them."""

import itertools
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from dmlconform.generation.description import load_description
from dmlconform.generation.draw import Draw
from dmlconform.generation.families import KINDS, pairs
from dmlconform.generation.families.pooling import pairs_candidate
from dmlconform.generation.freeze import Rejected, freeze
from dmlconform.interactions.max_pooling_grad import (
    ENUMERATED_TAPS,
    NONE,
    MaxPoolingGradModel,
    WindowScan,
    content_names,
    enumerated_windows,
    lowest_windows,
    representatives,
    window_choices,
)
from dmlconform.interactions.model import Interaction

LOWEST = float(np.finfo(np.float32).min)
DESCRIPTION = Path(__file__).resolve().parents[2] / "dmlconform/generation/descriptions/max_pooling_grad.yaml"


@pytest.fixture(scope="module")
def model() -> MaxPoolingGradModel:
    return MaxPoolingGradModel()


def sites(model, x, dy_spatial, window, strides=None, start=None, end=None, dilations=None):
    dims = x.ndim - 2
    params = {"WindowSize": window, "Strides": strides or window, "StartPadding": start or [0] * dims,
              "EndPadding": end or [0] * dims, "Dilations": dilations or [1] * dims}
    dy = np.ones((*x.shape[:2], *dy_spatial), x.dtype)
    return model.sites(params, {"InputTensor": x, "InputGradientTensor": dy}, x.shape)


def test_the_window_directml_routes_wrongly_is_its_own_site(model):
    """(−∞, −FLT_MAX): the maximum −FLT_MAX at the last tap, the first tap −∞ (DECISIONS.md §7); reversed, the
    maximum is the first tap, which DirectML's running maximum gets right."""
    x = np.array([-np.inf, LOWEST, LOWEST, -np.inf], np.float32).reshape(1, 1, 1, 4)
    assert sites(model, x, (1, 2), [1, 2]) == {
        ("FLOAT32", "4", "-max", "last", "-inf", "no", "once", "inside", "1", "apart", "pooled"),
        ("FLOAT32", "4", "-max", "first", "-max", "no", "once", "inside", "1", "apart", "pooled")}


def test_the_windows_directml_routes_to_their_first_tap():
    """Nothing above −FLT_MAX and the maximum at a later tap: DirectML's running maximum never moves off the first
    tap; elsewhere it picks what the reference picks."""
    windows = [(-np.inf, LOWEST), (np.nan, -np.inf), (-np.inf, np.nan, LOWEST), (LOWEST, -np.inf), (-np.inf, np.nan, 5),
               (np.nan, np.nan), (-np.inf, -np.inf)]
    scan = WindowScan((len(windows),), np.dtype(np.float32))
    for tap in range(3):
        values = np.array([w[tap] if tap < len(w) else 0 for w in windows], np.float32)
        scan.tap(values, np.array([tap < len(w) for w in windows]))
    assert lowest_windows(scan.contents()).tolist() == [True, True, True, False, False, False, False]


def test_nan_ties_and_padding_before_the_window(model):
    # Window 4 with one tap of start padding: in-input taps (2, NaN, 2) in a 5-D case.
    x = np.array([2, np.nan, 2], np.float16).reshape(1, 1, 1, 1, 3)
    assert sites(model, x, (1, 1, 1), [1, 1, 4], start=[0, 0, 1]) == {
        ("FLOAT16", "5", "+normal", "first", "+normal", "yes", "tied", "beside-start", "1", "apart", "pooled")}


def test_padding_only_windows_and_a_larger_gradient(model):
    x = np.array([-0.0, 3], np.float32).reshape(1, 1, 1, 2)
    found = sites(model, x, (1, 3), [1, 1])  # the third window lies past the input
    assert found == {("FLOAT32", "4", "-0", "only", "-0", "no", "once", "inside", "1", "apart", "larger"),
                     ("FLOAT32", "4", "+normal", "only", "+normal", "no", "once", "inside", "1", "apart", "larger"),
                     ("FLOAT32", "4", NONE, NONE, NONE, "no", NONE, "only", "1", "apart", "larger")}


def test_dilated_overlapping_windows_a_smaller_gradient_and_padding_on_both_sides(model):
    x = np.array([1, -np.inf, 5, np.inf], np.float32).reshape(1, 1, 1, 4)
    # Taps o - 1 and o + 1 (dilation 2, start padding 1): windows 0..2 of the pooled 4, the last one dropped.
    found = sites(model, x, (1, 3), [1, 2], strides=[1, 1], start=[0, 1], end=[0, 1], dilations=[1, 2])
    assert {site[2:8] for site in found} == {("-inf", "only", "-inf", "no", "once", "beside-start"),  # (pad, −∞)
                                             ("+normal", "last", "+normal", "no", "once", "inside"),  # (1, 5)
                                             ("+inf", "last", "-inf", "no", "once", "inside")}  # (−∞, ∞)
    assert {site[8:] for site in found} == {("2+", "overlapping", "smaller")}
    wide = sites(model, x[..., :1], (1, 1), [1, 3], start=[0, 1], end=[0, 1])
    assert {site[7] for site in wide} == {"beside-both"}


def test_the_scan_reads_taps_in_row_major_order(model):
    # A 2x2 window: the maximum at the second row's first tap is the third tap of four: `middle`.
    x = np.array([[1, 2], [7, 3]], np.float32).reshape(1, 1, 2, 2)
    assert {site[2:7] for site in sites(model, x, (1, 1), [2, 2])} == {("+normal", "middle", "+normal", "no", "once")}


@pytest.mark.slow
def test_every_bundled_style_of_window_is_possible(model):
    """The universe: what the enumerated windows allow, and nothing the scan rules out."""
    universe = model.universe
    content = model.project(universe, Interaction(("maximum", "where", "first", "nan", "ties")))
    assert ("-max", "last", "-inf", "no", "once") in content and ("-max", "middle", "-inf", "yes", "once") in content
    assert not any(where == "last" and ties == "tied" for _, where, _, _, ties in content)  # ties go to the first
    # With no NaN, nothing is below −∞: a −∞ maximum is the first tap.
    assert {where for maximum, where, _, nan, _ in content if maximum == "-inf" and nan == "no"} == {"only", "first"}
    padding = model.project(universe, Interaction(("maximum", "first", "padding")))
    assert {(m, f) for m, f, p in padding if p == "only"} == {(NONE, NONE)}
    # A window wholly in the input that is dilated or overlaps another spans two taps.
    shape = model.project(universe, Interaction(("where", "padding", "dilation", "windows")))
    assert ("only", "inside", "1", "apart") in shape and ("only", "inside", "2+", "apart") not in shape
    assert ("only", "beside-end", "2+", "overlapping") in shape


@pytest.mark.slow
def test_four_taps_show_every_window_content():
    """No window of ENUMERATED_TAPS + 1 taps holds a content the enumerated ones lack."""
    _, values = representatives()
    taps = ENUMERATED_TAPS + 1
    reps = np.array(list(itertools.product(range(values.size), repeat=taps)))
    scan = WindowScan((reps.shape[0],), values.dtype)
    for tap in range(taps):
        scan.tap(values[reps[:, tap]], np.ones(reps.shape[0], dtype=bool))
    longer = {content_names(row) for row in np.unique(scan.contents(), axis=0).tolist()}
    assert longer <= set(enumerated_windows().names())


def test_window_choices_keep_the_bug_in_the_lowest_cases():
    table = enumerated_windows()
    names = np.array(table.names(), dtype=object)
    plain = window_choices(3, True, True, False)
    assert not any(n[0] in ("-inf", "-max") and n[1] in ("middle", "last") for n in names[plain.rows])
    assert ("-inf", "first", "-inf", "yes", "tied") in {tuple(n) for n in names[plain.rows]}
    lowest = window_choices(3, True, False, True)
    assert {n[0] for n in names[lowest.rows]} <= {"-inf", "-max", NONE}
    assert all(n[3] == "yes" for n in names[lowest.rows])
    assert ("-max", "middle", "-inf", "yes", "once") in {tuple(n) for n in names[lowest.rows]}


@pytest.fixture(scope="module")
def family():
    description = load_description(DESCRIPTION, KINDS)
    return replace(description.families[0], name="pairs", kind="pool-pairs", seed=4700, settings={"candidates": 400})


def test_candidates_are_small_valid_cases_whose_sites_are_possible(model, family):
    rejected = 0
    for index in range(24):
        spec = pairs_candidate(family, Draw(family.seed, index), index, f"c{index}")
        assert {site[:-1] for site in pairs.spec_sites(model, spec)} <= model.universe
        assert sum(int(np.prod(t.shape)) for t in (*spec.inputs.values(), spec.output)) <= 12000
        try:
            freeze(spec, "data/check.npz")
        except Rejected:
            rejected += 1
    assert rejected <= 6
