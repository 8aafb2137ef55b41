"""The onnxruntime backend: provider selection, every operator's graph in every DML data type, failure paths."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from click.testing import CliRunner
from onnx import helper

from dmlconform.backends import create_backend
from dmlconform.backends import onnx_graphs as graphs
from dmlconform.backends import onnxruntime_backend as orb
from dmlconform.backends import onnxruntime_common as orc
from dmlconform.backends.base import BackendOptions, OutcomeKind
from dmlconform.backends.onnx_graphs.common import GraphBuilder
from dmlconform.case import Case
from dmlconform.case_result import Status
from dmlconform.cli import main
from dmlconform.directml.start import OWN_HOST_ENV
from dmlconform.dtypes import DataType
from dmlconform.feature_levels import HIGHEST, FeatureLevel
from dmlconform.ops import OPERATORS
from dmlconform.ops.base import Description, Operator, TensorDesc
from dmlconform.ops.resample_grad1 import axis_weights
from dmlconform.runner import run_case

DML, CUDA, CPU = "DmlExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"


# -- helpers -------------------------------------------------------------------------------------------
def make_case(op_name: str, params: dict[str, Any], inputs: dict[str, np.ndarray], out_shape: tuple[int, ...],
              case_id: str = "c") -> Case:
    op: Operator = OPERATORS[op_name]
    dtype = DataType.from_numpy(next(iter(inputs.values())).dtype)
    tensors = {name: TensorDesc(dtype, tuple(array.shape)) for name, array in inputs.items()}
    tensors[op.outputs[0]] = TensorDesc(dtype, tuple(out_shape))
    desc = Description(op, op.parse_params(params, dtype), tensors)
    case = Case("t", case_id, Path("t.yaml"), desc, inputs)
    answers = {variant: op.reference(desc, inputs, variant).outputs for variant in op.variants}
    first = next(iter(answers.values()))
    if all(all(np.array_equal(a[k], first[k], equal_nan=True) for k in first) for a in answers.values()):
        case.expected = first
    else:  # the data reaches a behaviour the pages leave open: every reading is a candidate, as in the suites
        case.candidates = answers
    return case


def random_data(rng: np.random.Generator, dtype: DataType, shape: tuple[int, ...], special: bool = True
                ) -> np.ndarray:
    if dtype.is_float:
        data = rng.integers(-8, 9, size=shape).astype(np.float64) / 4 + rng.normal(size=shape) * 0.01
        data = data.astype(dtype.numpy)
        if special and data.size > 4:
            flat = data.reshape(-1)
            flat[:4] = np.array([0.0, -0.0, np.inf, -np.inf], dtype=dtype.numpy)
            rng.shuffle(flat)
        return data
    info = np.iinfo(dtype.numpy)
    return rng.integers(info.min, info.max, size=shape, dtype=dtype.numpy, endpoint=True)


@pytest.fixture(scope="module")
def backend() -> orb.OnnxRuntimeBackend:
    return orb.OnnxRuntimeBackend(ort, orc.choose_provider("cpu", ort.get_available_providers()))


def check(backend: orb.OnnxRuntimeBackend, case: Case, construction: str | None = None) -> None:
    """The case passes on the CPU EP, built with `construction` (default: the operator's default one)."""
    if construction is not None:
        backend = orb.OnnxRuntimeBackend(backend.runner, constructions={case.op.name: construction})
        assert graphs.construction_for(case.op.name, "cpu", construction).name == construction
    result = run_case(case, backend, HIGHEST)
    assert result.status is Status.PASS, f"{case.op.name} {case.dtype.name} {case.rank}-D: {result.message}"


def constructions_of(op_name: str) -> list[str]:
    return [c.name for c in graphs.CONSTRUCTIONS[op_name]]


def dtypes_of(op_name: str) -> list[DataType]:
    return sorted(OPERATORS[op_name].support.all_dtypes, key=lambda d: d.value)


# -- provider selection (pure) -------------------------------------------------------------------------
@pytest.mark.parametrize(("available", "expected"), [
    ([DML, CUDA, CPU], DML), ([CUDA, CPU], CUDA), ([CPU], CPU), (["AzureExecutionProvider", CPU], CPU)])
def test_auto_prefers_dml_then_cuda_then_cpu(available: list[str], expected: str) -> None:
    assert orc.choose_provider("auto", available).provider == expected


@pytest.mark.parametrize("ep", ["dml", "cuda"])
def test_asking_for_an_absent_provider_is_a_usage_error(ep: str) -> None:
    with pytest.raises(RuntimeError, match=f"--ep {ep}: .* is not available") as info:
        orc.choose_provider(ep, [CPU])
    assert "\n" not in str(info.value)


def test_no_provider_at_all_is_a_usage_error() -> None:
    with pytest.raises(RuntimeError, match="no usable execution provider"):
        orc.choose_provider("auto", [])


@pytest.mark.parametrize(("ep", "available"), [("dml", [DML, CPU]), ("cuda", [CUDA, CPU]), ("auto", [DML, CPU])])
def test_gpu_providers_never_fall_back_to_the_cpu(ep: str, available: list[str]) -> None:
    choice = orc.choose_provider(ep, available)
    assert choice.gpu
    names = [p if isinstance(p, str) else p[0] for p in choice.providers]
    assert names == [choice.provider]  # CPUExecutionProvider is not listed
    assert choice.config == {"session.disable_cpu_ep_fallback": "1"}
    options = orc.session_options(ort, choice)  # the SessionOptions really passed to InferenceSession
    assert options.get_session_config_entry("session.disable_cpu_ep_fallback") == "1"
    if choice.key == "dml":  # what the DirectML EP's documentation requires
        assert not options.enable_mem_pattern and options.execution_mode == ort.ExecutionMode.ORT_SEQUENTIAL


def test_cuda_computes_float32_without_tf32() -> None:
    assert orc.choose_provider("cuda", [CUDA, CPU]).providers == [(CUDA, {"use_tf32": "0"})]
    assert orc.choose_provider("dml", [DML, CPU]).providers == [DML]


def test_cpu_provider_keeps_default_fallback() -> None:
    choice = orc.choose_provider("cpu", [CPU])
    assert not choice.gpu and choice.providers == [CPU] and choice.config == {}


def test_factory_uses_the_available_provider_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ort, "get_available_providers", lambda: [DML, CPU])
    backend = create_backend("onnxruntime", BackendOptions(ep="auto"))
    assert backend.choice.provider == DML  # type: ignore[attr-defined]
    info = backend.info()
    assert info.extra["provider"] == DML and info.extra["cpu_fallback"] == "disabled"
    assert info.extra["directml"] == "1.15.4"  # onnxruntime >= 1.21 ships DirectML 1.15.4
    assert info.feature_level is FeatureLevel.L6_4 and "DirectML 1.15.4" in info.feature_level_source
    monkeypatch.setattr(ort, "get_available_providers", lambda: [CPU])
    with pytest.raises(RuntimeError, match="CUDAExecutionProvider is not available"):
        create_backend("onnxruntime", BackendOptions(ep="cuda"))


