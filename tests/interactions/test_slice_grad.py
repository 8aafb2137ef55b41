"""SliceGrad's sites: each axis's kind beside its outer neighbour's."""

import numpy as np

from dmlconform.interactions.slice_grad import NONE, SliceGradModel, axis_kind, axis_kinds


def sites(dx, offsets, sizes, strides, dy_shape, dtype=np.float32):
    params = {"InputWindowOffsets": offsets, "InputWindowSizes": sizes, "InputWindowStrides": strides}
    return SliceGradModel().sites(params, {"InputGradientTensor": np.zeros(dy_shape, dtype)}, tuple(dx))


def test_axis_kinds():
    assert axis_kind(1, 0, 1, -2, 1) == "unit/backward/s2+/all"
    assert axis_kind(5, 0, 5, 1, 5) == "whole/forward/s1/all"
    assert axis_kind(5, 0, 5, 1, 3) == "whole/forward/s1/fewer"
    assert axis_kind(5, 1, 4, -2, 2) == "partial/backward/s2+/all"  # reach 1 + 3 // 2 = 2
    assert axis_kind(5, 0, 4, 3, 1) == "partial/forward/s2+/fewer"
    assert len(set(axis_kinds())) == 20


def test_directmls_merged_axes_are_one_site_whole_fewer_inside_forward_stride_one():
    found = sites((3, 5), [1, 0], [2, 5], [1, 1], (2, 2))
    assert found == {("FLOAT32", "2", "partial/forward/s1/all", NONE),
                     ("FLOAT32", "2", "whole/forward/s1/fewer", "partial/forward/s1/all")}


def test_every_site_of_a_case_is_possible_and_rank_one_has_no_outer():
    model = SliceGradModel()
    assert sites((4,), [0], [4], [-1], (4,), np.int8) <= model.universe
    assert not any(site[1] == "1" and site[3] != NONE for site in model.universe)
