"""The torch backend: device choice, every bundled case, the semantics that PyTorch's own operators get wrong for
DirectML (and how the backend avoids them), random sweeps against the reference, failure paths. CUDA tests run
where torch sees a GPU and skip cleanly elsewhere (CI has none)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

torch = pytest.importorskip("torch")

from dmlconform.backends import create_backend  # noqa: E402
from dmlconform.backends import torch_backend as tb  # noqa: E402
from dmlconform.backends.base import BackendOptions, Outcome, OutcomeKind  # noqa: E402
from dmlconform.backends.torch_grads import resample_grad1 as torch_resample  # noqa: E402
from dmlconform.case import Case  # noqa: E402
from dmlconform.case_result import Status  # noqa: E402
from dmlconform.cli import main  # noqa: E402
from dmlconform.compare.agreement import agreement  # noqa: E402
from dmlconform.compare.tolerance import Tolerance  # noqa: E402
from dmlconform.dtypes import DataType  # noqa: E402
from dmlconform.feature_levels import HIGHEST  # noqa: E402
from dmlconform.ops import OPERATORS  # noqa: E402
from dmlconform.ops.base import Description, TensorDesc  # noqa: E402
from dmlconform.runner import run_case, run_cases  # noqa: E402
from tests.ops.random_pooling import random_geometry  # noqa: E402

CUDA = torch.cuda.is_available()
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not CUDA, reason="no CUDA device (CI has none)"))]


def make_case(op_name: str, params: dict[str, Any], inputs: dict[str, np.ndarray], out_shape: tuple[int, ...],
              variant: str | None = None) -> Case:
    """A case whose golden is the reference's answer (its `variant` where given)."""
    op = OPERATORS[op_name]
    dtype = DataType.from_numpy(next(iter(inputs.values())).dtype)
    tensors = {name: TensorDesc(dtype, tuple(array.shape)) for name, array in inputs.items()}
    tensors[op.outputs[0]] = TensorDesc(dtype, tuple(out_shape))
    desc = Description(op, op.parse_params(params, dtype), tensors)
    case = Case("t", "c", Path("t.yaml"), desc, inputs)
    case.expected = op.reference(desc, inputs, variant).outputs
    return case


def torch_output(case: Case, device: str = "cpu", variant: str | None = None) -> np.ndarray:
    outcome = create_backend("torch", BackendOptions(device=device, variant=variant)).run(case)
    assert outcome.kind is OutcomeKind.OUTPUTS, outcome.message
    return outcome.outputs["OutputGradientTensor"]


def status_on_torch(case: Case, device: str = "cpu", variant: str | None = None) -> Status:
    backend = create_backend("torch", BackendOptions(device=device, variant=variant))
    return run_case(case, backend, HIGHEST).status


# -- device choice and start-up ----------------------------------------------------------------------------
@pytest.mark.parametrize("requested,available,count,expected", [
    ("cpu", False, 0, "cpu"), ("CPU", True, 2, "cpu"), ("cuda", True, 1, "cuda:0"), ("cuda:1", True, 2, "cuda:1"),
])
def test_choose_device(requested, available, count, expected):
    assert tb.choose_device(requested, available, count) == expected


@pytest.mark.parametrize("requested,available,count,message", [
    ("gpu", True, 1, "unknown"), ("cpu:0", False, 0, "no index"), ("cuda", False, 0, "no usable CUDA device"),
    ("cuda:2", True, 2, "numbered 0 to 1"), ("cuda:x", True, 1, "unknown"),
])
def test_choose_device_refuses_with_one_line(requested, available, count, message):
    with pytest.raises(RuntimeError, match=message) as error:
        tb.choose_device(requested, available, count)
    assert "\n" not in str(error.value)


def test_variants_other_than_the_offsets_are_refused():
    with pytest.raises(RuntimeError, match="only swapped, literal, "):
        create_backend("torch", BackendOptions(variant="nan-zero"))