def test_dml_without_the_provider_runs_the_packaged_host_and_says_what_it_lacks(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Where onnxruntime has no DirectML EP (Linux), --ep dml runs the packaged ONNX model host; what it cannot start
    without (here: the host program, then DirectML.dll) is one line naming the fix."""
    monkeypatch.setattr(ort, "get_available_providers", lambda: [CPU])
    monkeypatch.delenv(OWN_HOST_ENV, raising=False)
    monkeypatch.setenv("DMLCONFORM_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("DMLCONFORM_DIRECTML", raising=False)
    with pytest.raises(RuntimeError, match=r"no DirectML\.dll: run `dmlconform fetch directml`") as info:
        create_backend("onnxruntime", BackendOptions(ep="dml"))
    assert "\n" not in str(info.value)
    assert orb.host_command(BackendOptions(ep="dml"), {OWN_HOST_ENV: "my-host"}) == "my-host"
    assert orb.host_command(BackendOptions(ep="cpu", harness="h --x"), {}) == "h --x"
    assert orb.host_command(BackendOptions(ep="cpu"), {}) is None  # in-process or the packaged host
    assert orb.host_command(BackendOptions(ep="dml"), {}) is None


def test_cli_reports_a_missing_provider_with_exit_2() -> None:
    seed = Path(__file__).parents[2] / "test_vectors" / "seed"
    result = CliRunner().invoke(main, ["run", "--backend", "onnxruntime", "--ep", "cuda", str(seed)])
    assert result.exit_code == 2
    assert "CUDAExecutionProvider is not available" in result.output
    assert "Traceback" not in result.output


def test_cpu_info_names_version_provider_and_level(backend: orb.OnnxRuntimeBackend) -> None:
    info = backend.info()
    assert info.version == f"onnxruntime {ort.__version__}"
    assert CPU in info.device and info.extra["provider"] == CPU
    assert info.feature_level is HIGHEST and "every required case" in info.feature_level_source


# -- feature levels ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("dml", "level"), [
    ("1.15.4", FeatureLevel.L6_4), ("1.15.1", FeatureLevel.L6_4), ("1.15.0", FeatureLevel.L6_3),
    ("1.13.1", FeatureLevel.L6_2), ("1.14.1", FeatureLevel.L6_2), ("1.9.0", FeatureLevel.L5_1),
    ("1.4.2", FeatureLevel.L3_0), ("2.0.0", None)])
def test_directml_version_to_feature_level(dml: str, level: FeatureLevel | None) -> None:
    assert orc.directml_level(dml) is level


@pytest.mark.parametrize(("ort_version", "dml"), [
    ("1.24.4", "1.15.4"), ("1.21.0", "1.15.4"), ("1.20.1", "1.15.2"), ("1.19.2", "1.15.1"), ("1.18.0", "1.14.1"),
    ("1.17.3", None)])
def test_directml_shipped_by_onnxruntime(ort_version: str, dml: str | None) -> None:
    assert orc.directml_for_ort(ort_version)[0] == dml


def test_unknown_directml_claims_the_graphs_highest_level() -> None:
    dml = orc.choose_provider("dml", [DML])
    level, source = orc.claimed_level(dml, "1.17.3")
    assert level is orc.implemented_level() is HIGHEST and "unknown" in source
    level, source = orc.claimed_level(dml, "1.18.0")
    assert level is FeatureLevel.L6_2 and "1.14.1" in source
    level, source = orc.claimed_level(dml, "1.18.0", dll_version="1.15.4")
    assert level is FeatureLevel.L6_4 and "DirectML.dll" in source


def test_graphs_are_stamped_ir10_opset21() -> None:
    case = make_case("ACTIVATION_RELU_GRAD", {}, {"InputTensor": np.ones(3, np.float32),
                                                 "InputGradientTensor": np.ones(3, np.float32)}, (3,))
    model = graphs.build_graph(case.description).model
    assert model.ir_version == 10
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 21)]
    assert {node.domain for node in model.graph.node} == {""}  # standard operators only


def test_importing_the_module_does_not_import_onnxruntime() -> None:
    code = ("import sys, dmlconform.backends.onnxruntime_backend; "
            "print('onnxruntime' in sys.modules, 'onnx' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


# -- every operator, every DML data type, several ranks ---------------------------------------------------
@pytest.mark.parametrize("dtype", dtypes_of("ACTIVATION_RELU_GRAD"), ids=lambda d: d.name)
@pytest.mark.parametrize("rank", [1, 3, 8])
def test_relu_grad(backend: orb.OnnxRuntimeBackend, dtype: DataType, rank: int) -> None:
    rng = np.random.default_rng(rank)
    shape = (3, 2, 1, 2, 1, 1, 2, 1)[:rank] if rank > 1 else (9,)
    x, dy = random_data(rng, dtype, shape), random_data(rng, dtype, shape)
    if dtype.is_float:
        x.reshape(-1)[0], dy.reshape(-1)[1] = np.nan, np.nan
    check(backend, make_case("ACTIVATION_RELU_GRAD", {}, {"InputTensor": x, "InputGradientTensor": dy}, shape))


@pytest.mark.parametrize("construction", constructions_of("ELEMENT_WISE_CLIP_GRAD1"))
@pytest.mark.parametrize("dtype", dtypes_of("ELEMENT_WISE_CLIP_GRAD1"), ids=lambda d: d.name)
@pytest.mark.parametrize("rank", [1, 4, 8])
def test_clip_grad1(backend: orb.OnnxRuntimeBackend, dtype: DataType, rank: int, construction: str) -> None:
    rng = np.random.default_rng(rank)
    shape = (2, 3, 1, 2, 1, 2, 1, 1)[:rank] if rank > 1 else (12,)
    x, dy = random_data(rng, dtype, shape), random_data(rng, dtype, shape)
    if dtype.is_float:
        low, high = -1.0, 1.25
        x.reshape(-1)[:3] = [low, high, np.nan]
    else:  # bounds inside the type's range, with X hitting both exactly
        info = np.iinfo(dtype.numpy)
        low, high = int(info.min // 3 * 2) if info.min else 3, int(info.max // 3)
        x.reshape(-1)[:2] = [low, high]
    case = make_case("ELEMENT_WISE_CLIP_GRAD1", {"Min": low, "Max": high},
                     {"InputTensor": x, "InputGradientTensor": dy}, shape)
    check(backend, case, construction)


V0_BOUNDS = {"fractional": {"signed": (-2.5, 3.5), "unsigned": (2.5, 6.5), "float": (0.99995, 2.0015)},
             "beyond": {"signed": (-1e30, 1e30), "unsigned": (-1.0, float("inf")), "float": (-70000.0, float("inf"))},
             "nan": {"signed": (float("nan"), 10.5), "unsigned": (float("nan"), 10.5), "float": (float("nan"), 1.0)}}


@pytest.mark.parametrize("construction", constructions_of("ELEMENT_WISE_CLIP_GRAD"))
@pytest.mark.parametrize("dtype", dtypes_of("ELEMENT_WISE_CLIP_GRAD"), ids=lambda d: d.name)
@pytest.mark.parametrize("bounds", sorted(V0_BOUNDS))
def test_clip_grad_v0_follows_directmls_reading_of_its_float_bounds(backend: orb.OnnxRuntimeBackend, dtype: DataType,
                                                                   bounds: str, construction: str) -> None:
    """The graph holds the FLOAT bounds as DirectML does (the reference's default): where the readings part (a
    fractional bound, one beyond the type, a NaN one), it matches `bound-in-type`, not another candidate."""
    rng = np.random.default_rng(len(bounds))
    shape = (4, 6)
    x, dy = random_data(rng, dtype, shape), random_data(rng, dtype, shape, special=False)
    kind = "float" if dtype.is_float else "signed" if dtype.is_signed else "unsigned"
    low, high = V0_BOUNDS[bounds][kind]
    if dtype is DataType.FLOAT32 and bounds != "nan":
        low, high = -1.0, 1.25  # FLOAT32 meets its bounds unconverted: no reading parts
    flat = x.reshape(-1)
    if dtype.is_float:
        flat[:8] = [1.0, 2.0, 2.001953125, -65504, 65504, 0.5, 1.25, -1.0]
    else:  # X on and beside what each reading makes of the bounds, and at the type's ends
        info = np.iinfo(dtype.numpy)
        places = [v for v in (-3, -2, 2, 3, 4, 6, 7, 0, 10, int(info.min), int(info.max)) if info.min <= v <= info.max]
        flat[:len(places)] = places
    case = make_case("ELEMENT_WISE_CLIP_GRAD", {"Min": str(low) if not np.isfinite(low) else low,
                                                "Max": str(high) if not np.isfinite(high) else high},
                     {"InputTensor": x, "InputGradientTensor": dy}, shape)
    opened = bool(case.candidates)
    check(backend, case, construction)
    if opened:
        result = run_case(case, orb.OnnxRuntimeBackend(backend.runner, constructions={case.op.name: construction}),
                          HIGHEST)
        answer = case.candidates[OPERATORS["ELEMENT_WISE_CLIP_GRAD"].variants[0]]["OutputGradientTensor"]
        assert result.matched is not None
        assert np.array_equal(case.candidates[result.matched]["OutputGradientTensor"], answer, equal_nan=True)
    assert opened or dtype is DataType.FLOAT32


SLICE_GEOMETRIES = [  # (dX shape, offsets, sizes, strides)
    ((7,), (1,), (6,), (-2,)),
    ((4, 5), (0, 1), (4, 4), (2, -1)),
    ((2, 3, 4, 5), (0, 1, 0, 2), (2, 2, 4, 3), (1, -1, 3, 2)),
    ((2, 1, 3, 2, 2, 1, 3, 2), (1, 0, 0, 0, 1, 0, 0, 0), (1, 1, 3, 2, 1, 1, 3, 2), (1, 1, -2, 1, 1, 1, 2, -1)),
]


@pytest.mark.parametrize("construction", constructions_of("SLICE_GRAD"))
@pytest.mark.parametrize("dtype", dtypes_of("SLICE_GRAD"), ids=lambda d: d.name)
@pytest.mark.parametrize("geometry", SLICE_GEOMETRIES, ids=lambda g: f"{len(g[0])}d")
def test_slice_grad(backend: orb.OnnxRuntimeBackend, dtype: DataType, geometry: tuple, construction: str) -> None:
    shape, offsets, sizes, strides = geometry
    dy_shape = tuple(1 + (size - 1) // abs(stride) for size, stride in zip(sizes, strides, strict=True))
    if len(shape) == 2:
        dy_shape = (dy_shape[0], dy_shape[1] - 1)  # dY may be shorter than the window allows
    dy = random_data(np.random.default_rng(len(shape)), dtype, dy_shape)
    params = {"InputWindowOffsets": list(offsets), "InputWindowSizes": list(sizes),
              "InputWindowStrides": list(strides)}
    check(backend, make_case("SLICE_GRAD", params, {"InputGradientTensor": dy}, shape), construction)


POOL_GEOMETRIES = [  # (X shape, window, strides, start pad, end pad, dilations)
    ((1, 1, 3, 3), (2, 2), (1, 1), (0, 0), (0, 0), (1, 1)),
    ((2, 3, 5, 4), (3, 2), (2, 1), (1, 1), (1, 0), (1, 2)),
    ((1, 2, 4, 3, 5), (2, 2, 3), (1, 2, 2), (1, 0, 2), (0, 1, 2), (1, 1, 1)),
    ((1, 2, 6, 5, 4), (3, 3, 2), (2, 2, 1), (2, 2, 2), (2, 1, 2), (2, 2, 2)),  # pads >= window: explicit padding
    ((1, 1, 4, 4), (2, 2), (1, 1), (3, 0), (0, 0), (1, 1)),  # a window of padding only
]


@pytest.mark.parametrize("construction", constructions_of("MAX_POOLING_GRAD"))
@pytest.mark.parametrize("dtype", dtypes_of("MAX_POOLING_GRAD"), ids=lambda d: d.name)
@pytest.mark.parametrize("geometry", POOL_GEOMETRIES, ids=lambda g: f"{len(g[0])}d-{g[1]}-{g[3]}")
@pytest.mark.parametrize("ties", [False, True])
def test_max_pooling_grad(backend: orb.OnnxRuntimeBackend, dtype: DataType, geometry: tuple, ties: bool,
                          construction: str) -> None:
    shape, window, strides, start, end, dilations = geometry
    rng = np.random.default_rng(len(shape))
    x = (rng.integers(0, 3, size=shape).astype(dtype.numpy) if ties
         else random_data(rng, dtype, shape))  # ties: the lowest flat index must win
    out = tuple((n + a + e - ((k - 1) * d + 1)) // s + 1
                for n, k, s, a, e, d in zip(shape[2:], window, strides, start, end, dilations, strict=True))
    dy = random_data(rng, dtype, shape[:2] + out, special=False)
    params = {"Strides": list(strides), "WindowSize": list(window), "StartPadding": list(start),
              "EndPadding": list(end), "Dilations": list(dilations)}
    check(backend, make_case("MAX_POOLING_GRAD", params, {"InputTensor": x, "InputGradientTensor": dy}, shape),
          construction)


@pytest.mark.parametrize("construction", constructions_of("MAX_POOLING_GRAD"))
def test_max_pooling_grad_native_nan_rule_is_the_reference_default(backend: orb.OnnxRuntimeBackend,
                                                                   construction: str) -> None:
    x = np.array([np.nan, np.nan, 1, np.nan, 2, 0], np.float32).reshape(1, 1, 1, 6)
    dy = np.arange(1, 6, dtype=np.float32).reshape(1, 1, 1, 5)
    params = {"Strides": [1, 1], "WindowSize": [1, 2], "StartPadding": [0, 0], "EndPadding": [0, 0],
              "Dilations": [1, 1]}
    check(backend, make_case("MAX_POOLING_GRAD", params, {"InputTensor": x, "InputGradientTensor": dy}, x.shape),
          construction)


RESAMPLE_GEOMETRIES = [  # (dX shape, dY shape, scales, input offsets, output offsets)
    ((5,), (9,), (1.8,), (0.5,), (-0.5,)),
    ((4, 6), (8, 3), (2.0, 0.5), (0.0, 0.5), (0.0, -0.5)),
    ((2, 3, 4), (2, 7, 3), (1.0, 2.5, 0.75), (0.0, 0.5, 0.25), (0.0, -0.5, 0.1)),
    ((1, 2, 3, 4), (1, 2, 6, 10), (1.0, 1.0, 2.0, 2.5), (0.0, 0.0, 0.5, 0.5), (0.0, 0.0, -0.5, -0.5)),
]


@pytest.mark.parametrize("dtype", dtypes_of("RESAMPLE_GRAD1"), ids=lambda d: d.name)
@pytest.mark.parametrize("geometry", RESAMPLE_GEOMETRIES, ids=lambda g: f"{len(g[0])}d")
@pytest.mark.parametrize(("mode", "rounding"), [("NEAREST_NEIGHBOR", "DECREASING"), ("NEAREST_NEIGHBOR", "INCREASING"),
                                                ("LINEAR", "DECREASING")])
def test_resample_grad1(backend: orb.OnnxRuntimeBackend, dtype: DataType, geometry: tuple, mode: str,
                        rounding: str) -> None:
    dx_shape, dy_shape, scales, ipo, opo = geometry
    dy = random_data(np.random.default_rng(len(dx_shape)), dtype, dy_shape, special=False)
    params = {"InterpolationMode": mode, "RoundingDirection": rounding, "Scales": list(scales),
              "InputPixelOffsets": list(ipo), "OutputPixelOffsets": list(opo)}
    check(backend, make_case("RESAMPLE_GRAD1", params, {"InputGradientTensor": dy}, dx_shape))


@pytest.mark.parametrize("construction", constructions_of("RESAMPLE_GRAD1"))
@pytest.mark.parametrize("geometry", RESAMPLE_GEOMETRIES, ids=lambda g: f"{len(g[0])}d")
@pytest.mark.parametrize("mode", ["NEAREST_NEIGHBOR", "LINEAR"])
def test_resample_grad1_with_nan_and_inf_in_every_construction(backend: orb.OnnxRuntimeBackend, geometry: tuple,
                                                               mode: str, construction: str) -> None:
    """The sparse path of each construction (the matmul-only one reshapes every axis pass to 4-D) on every
    geometry: NaN and infinities reach exactly the elements they contribute to."""
    dx_shape, dy_shape, scales, ipo, opo = geometry
    dy = random_data(np.random.default_rng(7 + len(dx_shape)), DataType.FLOAT32, dy_shape, special=False)
    dy.reshape(-1)[[0, -1]] = [np.nan, np.inf]
    params = {"InterpolationMode": mode, "RoundingDirection": "DECREASING", "Scales": list(scales),
              "InputPixelOffsets": list(ipo), "OutputPixelOffsets": list(opo)}
    case = make_case("RESAMPLE_GRAD1", params, {"InputGradientTensor": dy}, dx_shape)
    assert graphs.data_path(case.description, case.inputs) == "sparse"
    check(backend, case, construction)


@pytest.mark.parametrize(("n_in", "scale"), [(5, 2.0), (6, 0.5), (4, 1.5), (7, 3.0)])
@pytest.mark.parametrize(("offsets", "transform"), [((0.5, -0.5), "half_pixel"), ((0.0, 0.0), "asymmetric")])
@pytest.mark.parametrize(("mode", "rounding", "onnx_mode", "nearest"), [
    ("NEAREST_NEIGHBOR", "DECREASING", "nearest", "floor"), ("NEAREST_NEIGHBOR", "INCREASING", "nearest", "ceil"),
    ("LINEAR", "DECREASING", "linear", "floor")])
def test_axis_weights_agree_with_ort_resize(n_in: int, scale: float, offsets: tuple[float, float], transform: str,
                                            mode: str, rounding: str, onnx_mode: str, nearest: str) -> None:
    """The resample graph's weight matrices come from the reference; ORT's Resize on an identity checks them."""
    n_out = int(np.floor(n_in * scale))
    node = helper.make_node("Resize", ["X", "", "S"], ["Y"], mode=onnx_mode, nearest_mode=nearest,
                            coordinate_transformation_mode=transform)
    graph = helper.make_graph([node], "resize", [helper.make_tensor_value_info("X", 1, [1, 1, n_in, n_in])],
                              [helper.make_tensor_value_info("Y", 1, None)],
                              initializer=[helper.make_tensor("S", 1, [4], [1, 1, 1, scale])])
    model = helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 21)])
    session = ort.InferenceSession(model.SerializeToString(), providers=[CPU])
    resized = session.run(None, {"X": np.eye(n_in, dtype=np.float32)[None, None]})[0][0, 0]  # [i, o] = W[o, i]
    weights = axis_weights(n_in, n_out, scale, offsets[0], offsets[1], mode, rounding)
    np.testing.assert_allclose(resized.T, weights, atol=1e-6)


@pytest.mark.parametrize("dtype", dtypes_of("RESAMPLE_GRAD"), ids=lambda d: d.name)
@pytest.mark.parametrize("geometry", RESAMPLE_GEOMETRIES, ids=lambda g: f"{len(g[0])}d")
@pytest.mark.parametrize("mode", ["NEAREST_NEIGHBOR", "LINEAR"])
@pytest.mark.parametrize("variant", ["swapped", "literal+floor", "edges-dropped"])
def test_resample_grad_v0(backend: orb.OnnxRuntimeBackend, dtype: DataType, geometry: tuple, mode: str,
                          variant: str) -> None:
    """ResampleGrad (v0) through ResampleGrad1's graph, with v0's weights under DirectML's readings and others: each
    run against that reading's answer alone."""
    dx_shape, dy_shape, scales, ipo, opo = geometry
    dy = random_data(np.random.default_rng(len(dx_shape)), dtype, dy_shape, special=False)
    params = {"InterpolationMode": mode, "Scales": list(scales), "InputPixelOffsets": list(ipo),
              "OutputPixelOffsets": list(opo)}
    case = make_case("RESAMPLE_GRAD", params, {"InputGradientTensor": dy}, dx_shape)
    # One candidate named after the reading: the judge then takes that reading's sums for the bound too.
    case.expected, case.candidates = None, {variant: case.op.reference(case.description, case.inputs, variant).outputs}
    result = run_case(case, orb.OnnxRuntimeBackend(backend.runner, variant=variant), HIGHEST)
    assert result.status is Status.PASS, result.message


@pytest.mark.parametrize(("n_in", "scale"), [(5, 2.0), (6, 0.5), (4, 1.5), (7, 3.0), (4, 4.0)])
@pytest.mark.parametrize(("offsets", "transform"), [((0.5, -0.5), "half_pixel"), ((0.0, 0.0), "asymmetric")])
@pytest.mark.parametrize(("mode", "onnx_mode"), [("NEAREST_NEIGHBOR", "nearest"), ("LINEAR", "linear")])
def test_v0_axis_weights_agree_with_ort_resize(n_in: int, scale: float, offsets: tuple[float, float], transform: str,
                                               mode: str, onnx_mode: str) -> None:
    """ResampleGrad (v0)'s rule, round half up, is ONNX Resize's nearest_mode round_prefer_ceil: ORT's Resize on an
    identity gives v0's weight matrices (forward offsets), ties included (scales 2 and 4 put coordinates on them)."""
    n_out = int(np.floor(n_in * scale))
    node = helper.make_node("Resize", ["X", "", "S"], ["Y"], mode=onnx_mode, nearest_mode="round_prefer_ceil",
                            coordinate_transformation_mode=transform)
    graph = helper.make_graph([node], "resize", [helper.make_tensor_value_info("X", 1, [1, 1, n_in, n_in])],
                              [helper.make_tensor_value_info("Y", 1, None)],
                              initializer=[helper.make_tensor("S", 1, [4], [1, 1, 1, scale])])
    model = helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 21)])
    session = ort.InferenceSession(model.SerializeToString(), providers=[CPU])
    resized = session.run(None, {"X": np.eye(n_in, dtype=np.float32)[None, None]})[0][0, 0]  # [i, o] = W[o, i]
    weights = axis_weights(n_in, n_out, scale, offsets[0], offsets[1], mode, "half-up")
    np.testing.assert_allclose(resized.T, weights, atol=1e-6)
    if mode == "NEAREST_NEIGHBOR" and scale in (2.0, 4.0):  # ties present: floor would not agree
        assert not np.allclose(resized.T, axis_weights(n_in, n_out, scale, *offsets, mode, "floor"))


