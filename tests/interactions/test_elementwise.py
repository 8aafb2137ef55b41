"""ReluGrad's and ClipGrad1's sites: X's class (ClipGrad1: its place against the bounds) beside dY's, per element."""

import numpy as np

from dmlconform.interactions.elementwise import ClipGrad1Model, ReluGradModel
from dmlconform.interactions.value_classes import classify


def test_value_classes():
    f32 = np.array([np.nan, -np.inf, -3, -0.0, 0.0, 1e-40, np.finfo(np.float32).max, 2], dtype=np.float32)
    assert list(classify(f32)) == ["nan", "-inf", "-normal", "-0", "+0", "+denormal", "+max", "+normal"]
    assert list(classify(np.array([-128, -3, 0, 5, 127], np.int8))) == ["min", "negative", "0", "positive", "max"]
    assert list(classify(np.array([0, 5, 255], np.uint8))) == ["0", "positive", "max"]


def test_relu_pairs_x_and_dy_at_the_same_element_only():
    x = np.array([[-0.0, 1.0]], np.float16)
    dy = np.array([[np.inf, 2.0]], np.float16)
    found = ReluGradModel().sites({}, {"InputTensor": x, "InputGradientTensor": dy}, (1, 2))
    assert found == {("FLOAT16", "2", "-0", "+inf"), ("FLOAT16", "2", "+normal", "+normal")}


def test_clip_places_x_against_the_bounds():
    x = np.array([-5, 1, 2, 3, 7, 9], np.int32)
    dy = np.array([1, 2, 3, 4, 5, 6], np.int32)
    found = ClipGrad1Model().sites({"Min": 1, "Max": 7}, {"InputTensor": x, "InputGradientTensor": dy}, (6,))
    assert {site[3] for site in found} == {"below", "at-min", "inside", "at-max", "above"}
    assert {site[2] for site in found} == {"ordinary"}
    edge = ClipGrad1Model().sites({"Min": 1, "Max": 2**31 - 1}, {"InputTensor": x, "InputGradientTensor": dy}, (6,))
    assert {site[2] for site in edge} == {"at-type-edge"}
    assert ClipGrad1Model().sites({"Min": 7, "Max": 1}, {"InputTensor": x, "InputGradientTensor": dy}, (6,)) == set()