def test_resample_grad_v0_readings_are_variants_torch_follows():
    """ResampleGrad (v0)'s readings are the torch realisation's too: a variant names them, and the fingerprint says
    which one the backend follows; ResampleGrad1 reads a v0-only name as its default."""
    backend = create_backend("torch", BackendOptions(variant="literal+half-even"))
    assert backend.readings["resample-offset-convention"] == "literal"
    assert backend.readings["resample-v0-nearest-rounding"] == "half-even"
    assert create_backend("torch", BackendOptions()).readings["resample-v0-nearest-rounding"] == "half-up"
    import torch

    from dmlconform.backends.torch_grads import realise
    from dmlconform.ops import find_operator
    from tests.ops.conftest import make_description

    params = {"InterpolationMode": "NEAREST_NEIGHBOR", "Scales": [4.0], "InputPixelOffsets": [0.0],
              "OutputPixelOffsets": [0.0]}
    desc = make_description("RESAMPLE_GRAD", params, "FLOAT32", InputGradientTensor=(8,), OutputGradientTensor=(3,))
    dy = {"InputGradientTensor": (2.0 ** np.arange(8)).astype(np.float32)}  # x = o/4: quarters and ties
    for name in ("swapped", "floor", "ceil", "half-down", "half-even"):
        expected = find_operator("RESAMPLE_GRAD").reference(desc, dy, name).outputs["OutputGradientTensor"]
        assert realise(desc, dy, torch.device("cpu"), name).tolist() == expected.tolist(), name


def test_missing_torch_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(RuntimeError, match=r'pip install "dmlconform\[torch\]"'):
        create_backend("torch", BackendOptions())