AVG_GEOMETRIES = [  # (dX shape, window, strides, start pad, end pad, dY change from the pooled size)
    ((1, 1, 3, 3), (2, 2), (1, 1), (0, 0), (0, 0), 0),  # the page's example
    ((2, 3, 5, 4), (3, 2), (2, 1), (1, 1), (1, 0), 0),
    ((1, 2, 4, 3, 5), (2, 2, 3), (1, 2, 2), (1, 0, 2), (0, 1, 2), 0),
    ((1, 1, 7, 7), (2, 4), (2, 3), (0, 2), (3, 1), 1),  # windows past the padded input
    ((1, 2, 4, 4), (2, 2), (2, 2), (3, 0), (0, 2), 0),  # windows of padding only
    ((1, 1, 2, 3), (5, 2), (1, 1), (1, 0), (0, 0), 0),  # a window larger than the padded input (dY of 1)
]


@pytest.mark.parametrize("construction", constructions_of("AVERAGE_POOLING_GRAD"))
@pytest.mark.parametrize("dtype", dtypes_of("AVERAGE_POOLING_GRAD"), ids=lambda d: d.name)
@pytest.mark.parametrize("geometry", AVG_GEOMETRIES, ids=lambda g: f"{len(g[0])}d-{g[1]}-{g[3]}-{g[4]}")
@pytest.mark.parametrize("include", [False, True])
def test_average_pooling_grad(backend: orb.OnnxRuntimeBackend, dtype: DataType, geometry: tuple, include: bool,
                              construction: str) -> None:
    shape, window, strides, start, end, change = geometry
    out = [max(1, (n + a + e - k) // s + 1) for n, k, s, a, e in zip(shape[2:], window, strides, start, end,
                                                                      strict=True)]
    out[-1] += change
    rng = np.random.default_rng(len(shape) + change)
    dy = random_data(rng, dtype, shape[:2] + tuple(out))  # infinities among them: they must reach their windows only
    params = {"Strides": list(strides), "WindowSize": list(window), "StartPadding": list(start),
              "EndPadding": list(end), "IncludePadding": include}
    check(backend, make_case("AVERAGE_POOLING_GRAD", params, {"InputGradientTensor": dy}, shape), construction)


