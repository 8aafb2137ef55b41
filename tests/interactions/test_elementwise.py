"""ReluGrad's, ClipGrad1's and ClipGrad (v0)'s sites: X's class (the clips: its place against the bounds) beside dY's,
per element."""

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


def test_clip_grad_v0_places_x_against_the_bounds_as_the_type_holds_them():
    from dmlconform.interactions.elementwise import ClipGradModel

    model = ClipGradModel()
    x = np.array([-4, -3, -2, 0, 3, 4], np.int32)
    dy = np.arange(1, 7, dtype=np.int32)
    inputs = {"InputTensor": x, "InputGradientTensor": dy}
    # Min -2.5 and Max 3.5 are -2 and 3 in INT32 (DirectML's conversion): X = -2 is at Min, 3 at Max.
    found = model.sites({"Min": -2.5, "Max": 3.5}, inputs, (6,))
    assert {site[2] for site in found} == {"fractional"}
    assert {site[3] for site in found} == {"below", "at-min", "inside", "at-max", "above"}
    beyond = model.sites({"Min": -2.0, "Max": 1e10}, inputs, (6,))  # Max is INT32's largest: nothing above it
    assert {site[2] for site in beyond} == {"beyond-type"} and {site[3] for site in beyond} == {"below", "at-min",
                                                                                                "inside"}
    assert {site[2] for site in model.sites({"Min": -2147483648.0, "Max": 3.0}, inputs, (6,))} == {"at-type-edge"}
    assert {site[2] for site in model.sites({"Min": -2.0, "Max": 3.0}, inputs, (6,))} == {"ordinary"}
    assert model.sites({"Min": float("nan"), "Max": 3.0}, inputs, (6,)) == set()  # outside the model
    assert model.sites({"Min": 3.7, "Max": 3.2}, inputs, (6,)) == set()  # 3 and 3: nothing inside
    half = np.array([1.0, 2.0, 2.001953125], np.float16)
    sites = model.sites({"Min": 0.99995, "Max": 2.0015},
                        {"InputTensor": half, "InputGradientTensor": np.ones(3, np.float16)}, (3,))
    assert {site[3] for site in sites} == {"at-min", "inside", "at-max"} and {site[2] for site in sites} == {
        "fractional"}
    kinds = {site[2] for site in model.universe if site[0] == "FLOAT32"}
    assert kinds == {"ordinary", "at-type-edge"}
    assert {site[2] for site in model.universe if site[0] == "UINT64"} == {"ordinary", "at-type-edge", "fractional",
                                                                        "beyond-type"}