def test_importing_the_backend_does_not_import_torch():
    code = ("import sys\nimport dmlconform.backends.torch_backend\nfrom dmlconform.backends import backend_names\n"
            "backend_names()\nprint('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_info_names_torch_and_the_device():
    info = create_backend("torch", BackendOptions()).info()
    assert info.name == "torch" and info.version.startswith(f"torch {torch.__version__}")
    assert info.device.startswith("cpu (") and info.feature_level is HIGHEST
    assert info.extra["offsets"] == "swapped" and "maxpool-nan-input=nan-wins-last" in info.extra["readings"]


# -- the bundled suites ------------------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.slow
@pytest.mark.tier_scan
def test_every_scanned_case_comes_out_as_on_the_reference(scanned_cases, device):
    """Every case of the scanned tier: smoke in the test command, standard in .ci/run's scan step. A valid case with a
    memory layout is compared on its packed description (the same logical answer, as crosscheck does); a negative one
    keeps its layout, which torch cannot express: SKIPPED, never run as something else. AveragePoolingGrad cases avg_pool
cannot pad or size are NOT_SUPPORTED."""
    from dmlconform.runner.crosscheck import logical_case

    cases = [logical_case(case) for case in scanned_cases]
    backend = create_backend("torch", BackendOptions(device=device))
    reference = create_backend("numpy", BackendOptions())
    on_torch = {r.id: r.status for r in run_cases(cases, backend, HIGHEST).results}
    on_numpy = {r.id: r.status for r in run_cases(cases, reference, HIGHEST).results}
    unexpressed = {case.full_id for case in cases if case.description.has_layouts}
    assert {case_id for case_id, status in on_torch.items() if status is Status.SKIPPED} == unexpressed
    # avg_pool's padding and sizes cannot express every AveragePoolingGrad case (torch_grads/average_pooling_grad.py):
    # those are NOT_SUPPORTED, and no other operator's.
    unsupported = {k for k, v in on_torch.items() if v is Status.NOT_SUPPORTED}
    assert {case.op.name for case in cases if case.full_id in unsupported} <= {"AVERAGE_POOLING_GRAD"}
    assert {k: v for k, v in on_torch.items() if k not in unexpressed | unsupported} == \
        {k: v for k, v in on_numpy.items() if k not in unexpressed | unsupported}
    assert set(on_torch.values()) <= {Status.PASS, Status.INVALID_OK, Status.SKIPPED, Status.NOT_SUPPORTED}


def test_invalid_descriptions_are_refused():
    dy = np.ones((2, 2), np.float32)
    case = make_case("SLICE_GRAD", {"InputWindowOffsets": [0, 0], "InputWindowSizes": [2, 2],
                                    "InputWindowStrides": [0, 1]}, {"InputGradientTensor": dy}, (2, 2))
    outcome = create_backend("torch", BackendOptions()).run(case)
    assert outcome.kind is OutcomeKind.REFUSED and "InputWindowStrides[0]" in outcome.message


# -- ClipGrad1: strict bounds, which torch.clamp's gradient does not have -------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_clip_gradient_is_zero_at_both_bounds(device, dtype):
    x = np.array([-1.0, -0.5, 0.0, 2.0, 2.5, np.nan], dtype)
    dy = np.array([1, 2, 3, 4, 5, 6], dtype)
    case = make_case("ELEMENT_WISE_CLIP_GRAD1", {"Min": -1.0, "Max": 2.0},
                     {"InputTensor": x, "InputGradientTensor": dy}, x.shape)
    out = torch_output(case, device)
    np.testing.assert_array_equal(out, np.array([0, 2, 3, 0, 0, 6], dtype))  # NaN passes, as the pages' formula
    # torch.clamp would pass the gradient at the bounds: the realisation has to avoid it.
    xt = torch.from_numpy(x).requires_grad_()
    torch.clamp(xt, -1.0, 2.0).backward(torch.from_numpy(dy))
    assert xt.grad[0] == 1 and xt.grad[3] == 4


def test_clip_min_above_max_zeroes_every_number():
    x = np.array([-3.0, 0.0, 1.5, 3.0, np.nan], np.float32)
    dy = np.full(5, 7.0, np.float32)
    case = make_case("ELEMENT_WISE_CLIP_GRAD1", {"Min": 2.0, "Max": 1.0},
                     {"InputTensor": x, "InputGradientTensor": dy}, x.shape)
    np.testing.assert_array_equal(torch_output(case), np.array([0, 0, 0, 0, 7], np.float32))


@pytest.mark.parametrize("dtype,low,high,values", [
    (np.int64, 2**62, 2**63 - 2, [2**62, 2**62 + 1, 2**63 - 2, 2**63 - 1, -(2**63)]),
    (np.uint64, 2**63, 2**64 - 2, [2**63, 2**63 + 1, 2**64 - 2, 2**64 - 1, 0]),
    (np.uint32, 2**31, 2**32 - 2, [2**31, 2**31 + 1, 2**32 - 2, 2**32 - 1, 5]),
    (np.uint16, 2**15, 2**16 - 2, [2**15, 2**15 + 1, 2**16 - 2, 2**16 - 1, 5]),
    (np.int8, -128, 126, [-128, -127, 126, 127, 0]),
])
def test_clip_integers_compare_exactly_at_the_type_limits(dtype, low, high, values):
    x = np.array(values, dtype)
    dy = np.array([11, 12, 13, 14, 15], dtype)
    case = make_case("ELEMENT_WISE_CLIP_GRAD1", {"Min": low, "Max": high},
                     {"InputTensor": x, "InputGradientTensor": dy}, x.shape)
    out = torch_output(case)
    inside = [False, True, False, False, low < int(values[4]) < high]
    np.testing.assert_array_equal(out, np.where(inside, dy, 0).astype(dtype))


# -- ReluGrad and SliceGrad ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int32, np.int16, np.int8])
def test_relu_select_never_multiplies(dtype):
    if np.dtype(dtype).kind == "f":
        x = np.array([-1.0, -0.0, 0.0, 1.0, -2.0, 3.0], dtype)
        dy = np.array([np.nan, np.inf, -np.inf, 4.0, np.nan, -0.0], dtype)
        expected = np.array([0, 0, 0, 4, 0, -0.0], dtype)
    else:
        info = np.iinfo(dtype)
        x = np.array([info.min, -1, 0, 1, info.max, 0], dtype)
        dy = np.array([1, 2, 3, info.min, info.max, 6], dtype)
        expected = np.array([0, 0, 0, info.min, info.max, 0], dtype)
    case = make_case("ACTIVATION_RELU_GRAD", {}, {"InputTensor": x, "InputGradientTensor": dy}, x.shape)
    out = torch_output(case)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out.view(f"u{out.itemsize}"), expected.view(f"u{out.itemsize}"))