@pytest.mark.parametrize("construction", constructions_of("AVERAGE_POOLING_GRAD"))
@pytest.mark.parametrize("variant", OPERATORS["AVERAGE_POOLING_GRAD"].variants)
def test_average_pooling_grad_graphs_follow_every_reading(backend: orb.OnnxRuntimeBackend, construction: str,
                                                          variant: str) -> None:
    """A window past the padded input and asymmetric padding with IncludePadding: each reading's own answer."""
    for shape, out, params in (
            ((1, 1, 1, 7), (1, 1, 1, 3), {"Strides": [1, 3], "WindowSize": [1, 4], "StartPadding": [0, 0],
                                          "EndPadding": [0, 1], "IncludePadding": True}),
            ((1, 2, 3, 4), (1, 2, 3, 5), {"Strides": [1, 1], "WindowSize": [2, 3], "StartPadding": [1, 1],
                                          "EndPadding": [0, 2], "IncludePadding": True})):
        dy = np.random.default_rng(3).normal(size=out).astype(np.float32)
        case = make_case("AVERAGE_POOLING_GRAD", params, {"InputGradientTensor": dy}, shape)
        case.expected, case.candidates = None, {variant: case.op.reference(case.description, case.inputs,
                                                                           variant).outputs}
        runner = orb.OnnxRuntimeBackend(backend.runner, variant=variant, constructions={case.op.name: construction})
        result = run_case(case, runner, HIGHEST)
        assert result.status is Status.PASS, f"{variant}: {result.message}"


def test_average_pooling_grad_tables_count_what_the_description_says() -> None:
    """The gather-sum graph's tables: the page's example (every window divides by 4, each element lists its
    windows), and a divisor of 0 for a window of padding only without IncludePadding."""
    from dmlconform.backends.onnx_graphs.average_pooling_grad import covering_windows, divisor_table

    case = make_case("AVERAGE_POOLING_GRAD", {"Strides": [1, 1], "WindowSize": [2, 2], "StartPadding": [0, 0],
                                              "EndPadding": [0, 0], "IncludePadding": False},
                     {"InputGradientTensor": np.ones((1, 1, 2, 2), np.float32)}, (1, 1, 3, 3))
    divisors = divisor_table(case.description, "clipped-to-padding")
    assert divisors.tolist() == [[4, 4], [4, 4]]
    assert covering_windows(case.description, divisors).tolist() == [
        [0, 4, 4, 4], [0, 1, 4, 4], [1, 4, 4, 4], [0, 2, 4, 4], [0, 1, 2, 3], [1, 3, 4, 4], [2, 4, 4, 4], [2, 3, 4, 4],
        [3, 4, 4, 4]]
    padded = make_case("AVERAGE_POOLING_GRAD", {"Strides": [1, 2], "WindowSize": [1, 2], "StartPadding": [0, 2],
                                                "EndPadding": [0, 2], "IncludePadding": False},
                       {"InputGradientTensor": np.ones((1, 1, 1, 3), np.float32)}, (1, 1, 1, 3))
    assert divisor_table(padded.description, "clipped-to-padding").tolist() == [[0, 2, 1]]