def slice_windows(extent: int):
    """Every valid one-dimensional window of a dimension of `extent`: (offset, size, stride, count)."""
    for size in range(1, extent + 1):
        for offset in range(extent - size + 1):
            for stride in (-3, -2, -1, 1, 2, 3):
                for count in range(1, 2 + (size - 1) // abs(stride)):
                    yield offset, size, stride, count


@pytest.mark.parametrize("dtype", [np.float16, np.float64, np.uint64, np.uint32, np.uint16, np.int8])
def test_slice_grad_every_rank1_window_and_a_rank8_one_match_the_reference_bit_for_bit(dtype):
    rng = np.random.default_rng(41)
    windows = [([o], [s], [t], [c], [5]) for o, s, t, c in slice_windows(5)]
    windows.append(([0, 1, 0, 2, 0, 0, 1, 0], [2, 2, 3, 1, 2, 3, 1, 2], [1, -1, 2, -3, -2, 1, 1, -1],
                    [2, 2, 2, 1, 1, 3, 1, 2], [2, 3, 3, 3, 2, 3, 2, 2]))
    for offsets, sizes, strides, counts, dx in windows:
        if np.dtype(dtype).kind == "f":
            dy = rng.normal(size=counts).astype(dtype)
        else:
            info = np.iinfo(dtype)
            dy = rng.integers(info.min, info.max, size=counts, endpoint=True, dtype=dtype)
        case = make_case("SLICE_GRAD", {"InputWindowOffsets": offsets, "InputWindowSizes": sizes,
                                        "InputWindowStrides": strides}, {"InputGradientTensor": dy}, tuple(dx))
        out = torch_output(case)
        np.testing.assert_array_equal(out.view(f"u{out.itemsize}"),
                                      case.expected["OutputGradientTensor"].view(f"u{out.itemsize}"))


# -- MaxPoolingGrad: windows torch's pooling parameters cannot describe ------------------------------------------
POOL = {"Strides": [1, 1], "WindowSize": [2, 2], "StartPadding": [0, 0], "EndPadding": [0, 0], "Dilations": [1, 1]}


def test_padding_never_wins_over_minus_infinity():
    """A window that starts in padding and holds a real -inf must route to the -inf, not to the padding."""
    x = np.full((1, 1, 2, 2), -np.inf, np.float32)
    p = {**POOL, "StartPadding": [1, 1], "EndPadding": [1, 1]}
    dy = np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)
    case = make_case("MAX_POOLING_GRAD", p, {"InputTensor": x, "InputGradientTensor": dy}, x.shape)
    out = torch_output(case)
    assert out.sum() == dy.sum()  # every window holds a real tap, so every gradient lands on X
    assert status_on_torch(case) is Status.PASS


def test_padding_larger_than_half_the_window_asymmetric_and_beyond_the_pooled_size():
    x = np.arange(12, dtype=np.float32).reshape(1, 1, 3, 4)[:, :, ::-1].copy()
    p = {"Strides": [2, 1], "WindowSize": [2, 3], "StartPadding": [2, 0], "EndPadding": [0, 3], "Dilations": [1, 2]}
    dy = np.ones((1, 1, 4, 5), np.float32)  # larger than the pooled [2, 4] size: the extra windows read padding
    case = make_case("MAX_POOLING_GRAD", p, {"InputTensor": x, "InputGradientTensor": dy}, x.shape)
    assert status_on_torch(case) is Status.PASS
    with pytest.raises(RuntimeError):  # what torch's own padding parameter refuses
        torch.nn.functional.max_pool2d(torch.from_numpy(x), [2, 3], [2, 1], [2, 0], [1, 2])


def test_nan_reading_is_torchs_last_nan():
    x = np.array([[[[np.nan, 1.0], [np.nan, 0.0]]]], np.float32)
    dy = np.array([[[[5.0]]]], np.float32)
    case = make_case("MAX_POOLING_GRAD", POOL, {"InputTensor": x, "InputGradientTensor": dy}, x.shape,
                     variant="nan-wins-last")
    np.testing.assert_array_equal(torch_output(case), np.array([[[[0, 0], [5, 0]]]], np.float32))
    assert create_backend("torch", BackendOptions()).readings["maxpool-nan-input"] == "nan-wins-last"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.slow