# -- refusal, NOT_SUPPORTED, errors, a wrong graph, the cache ----------------------------------------------
def test_invalid_case_is_refused_before_any_graph(backend: orb.OnnxRuntimeBackend) -> None:
    case = make_case("SLICE_GRAD", {"InputWindowOffsets": [0], "InputWindowSizes": [4], "InputWindowStrides": [1]},
                     {"InputGradientTensor": np.ones(4, np.float32)}, (4,))
    case.description = Description(case.op, {**case.description.params, "InputWindowStrides": (0,)},
                                   case.description.tensors)
    case.expect_invalid, case.expected = True, None
    fresh = orb.OnnxRuntimeBackend(ort, backend.choice)
    outcome = fresh.run(case)
    assert outcome.kind is OutcomeKind.REFUSED and "InputWindowStrides[0]" in outcome.message
    assert fresh.sessions_created == 0
    assert run_case(case, fresh, HIGHEST).status is Status.INVALID_OK


@pytest.mark.parametrize("construction", constructions_of("RESAMPLE_GRAD1"))
@pytest.mark.parametrize("dtype", dtypes_of("RESAMPLE_GRAD1"), ids=lambda d: d.name)
def test_non_finite_resample_gradient_takes_the_sparse_path(backend: orb.OnnxRuntimeBackend, dtype: DataType,
                                                             construction: str) -> None:
    """A dense MatMul would spread 0 * Inf; the Gather/Where/ReduceSum path keeps NaN and Inf where they belong."""
    dy = np.array([[1, np.inf, 2, 3], [np.nan, 1, 2, -np.inf]], dtype.numpy)
    params = {"InterpolationMode": "LINEAR", "RoundingDirection": "DECREASING", "Scales": [1.0, 2.0],
              "InputPixelOffsets": [0.0, 0.5], "OutputPixelOffsets": [0.0, -0.5]}
    case = make_case("RESAMPLE_GRAD1", params, {"InputGradientTensor": dy}, (2, 2))
    assert graphs.data_path(case.description, case.inputs) == "sparse"
    check(backend, case, construction)
    built = orb.OnnxRuntimeBackend(backend.runner, constructions={case.op.name: construction})
    assert np.isfinite(built.run(case).outputs["OutputGradientTensor"]).sum() == 0  # every dX element is hit


def test_sparse_and_dense_resample_paths_agree_on_finite_data(backend: orb.OnnxRuntimeBackend) -> None:
    dy = np.random.default_rng(3).normal(size=(3, 7, 5)).astype(np.float32)
    params = {"InterpolationMode": "LINEAR", "RoundingDirection": "DECREASING", "Scales": [1.0, 1.75, 0.5],
              "InputPixelOffsets": [0.0, 0.5, 0.5], "OutputPixelOffsets": [0.0, -0.5, -0.5]}
    case = make_case("RESAMPLE_GRAD1", params, {"InputGradientTensor": dy}, (3, 4, 9))
    results = []
    for path, construction in (("dense", None), ("sparse", "matmul"), ("sparse", "matmul-only")):
        graph = graphs.build_graph(case.description, None, path, construction)
        session = ort.InferenceSession(graph.model.SerializeToString(), providers=[CPU])
        results.append(session.run(None, {"InputGradientTensor": dy})[0])
    for result in results[1:]:
        np.testing.assert_allclose(results[0], result, rtol=1e-6, atol=1e-6)


def test_nan_with_pads_past_the_window_follows_a_candidate(backend: orb.OnnxRuntimeBackend) -> None:
    """Pads as large as the window (ONNX MaxPool would refuse them) and a NaN: the window table handles both."""
    x = np.array([[[[np.nan, 1, 2, 3]]]], np.float32)
    params = {"Strides": [1, 1], "WindowSize": [1, 2], "StartPadding": [0, 2], "EndPadding": [0, 0],
              "Dilations": [1, 1]}
    case = make_case("MAX_POOLING_GRAD", params, {"InputTensor": x, "InputGradientTensor": np.ones((1, 1, 1, 5),
                                                                                                   np.float32)}, x.shape)
    result = run_case(case, backend, HIGHEST)
    assert result.status is Status.PASS, result.message


@pytest.mark.parametrize("geometry", POOL_GEOMETRIES[:3], ids=lambda g: f"{len(g[0])}d-{g[1]}-{g[3]}")
def test_window_table_agrees_with_onnx_maxpool_on_tie_free_data(geometry: tuple) -> None:
    """The graph's window geometry against ONNX Runtime's own MaxPool (pads below the window, no ties, so
    ONNX MaxPool's unspecified tie-break cannot matter): same winner for every window."""
    from onnx import TensorProto, helper

    from dmlconform.backends.onnx_graphs.max_pooling_grad import window_table

    shape, window, strides, start, end, dilations = geometry
    x = np.random.default_rng(5).permutation(int(np.prod(shape))).astype(np.float32).reshape(shape)
    out = tuple((n + a + e - ((k - 1) * d + 1)) // s + 1
                for n, k, s, a, e, d in zip(shape[2:], window, strides, start, end, dilations, strict=True))
    params = {"Strides": strides, "WindowSize": window, "StartPadding": start, "Dilations": dilations}
    table, valid = window_table(shape, out, params)
    ours = table[np.arange(table.shape[0]), x.ravel()[table].argmax(axis=1)]
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=list(window), strides=list(strides),
                            dilations=list(dilations), pads=list(start) + list(end))
    graph = helper.make_graph([node], "pool", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("i", TensorProto.INT64, None)])
    model = helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 21)])
    _, indices = ort.InferenceSession(model.SerializeToString(), providers=[CPU]).run(None, {"x": x})
    assert valid.all()
    np.testing.assert_array_equal(ours, indices.ravel())


def test_containing_windows_lists_each_elements_windows_in_order_padded_with_the_never_winning_one() -> None:
    """The gather-sum construction's table C against its definition, element by element: the valid windows that
    have the element among their taps (each once, ascending), then the padding window number len(table)."""
    from dmlconform.backends.onnx_graphs.max_pooling_grad import containing_windows

    rng = np.random.default_rng(11)
    for _ in range(50):
        windows, taps, size = int(rng.integers(1, 30)), int(rng.integers(1, 9)), int(rng.integers(1, 60))
        table = rng.integers(0, size, (windows, taps))
        valid = rng.random(windows) < 0.8
        c = containing_windows(table, valid, size)
        for element in range(size):
            expected = [w for w in range(windows) if valid[w] and element in table[w]]
            row = c[element]
            assert list(row[: len(expected)]) == expected and (row[len(expected):] == windows).all(), (element, row)


def _failing_session(kind: str, message: str) -> Callable[..., Any]:
    error = type(kind, (Exception,), {})

    def create(*args: Any, **kwargs: Any) -> Any:
        raise error(message)
    return create


@pytest.mark.parametrize(("kind", "message", "status"), [
    ("NotImplemented", "Could not find an implementation for MaxPool(12) node with name ''", Status.NOT_SUPPORTED),
    ("Fail", "This session contains graph nodes that are assigned to the default CPU EP, but fallback to CPU EP "
             "has been explicitly disabled by the user.", Status.NOT_SUPPORTED),
    ("RuntimeException", "device removed", Status.ERROR)])
def test_provider_failures_are_mapped(kind: str, message: str, status: Status) -> None:
    fake = type("FakeOrt", (), {"InferenceSession": staticmethod(_failing_session(kind, message)),
                                "SessionOptions": ort.SessionOptions, "ExecutionMode": ort.ExecutionMode,
                                "__version__": ort.__version__})
    gpu = orb.OnnxRuntimeBackend(fake, orc.choose_provider("dml", [DML]))  # type: ignore[arg-type]
    case = make_case("ACTIVATION_RELU_GRAD", {}, {"InputTensor": np.ones(2, np.float32),
                                                 "InputGradientTensor": np.ones(2, np.float32)}, (2,))
    result = run_case(case, gpu, HIGHEST)
    assert result.status is status
    assert "\n" not in result.message and (kind in result.message)


def test_a_wrong_graph_result_is_caught(monkeypatch: pytest.MonkeyPatch, backend: orb.OnnxRuntimeBackend) -> None:
    """ReluGrad built with GreaterOrEqual passes dY at X = 0: the comparison must fail it."""
    def wrong(desc: Description) -> graphs.Graph:
        dtype, shape = desc.output.dtype, desc.output.shape
        b = GraphBuilder("wrong")
        x, dy = b.input("InputTensor", dtype, shape), b.input("InputGradientTensor", dtype, shape)
        keep = b.op("GreaterOrEqual", [x, b.zero(dtype)])
        return b.finish(b.op("Where", [keep, dy, b.zero(dtype)]), dtype, shape, "wrong on purpose")

    monkeypatch.setitem(graphs.CONSTRUCTIONS, "ACTIVATION_RELU_GRAD",
                        (graphs.Construction("wrong", lambda desc, variant, path: wrong(desc), "wrong on purpose"),))
    fresh = orb.OnnxRuntimeBackend(ort, backend.choice)
    case = make_case("ACTIVATION_RELU_GRAD", {}, {"InputTensor": np.array([-1, 0, 2], np.float32),
                                                 "InputGradientTensor": np.array([5, 6, 7], np.float32)}, (3,))
    result = run_case(case, fresh, HIGHEST)
    assert result.status is Status.FAIL and result.worst_index == (1,)


def test_sessions_are_cached_by_graph_signature(backend: orb.OnnxRuntimeBackend) -> None:
    fresh = orb.OnnxRuntimeBackend(ort, backend.choice)
    rng = np.random.default_rng(0)
    for _ in range(3):
        x, dy = rng.normal(size=(2, 3)).astype(np.float32), rng.normal(size=(2, 3)).astype(np.float32)
        check(fresh, make_case("ACTIVATION_RELU_GRAD", {}, {"InputTensor": x, "InputGradientTensor": dy}, (2, 3)))
    assert fresh.sessions_created == 1
    check(fresh, make_case("ACTIVATION_RELU_GRAD", {}, {"InputTensor": x[:1], "InputGradientTensor": dy[:1]},
                           (1, 3)))
    assert fresh.sessions_created == 2