def test_max_pooling_random_geometry_passes_against_the_reference(device, dims, dtype):
    rng = np.random.default_rng(50 + dims)
    checked = 0
    for trial in range(40):
        spatial = [int(v) for v in rng.integers(1, 7 if dims == 2 else 5, size=dims)]
        p, pooled = random_geometry(rng, spatial, padding_windows=2)
        if min(pooled) < 1:
            continue
        out = [max(1, q + int(rng.integers(-1, 3))) for q in pooled]
        levels = [-np.inf, -1.0, 0.0, 2.0] if trial % 2 else list(rng.normal(size=6))
        x = rng.choice(levels, size=(2, 2, *spatial)).astype(dtype)  # few levels: many ties
        dy = rng.normal(size=(2, 2, *out)).astype(dtype)
        case = make_case("MAX_POOLING_GRAD", p, {"InputTensor": x, "InputGradientTensor": dy}, x.shape)
        assert status_on_torch(case, device) is Status.PASS, (p, spatial, out)
        checked += 1
    assert checked >= 25


# -- AveragePoolingGrad: avg_pool's padding, sizes and divisors, and the canvas that stands for the padded input ----
AVG = {"Strides": [2, 2], "WindowSize": [3, 2], "StartPadding": [1, 0], "EndPadding": [1, 1], "IncludePadding": True}


@pytest.mark.parametrize("variant", OPERATORS["AVERAGE_POOLING_GRAD"].variants)
def test_average_pooling_every_divisor_reading_on_asymmetric_padding(variant):
    """IncludePadding TRUE on a canvas: asymmetric padding (OC-AP3) and a ceil-sized dY whose last windows run past
    the padded input (OC-AP1); torch follows each reading it can express, and refuses `in-bounds-overhang` there."""
    # dX [4, 3]; the canvas [6, 4] ([6, 3] for end-padding-as-start) sizes dY [3, 2] with ceil_mode: the last row's
    # windows cover rows 3-5 (input, padding, beyond), the last column's columns 2-3 (input, end padding).
    dy = np.arange(1, 7, dtype=np.float32).reshape(1, 1, 3, 2)
    case = make_case("AVERAGE_POOLING_GRAD", AVG, {"InputGradientTensor": dy}, (1, 1, 4, 3), variant=variant)
    outcome = create_backend("torch", BackendOptions(variant=variant)).run(case)
    if variant == "in-bounds-overhang":
        assert outcome.kind is OutcomeKind.NOT_SUPPORTED and "in-bounds-overhang" in outcome.message
        return
    assert outcome.kind is OutcomeKind.OUTPUTS, outcome.message
    assert status_on_torch(case, variant=variant) is Status.PASS
    readings = create_backend("torch", BackendOptions(variant=variant)).readings
    assert readings["avgpool-divisor"] == readings["avgpool-asymmetric-padding"] == variant
    others = {OPERATORS["AVERAGE_POOLING_GRAD"].reference(case.description, case.inputs, v).outputs[
        "OutputGradientTensor"].tobytes() for v in OPERATORS["AVERAGE_POOLING_GRAD"].variants}
    assert len(others) == 4  # the data tells every reading apart