def test_bundled_seed_suite_passes() -> None:
    seed = Path(__file__).parents[2] / "test_vectors" / "seed"
    result = CliRunner().invoke(main, ["run", "--backend", "onnxruntime", "--ep", "cpu", str(seed)])
    assert result.exit_code == 0, result.output


def test_the_directml_constructions_keep_every_tensor_within_eight_dimensions() -> None:
    """DirectML takes tensors of at most 8 dimensions (DML_TENSOR_DIMENSION_COUNT_MAX1): on the smoke tier's
    highest-rank cases, no value of a graph built for the DirectML EP has more (ONNX shape inference)."""
    from onnx import shape_inference

    from dmlconform.cli.common import bundled_suites
    from dmlconform.suite.loader import load_paths
    from dmlconform.suite.tiers import Tier

    cases = [c for c in load_paths([bundled_suites()], tier=Tier.SMOKE) if not c.expect_invalid]
    highest: dict[tuple[str, DataType], Case] = {}
    for case in cases:
        key = (case.op.name, case.dtype)
        if key not in highest or case.rank > highest[key].rank:
            highest[key] = case
    assert max(case.rank for case in highest.values()) == 8
    for case in highest.values():
        graph = graphs.build_graph(case.description, None, graphs.data_path(case.description, case.inputs), ep="dml")
        inferred = shape_inference.infer_shapes(graph.model, strict_mode=True).graph
        ranks = {value.name: len(value.type.tensor_type.shape.dim)
                 for value in [*inferred.value_info, *inferred.output, *inferred.input]}
        assert max(ranks.values()) <= 8, f"{case.full_id}: {max(ranks, key=ranks.get)} has {max(ranks.values())}"


def same_shape_float32_arithmetic(model: Any) -> list[str]:
    """The nodes the DirectML EP fails to compile under Wine (DirectML >= 1.13's DXIL-only shader, which vkd3d 1.6
    cannot take: examples/ort_dml_host/same_shape_arithmetic.py): a float32 Add, Sub, Mul, Div, Max or Min whose
    operands have one shape after ONNX broadcasting and a multiple of 4 elements (ONNX shape inference)."""
    from onnx import TensorProto, shape_inference

    inferred = shape_inference.infer_shapes(model, strict_mode=True, data_prop=True).graph
    typed = {value.name: (value.type.tensor_type.elem_type, [dim.dim_value for dim in value.type.tensor_type.shape.dim])
             for value in [*inferred.value_info, *inferred.input, *inferred.output]}
    typed.update({tensor.name: (tensor.data_type, list(tensor.dims)) for tensor in inferred.initializer})
    found = []
    for node in inferred.node:
        if node.op_type not in ("Add", "Sub", "Mul", "Div", "Max", "Min"):
            continue
        operands = [typed[name] for name in node.input]
        if any(elem_type != TensorProto.FLOAT for elem_type, _ in operands):
            continue
        rank = max(len(shape) for _, shape in operands)
        aligned = [[1] * (rank - len(shape)) + shape for _, shape in operands]
        assert all(0 not in shape for shape in aligned), f"{node.op_type} '{node.output[0]}': shapes not inferred"
        if all(shape == aligned[0] for shape in aligned) and int(np.prod(aligned[0])) % 4 == 0:
            found.append(f"{node.op_type} '{node.output[0]}' on {aligned[0]}")
    return found


def test_the_same_shape_check_finds_what_failed_on_the_directml_ep() -> None:
    """The check above finds the node of each failing graph: Div([1, 16], [16]) and the Div of the conv-transpose
    construction where N*C = 1 (the DirectML EP failed 48 AveragePoolingGrad cases with it); not a broadcast one."""
    from onnx import TensorProto

    def div(a: list[int], b: list[int]) -> Any:
        graph = helper.make_graph([helper.make_node("Div", ["A", "B"], ["Y"])], "div",
                                  [helper.make_tensor_value_info("A", TensorProto.FLOAT, a),
                                   helper.make_tensor_value_info("B", TensorProto.FLOAT, b)],
                                  [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
        return helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 21)])

    assert same_shape_float32_arithmetic(div([1, 16], [16])) == ["Div 'Y' on [1, 16]"]
    assert same_shape_float32_arithmetic(div([2, 2], [2, 2])) == ["Div 'Y' on [2, 2]"]
    for a, b in (([2, 16], [16]), ([1, 16, 1], [16, 2]), ([1, 6], [6]), ([8], [])):
        assert same_shape_float32_arithmetic(div(a, b)) == [], (a, b)
    case = make_case("AVERAGE_POOLING_GRAD", {"Strides": [1, 1], "WindowSize": [2, 2], "StartPadding": [0, 0],
                                              "EndPadding": [0, 0], "IncludePadding": False},
                     {"InputGradientTensor": np.ones((1, 1, 2, 2), np.float32)}, (1, 1, 3, 3))
    found = same_shape_float32_arithmetic(graphs.build_graph(case.description, None, "", "conv-transpose").model)
    assert [entry.split()[0] for entry in found] == ["Div"]


def test_the_directml_constructions_avoid_float32_arithmetic_on_operands_of_one_shape() -> None:
    """No graph built for the DirectML EP has a node the check above finds: every valid case of the standard tier's
    AveragePoolingGrad suite (the 22 whose sessions failed with the first gather-sum graph among them: N*C = 1 and a
    multiple of 4 windows; the check finds exactly those 22 in that graph) and the smoke tier's valid cases of every
    operator. The default reading only: a reading changes a graph's tables, not the shapes of its nodes."""
    from dmlconform.cli.common import bundled_suites
    from dmlconform.suite.loader import load_paths, load_suite
    from dmlconform.suite.tiers import Tier

    suites = bundled_suites()
    pooling, _ = load_suite(suites / "standard" / "average_pooling_grad.yaml", suites)
    smoke = load_paths([suites], tier=Tier.SMOKE)
    checked = 0
    for case in [*pooling, *smoke]:
        if case.expect_invalid:
            continue
        graph = graphs.build_graph(case.description, None, graphs.data_path(case.description, case.inputs), ep="dml")
        assert same_shape_float32_arithmetic(graph.model) == [], case.full_id
        checked += 1
    assert checked > 800