@pytest.mark.parametrize(("params", "dy_shape", "why"), [
    ({**AVG, "IncludePadding": False}, (1, 1, 2, 3), "IncludePadding FALSE needs avg_pool's own padding"),
    ({**AVG, "WindowSize": [3, 3], "StartPadding": [1, 1], "EndPadding": [1, 1], "IncludePadding": False}, (1, 1, 1, 5),
     "avg_pool sizes"),
    ({**AVG, "WindowSize": [9, 2]}, (1, 1, 1, 4), "window larger than the padded input"),
])
def test_average_pooling_cases_torch_cannot_express_are_unsupported_naming_why(params, dy_shape, why):
    dy = np.ones(dy_shape, np.float32)
    case = make_case("AVERAGE_POOLING_GRAD", params, {"InputGradientTensor": dy}, (1, 1, 3, 3))
    outcome = create_backend("torch", BackendOptions()).run(case)
    assert outcome.kind is OutcomeKind.NOT_SUPPORTED and why in outcome.message
    assert status_on_torch(case) is Status.NOT_SUPPORTED


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.slow
def test_average_pooling_random_geometry_passes_against_the_reference(device, dims, dtype):
    """Random geometry, padding counted or not, dY of the floor or the ceil size: every case torch expresses passes
    against the reference's default reading (FLOAT16 3-D on the CPU through float32, judged by the same rule)."""
    from dmlconform.ops.average_pooling_grad import pooled_size

    rng = np.random.default_rng(60 + dims)
    checked = 0
    for _ in range(60):
        spatial = [int(v) for v in rng.integers(2, 7 if dims == 2 else 5, size=dims)]
        window = [int(rng.integers(1, min(n, 3) + 1)) for n in spatial]
        include = bool(rng.integers(0, 2))
        start = [int(rng.integers(0, k // 2 + 1)) for k in window]
        end = [int(rng.integers(0, k + 1)) for k in window] if include else start
        strides = [int(v) for v in rng.integers(1, 4, size=dims)]
        p = {"Strides": strides, "WindowSize": window, "StartPadding": start, "EndPadding": end,
             "IncludePadding": include}
        out = [pooled_size(n, k, s, a, e) for n, k, s, a, e in zip(spatial, window, strides, start, end, strict=True)]
        if rng.integers(0, 2):  # torch's ceil_mode size: one more window where it starts before the end padding
            out = [o + ((n + a + e - k) % s != 0 and o * s < n + a + (e if include else 0))
                   for o, n, k, s, a, e in zip(out, spatial, window, strides, start, end, strict=True)]
        dy = rng.normal(size=(2, 2, *out)).astype(dtype)
        case = make_case("AVERAGE_POOLING_GRAD", p, {"InputGradientTensor": dy}, (2, 2, *spatial))
        status = status_on_torch(case, device)
        assert status in (Status.PASS, Status.NOT_SUPPORTED), (p, spatial, out)
        checked += status is Status.PASS
    assert checked >= 20, checked


# -- ResampleGrad1: PyTorch's modes where they compute DirectML's coordinates, the formula elsewhere ----------------
def test_coordinates_divide_rather_than_multiply_by_the_reciprocal():
    scale = float(np.float32(0.3))
    o = np.arange(200, dtype=np.float32)
    divided = (o - np.float32(-0.5)) / np.float32(scale) - np.float32(0.25)
    multiplied = (o + np.float32(0.5)) * (np.float32(1) / np.float32(scale)) - np.float32(0.25)
    assert (divided != multiplied).any()  # so the test can tell the two apart
    got = torch_resample.coordinates(200, scale, 0.25, -0.5, torch.device("cpu")).numpy()
    np.testing.assert_array_equal(got.view(np.uint32), divided.view(np.uint32))


@pytest.mark.parametrize("mode,rounding,scale,ipo,opo,n_in,n_out,expected", [
    ("NEAREST_NEIGHBOR", "DECREASING", 2.0, 0.0, 0.0, 4, 7, "nearest"),
    ("NEAREST_NEIGHBOR", "DECREASING", 0.5, 0.0, -0.5, 6, 3, "nearest-exact"),
    ("LINEAR", "DECREASING", 4.0, 0.5, -0.5, 3, 12, "linear"),
    ("LINEAR", "DECREASING", 3.0, 0.5, -0.5, 3, 9, None),  # 1/3 is not exact in float32
    ("NEAREST_NEIGHBOR", "INCREASING", 2.0, 0.0, 0.0, 4, 8, None),  # torch has no ceil mode
    ("NEAREST_NEIGHBOR", "DECREASING", 4.0, 0.0, 0.0, 4, 8, None),  # torch's nearest ignores the scale at 2x size
    ("LINEAR", "DECREASING", 0.5, 0.5, -0.5, 2, 4, None),  # the last coordinate lies past the input
    ("NEAREST_NEIGHBOR", "DECREASING", 2.0, 0.0, 0.0, 3, 7, None),  # output 6 reads input 3, clamped to 2
    ("NEAREST_NEIGHBOR", "DECREASING", 2.0, 0.0, -0.5, 3, 6, "nearest-exact"),
    ("LINEAR", "DECREASING", 2.0, 0.0, 0.0, 4, 8, None),  # offsets torch has no mode for
])
def test_torch_mode_only_where_the_coordinates_are_bit_identical(mode, rounding, scale, ipo, opo, n_in, n_out,
                                                                  expected):
    assert torch_resample.torch_mode(mode, rounding, scale, ipo, opo, n_in, n_out) == expected


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("offsets", [(0.0, 0.0), (0.0, -0.5), (0.5, -0.5)])
def test_resample_gradient_larger_than_dx_times_scale(device, offsets):
    """The last outputs read past the input and are clamped to its edge. PyTorch's CUDA upsample kernels assume
    they do not (nearest's backward dropped their gradients on an H100), so the backend must not use them here."""
    mode = "LINEAR" if offsets == (0.5, -0.5) else "NEAREST_NEIGHBOR"
    p = {"InterpolationMode": mode, "RoundingDirection": "DECREASING", "Scales": [2.0],
         "InputPixelOffsets": [offsets[0]], "OutputPixelOffsets": [offsets[1]]}
    dy = np.arange(1, 10, dtype=np.float32)
    case = make_case("RESAMPLE_GRAD1", p, {"InputGradientTensor": dy}, (3,))
    assert torch_output(case, device).sum() == dy.sum()  # every gradient lands somewhere
    assert status_on_torch(case, device) is Status.PASS


def random_resample_case(rng: np.random.Generator, dtype, mode: str, rounding: str, offsets: tuple[float, float]
                         ) -> Case:
    rank = int(rng.integers(1, 5))
    dx = [int(v) for v in rng.integers(1, 7 if rank <= 2 else 4, size=rank)]
    scales = [float(np.float32(rng.choice([0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 1 / 3]))) for _ in range(rank)]
    dy_shape = [max(1, math.floor(n * s) + int(rng.choice([0, 0, 1, -1]))) for n, s in zip(dx, scales, strict=True)]
    p = {"InterpolationMode": mode, "RoundingDirection": rounding, "Scales": scales,
         "InputPixelOffsets": [offsets[0]] * rank, "OutputPixelOffsets": [offsets[1]] * rank}
    dy = rng.normal(size=dy_shape).astype(dtype)
    return make_case("RESAMPLE_GRAD1", p, {"InputGradientTensor": dy}, tuple(dx))


RESAMPLE_SWEEP = [(mode, rounding, offsets) for mode in ("NEAREST_NEIGHBOR", "LINEAR")
                  for rounding in ("DECREASING", "INCREASING")
                  for offsets in ((0.0, 0.0), (0.0, -0.5), (0.5, -0.5), (0.25, 0.5))]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_resample_random_passes_against_the_reference(device, dtype):
    rng = np.random.default_rng(60)
    for mode, rounding, offsets in RESAMPLE_SWEEP:
        for _ in range(6):
            case = random_resample_case(rng, dtype, mode, rounding, offsets)
            assert status_on_torch(case, device) is Status.PASS, (case.description.params, case.inputs)


def test_torch_upsample_and_the_written_formula_agree(monkeypatch):
    """Where a torch mode is used, the direct realisation gives the same answer within the rule: the two paths
    check each other."""
    rng = np.random.default_rng(61)
    compared = 0
    for offsets, mode in (((0.0, 0.0), "NEAREST_NEIGHBOR"), ((0.0, -0.5), "NEAREST_NEIGHBOR"), ((0.5, -0.5), "LINEAR")):
        for _ in range(20):
            case = random_resample_case(rng, np.float32, mode, "DECREASING", offsets)
            p, dy = case.description.params, case.inputs["InputGradientTensor"]
            uses_torch = any(torch_resample.torch_mode(mode, "DECREASING", s, offsets[0], offsets[1], n, m)
                             for s, n, m in zip(p["Scales"], case.description.output.shape, dy.shape, strict=True))
            if not uses_torch:
                continue
            with_torch = torch_output(case)
            with monkeypatch.context() as patch:
                patch.setattr(torch_resample, "torch_mode", lambda *args: None)
                direct = torch_output(case)
            accumulation = case.op.reference(case.description, case.inputs).accumulation["OutputGradientTensor"]
            assert agreement(with_torch, direct, DataType.FLOAT32, Tolerance.bound(), accumulation).agree
            compared += 1
    assert compared >= 15


def test_literal_variant_reads_the_offsets_the_other_way():
    dy = np.arange(1, 9, dtype=np.float32)
    p = {"InterpolationMode": "NEAREST_NEIGHBOR", "RoundingDirection": "DECREASING", "Scales": [2.0],
         "InputPixelOffsets": [0.5], "OutputPixelOffsets": [-0.5]}
    literal = make_case("RESAMPLE_GRAD1", p, {"InputGradientTensor": dy}, (4,), variant="literal")
    swapped = make_case("RESAMPLE_GRAD1", p, {"InputGradientTensor": dy}, (4,), variant="swapped")
    assert not np.array_equal(literal.expected["OutputGradientTensor"], swapped.expected["OutputGradientTensor"])
    # The default follows DirectML (swapped); --variant literal reads the offsets as the forward's.
    assert status_on_torch(swapped) is Status.PASS and status_on_torch(literal) is Status.FAIL
    assert status_on_torch(literal, variant="literal") is Status.PASS


@pytest.mark.parametrize("device", DEVICES)
def test_float16_stays_float16(device, monkeypatch):
    """No upcast: every tensor the realisation computes on is float16 (the maxima's float64 keys aside)."""
    seen: set[torch.dtype] = set()
    original = torch_resample.gradient_of

    def spy(forward, x, dy):
        seen.update({x.dtype, dy.dtype})
        result = original(forward, x, dy)
        seen.add(result.dtype)
        return result

    monkeypatch.setattr(torch_resample, "gradient_of", spy)
    rng = np.random.default_rng(62)
    case = random_resample_case(rng, np.float16, "LINEAR", "INCREASING", (0.25, 0.5))
    assert torch_output(case, device).dtype == np.float16
    assert seen == {torch.float16}


# -- failures --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("error,kind", [
    (NotImplementedError("no"), OutcomeKind.NOT_SUPPORTED),
    (RuntimeError('"index_put" not implemented for \'UInt16\''), OutcomeKind.NOT_SUPPORTED),
    (RuntimeError("CUDA error: an illegal memory access was encountered"), OutcomeKind.ERROR),
    (ValueError("boom"), OutcomeKind.ERROR),
])
def test_failures_are_classified(monkeypatch, error, kind):
    import dmlconform.backends.torch_grads as grads

    def broken(*args: Any, **kwargs: Any) -> Outcome:
        raise error

    monkeypatch.setattr(grads, "realise", broken)
    dy = np.ones(3, np.float32)
    case = make_case("ACTIVATION_RELU_GRAD", {}, {"InputTensor": dy, "InputGradientTensor": dy}, (3,))
    outcome = create_backend("torch", BackendOptions()).run(case)
    assert outcome.kind is kind and "PyTorch" in outcome.message
    assert run_case(case, create_backend("torch", BackendOptions()), HIGHEST).status is {
        OutcomeKind.NOT_SUPPORTED: Status.NOT_SUPPORTED, OutcomeKind.ERROR: Status.ERROR}[kind]


@pytest.mark.slow
def test_cli_run_on_torch(tmp_path):
    report = tmp_path / "torch.json"
    result = CliRunner().invoke(main, ["run", "--backend", "torch", "-k", "relu", "--json", str(report)])
    assert result.exit_code == 0, result.output
    document = json.loads(report.read_text())
    assert document["backend"]["name"] == "torch" and document["settings"]["device"] == "cpu"
    bad = CliRunner().invoke(main, ["run", "--backend", "torch", "--device", "tpu"])
    assert bad.exit_code == 2 and "--device tpu: unknown" in bad.output
