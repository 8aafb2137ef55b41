"""The DirectML harness (windows/dml_harness): cross-built by the wheel's build (windows/build.py), run on the real
DirectML.dll under Wine as the directml backend starts it.

Needs x86_64-w64-mingw32-g++, /usr/lib/wine/wine64 (or $WINE), Xvfb (or $DISPLAY) and DirectML.dll
($DMLH_DIRECTML_DLL, or `dmlconform fetch directml`'s); skips with the missing piece named otherwise. Which results
DirectML computes needs a Vulkan driver that Wine's d3d12 can dispatch on (Mesa's lavapipe from
bookworm-backports): the handshake, refusal and protocol tests below do not depend on it, the
bundled-case test does.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from dmlconform import harness_protocol as protocol
from tests.harness.wine_tools import (
    Raw,
    built_programs,
    directml_dll,
    missing_for_the_harness,
    program_command,
)

#: What wine_ready (conftest.py) skips the module for.
_missing = missing_for_the_harness

#: Wine start-up plus D3D12/DirectML device creation is a few seconds; a cold prefix takes longer.
START_S = 120.0

# Wine is slow to start; the harness is built, with a Wine prefix of its own, once for the module (and the module
# runs on one pytest-xdist worker: --dist loadfile).
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory, wine_ready: None) -> str:
    """The packaged harness's command line, as the directml backend starts it: built by the wheel's own build, on the
    package's Wine prefix and display, and lavapipe with vkd3d's virtual descriptor heaps (directml/start.py; with
    vkd3d's default heaps lavapipe fills 1.5 GB of host memory at each harness's first heap, 0.8 s of CPU a start)."""
    programs = built_programs(tmp_path_factory.mktemp("programs"))
    dll = directml_dll()
    assert dll is not None
    return program_command(programs / "dml_harness.exe", {"--dml": dll}, virtual_heaps=True)


# -- a raw protocol client, for what the runner itself never sends --------------------------------
def _stop(client: Raw) -> None:
    if client.process.poll() is None:
        client.process.kill()
        client.process.wait(timeout=30)


@pytest.fixture
def raw(harness: str) -> Iterator[Raw]:
    client = Raw(harness)
    yield client
    _stop(client)


@pytest.fixture(scope="module")
def _live_harness() -> Iterator[dict[str, Raw]]:
    holder: dict[str, Raw] = {}
    yield holder
    if "client" in holder:
        _stop(holder["client"])


@pytest.fixture
def live(harness: str, _live_harness: dict[str, Raw], request: pytest.FixtureRequest) -> Iterator[Raw]:
    """One harness, past its hello, shared by the tests of requests it must answer and then go on: Wine and the
    device start once for all of them, and each test's requests come after the previous test's, as in a run. A test
    that fails leaves the next one a fresh harness (its stream may be mid-frame)."""
    client = _live_harness.get("client")
    if client is None or client.process.poll() is not None:
        client = _live_harness["client"] = Raw(harness)
        client.hello()
    failed = request.session.testsfailed
    yield client
    if request.session.testsfailed != failed:
        _stop(client)


def relu_request(case_id: str, x_shape: list[int], dy_shape: list[int], out_shape: list[int]) -> tuple[dict, bytes]:
    x = np.linspace(-2, 2, int(np.prod(x_shape)), dtype=np.float32).reshape(x_shape)
    dy = np.arange(int(np.prod(dy_shape)), dtype=np.float32).reshape(dy_shape) + 1
    entries, payload = protocol.pack_tensors([("InputTensor", x), ("InputGradientTensor", dy)])
    header = {"id": case_id, "op": "ACTIVATION_RELU_GRAD", "params": {}, "inputs": entries,
              "outputs": [{"name": "OutputGradientTensor", "DataType": 1, "Sizes": out_shape}]}
    return header, payload


# -- handshake ---------------------------------------------------------------------------------------
def test_handshake_reports_directml_and_its_queried_feature_level(live: Raw) -> None:
    """The hello of the harness the tests below share, read as the native backend reads it."""
    assert live.greeting is not None
    hello = protocol.decode_hello(live.greeting)
    assert hello.name == "dml_harness"
    assert hello.api.startswith("DirectML 1."), hello.api  # the file version of the DirectML.dll loaded
    assert hello.feature_level.value >= 0x5100, hello.feature_level  # 1.15.x reports 6_4
    assert "CheckFeatureSupport(DML_FEATURE_FEATURE_LEVELS)" in hello.feature_level_source
    assert hello.adapter and hello.driver_version
    assert hello.operators is not None
    assert set(hello.operators) == {"ACTIVATION_RELU_GRAD", "ELEMENT_WISE_CLIP_GRAD1", "SLICE_GRAD",
                                    "MAX_POOLING_GRAD", "RESAMPLE_GRAD1", "AVERAGE_POOLING_GRAD", "RESAMPLE_GRAD",
                                    "ELEMENT_WISE_CLIP_GRAD"}
    for dtypes in hello.operators.values():
        assert {"FLOAT32", "FLOAT16"} <= {d.name for d in dtypes}
    # Tables intersected with the device's data types: MaxPoolingGrad and ResampleGrad1 are float-only.
    assert {d.name for d in hello.operators["RESAMPLE_GRAD1"]} == {"FLOAT32", "FLOAT16"}
    assert "INT8" in {d.name for d in hello.operators["ACTIVATION_RELU_GRAD"]}  # from 5_1
    assert hello.extra["dml_debug_layer"] == "off" and hello.extra["d3d_feature_level"]
    assert hello.extra["wine"]  # wine_get_version, found in ntdll under Wine
    assert "DML_FEATURE_TENSOR_DATA_TYPE_SUPPORT" in hello.extra["dml_tensor_data_types"]


def test_handshake_rejects_another_protocol_version(raw: Raw) -> None:
    raw.send(protocol.encode_frame({"type": "hello", "protocol": 2, "client": "test"}))
    reply = raw.frame()
    assert reply.type == "error" and "protocol 1" in reply.header["message"]
    assert raw.process.wait(timeout=60) == 2


def test_a_bad_command_line_is_exit_2_naming_the_option(harness: str) -> None:
    """The device options are read by code the ONNX Runtime host shares (d3d12_device.cpp: read_device_option)."""
    def stderr_of(option: str) -> str:
        ran = subprocess.run([*shlex.split(harness), option], stdin=subprocess.DEVNULL, capture_output=True,
                             text=True, timeout=START_S)
        assert ran.returncode == 2 and ran.stdout == "", ran.stderr
        return ran.stderr

    unknown = stderr_of("--bogus")
    assert "dml-harness: unknown option --bogus\n" in unknown  # then the usage, the device's options last
    assert "--poison BYTE|none" in unknown and "the device:\n  --dml PATH" in unknown and "--debug-layer" in unknown
    assert "dml-harness: --adapter needs a value\n" in stderr_of("--adapter")


# -- DirectML's own refusal, and the harness's --------------------------------------------------------
def test_directml_refuses_an_invalid_description_with_its_hresult(live: Raw) -> None:
    header, payload = relu_request("t/sizes-differ", [1, 4], [1, 4], [1, 5])  # output Sizes differ
    reply = live.run(header, payload)
    assert reply["status"] == "refused", reply
    assert reply["message"].startswith("IDMLDevice::CreateOperator: E_INVALIDARG (0x80070057)"), reply
    # The device survives a refusal: the next, valid case runs (and the harness exits 0 at the end:
    # test_the_harness_that_answered_all_that_exits_0_when_its_stdin_closes).
    header, payload = relu_request("t/valid", [1, 4], [1, 4], [1, 4])
    assert live.run(header, payload)["status"] == "ok"


def test_array_shorter_than_dimension_count_is_refused_before_directml(live: Raw) -> None:
    dy = np.ones((2, 2), np.float32)
    entries, payload = protocol.pack_tensors([("InputGradientTensor", dy)])
    reply = live.run({"id": "t/short-array", "op": "SLICE_GRAD",
                      "params": {"DimensionCount": 2, "InputWindowOffsets": [0], "InputWindowSizes": [2, 2],
                                 "InputWindowStrides": [1, 1]},
                      "inputs": entries, "outputs": [{"name": "OutputGradientTensor", "DataType": 1, "Sizes": [2, 2]}]},
                     payload)
    assert reply["status"] == "refused"
    assert "harness validation" in reply["message"] and "InputWindowOffsets" in reply["message"]


def test_a_valid_run_returns_directmls_output(live: Raw) -> None:
    """SliceGrad moves bytes only, so the result is exact whatever the Vulkan driver's arithmetic."""
    dy = np.array([[1, 3], [9, 11]], np.int64)
    entries, payload = protocol.pack_tensors([("InputGradientTensor", dy)])
    reply_header = {"id": "t/slice", "op": "SLICE_GRAD",
                    "params": {"DimensionCount": 2, "InputWindowOffsets": [0, 0], "InputWindowSizes": [4, 4],
                               "InputWindowStrides": [2, -2]},
                    "inputs": entries, "outputs": [{"name": "OutputGradientTensor", "DataType": 11, "Sizes": [4, 4]}]}
    live.send(protocol.encode_frame({"type": "run", **reply_header}, payload))
    reply = live.frame()
    assert reply.header["status"] == "ok", reply.header
    (entry,) = reply.header["outputs"]
    assert entry["name"] == "OutputGradientTensor" and entry["Sizes"] == [4, 4] and entry["nbytes"] == 128
    out = protocol.unpack_tensor(entry, reply.payload, "outputs")[1]
    # stride -2 on the last axis starts at offset + size - 1 = 3 and walks backwards
    expected = np.array([[0, 3, 0, 1], [0, 0, 0, 0], [0, 11, 0, 9], [0, 0, 0, 0]], np.int64)
    if (out.view(np.uint8) == 0xCD).all():
        pytest.fail("the output still holds the harness's poison bytes: the dispatch did not run "
                    "(Wine's d3d12 on a Vulkan driver without VK_EXT_descriptor_indexing drops it; see README)")
    np.testing.assert_array_equal(out, expected)


# -- the operators of issue 41: their pages' worked examples, on the real DirectML ----------------------------------
def output_of(live: Raw, case_id: str, op: str, params: dict, inputs: list[tuple[str, np.ndarray]],
              out_shape: list[int], out_type: int = 1) -> np.ndarray:
    """DirectML's OutputGradientTensor for one request (a failure names the reply when it is not ok)."""
    entries, payload = protocol.pack_tensors(inputs)
    reply = live.exchange({"id": case_id, "op": op, "params": params, "inputs": entries,
                           "outputs": [{"name": "OutputGradientTensor", "DataType": out_type, "Sizes": out_shape}]},
                          payload)
    assert reply.header["status"] == "ok", reply.header
    return protocol.unpack_tensor(reply.header["outputs"][0], reply.payload, "outputs")[1]


def average_pooling_grad_by_loops(dy: np.ndarray, in_hw: tuple[int, int], window: int, pad: int,
                                  include_padding: bool) -> np.ndarray:
    """The gradient of a 2-D average pooling (stride 1, the same padding on every side) written out: each dY
    element spread evenly over its window's elements inside the input, divided by the window's size with padding
    included, else by the count of those elements."""
    dx = np.zeros(in_hw, np.float64)
    for (oh, ow), g in np.ndenumerate(dy):
        rows = [h for h in range(oh - pad, oh - pad + window) if 0 <= h < in_hw[0]]
        cols = [w for w in range(ow - pad, ow - pad + window) if 0 <= w < in_hw[1]]
        count = window * window if include_padding else len(rows) * len(cols)
        for h in rows:
            for w in cols:
                dx[h, w] += g / count
    return dx.astype(np.float32)


def test_average_pooling_grad_gives_its_pages_example(live: Raw) -> None:
    """The page: a 2x2 window, stride 1, no padding, over a 3x3 input; exact (quarters of small integers)."""
    params = {"DimensionCount": 2, "Strides": [1, 1], "WindowSize": [2, 2], "StartPadding": [0, 0],
              "EndPadding": [0, 0], "IncludePadding": 0}
    dy = np.array([[[[1, 2], [3, 4]]]], np.float32)
    out = output_of(live, "t/avg-page", "AVERAGE_POOLING_GRAD", params, [("InputGradientTensor", dy)], [1, 1, 3, 3])
    np.testing.assert_array_equal(out, [[[[0.25, 0.75, 0.5], [1, 2.5, 1.5], [0.75, 1.75, 1]]]])


def test_average_pooling_grad_passes_include_padding(live: Raw) -> None:
    """Padding 1 all round a 2x2 input, 2x2 windows: with IncludePadding every window divides by 4, without it by the
    1, 2 or 4 elements it covers (exact either way); the two differ, so a harness that dropped the field fails one."""
    dy = np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)
    results = {}
    for include in (False, True):
        params = {"DimensionCount": 2, "Strides": [1, 1], "WindowSize": [2, 2], "StartPadding": [1, 1],
                  "EndPadding": [1, 1], "IncludePadding": int(include)}
        out = output_of(live, f"t/avg-pad-{int(include)}", "AVERAGE_POOLING_GRAD", params,
                        [("InputGradientTensor", dy)], [1, 1, 2, 2])
        expected = average_pooling_grad_by_loops(dy[0, 0], (2, 2), window=2, pad=1, include_padding=include)
        np.testing.assert_array_equal(out[0, 0], expected)
        results[include] = out
    np.testing.assert_array_equal(results[False][0, 0], [[5.25, 8.25], [14.25, 17.25]])  # as DirectML 1.15.4 gave
    assert not np.array_equal(results[False], results[True])


def test_clip_grad_zeroes_at_and_beyond_min_and_max(live: Raw) -> None:
    """The page's formula: x <= Min or x >= Max gives 0, anything else dY; Min and Max are FLOATs on the wire as
    numbers, or the strings "inf"/"-inf" (no bound)."""
    x = np.array([-3, -1, -0.5, 0, 1.5, 2, 3], np.float32)
    dy = np.arange(1, 8, dtype=np.float32)
    inputs = [("InputTensor", x), ("InputGradientTensor", dy)]
    out = output_of(live, "t/clip", "ELEMENT_WISE_CLIP_GRAD", {"Min": -1, "Max": 2}, inputs, [7])
    np.testing.assert_array_equal(out, np.where((x > -1) & (x < 2), dy, 0))
    np.testing.assert_array_equal(out, [0, 0, 3, 4, 5, 0, 0])
    unbounded = output_of(live, "t/clip-inf", "ELEMENT_WISE_CLIP_GRAD", {"Min": "-inf", "Max": "inf"}, inputs, [7])
    np.testing.assert_array_equal(unbounded, dy)


def test_clip_grad_zeroes_a_nan_input(live: Raw) -> None:
    """NaN fails both of the page's tests, so its literal formula passes dY; DirectML 1.15.4 gives 0, as it does for
    ClipGrad1 (its `nan-zero` variant): `Min < x < Max ? dY : 0`."""
    x = np.array([np.nan, 0.5], np.float32)
    out = output_of(live, "t/clip-nan", "ELEMENT_WISE_CLIP_GRAD", {"Min": -1, "Max": 2},
                    [("InputTensor", x), ("InputGradientTensor", np.array([7, 8], np.float32))], [2])
    np.testing.assert_array_equal(out, [0, 8])


#: ResampleGrad's page example: forward nearest-neighbour scales 0.5 (H) and 1.5 (W), [4, 5, 6] back to 2x2.
RESAMPLE_PAGE = {"InterpolationMode": 0, "DimensionCount": 4, "Scales": [1, 1, 0.5, 1.5]}


def resample_offsets(input_offset: float, output_offset: float) -> dict[str, list[float]]:
    """The offsets on H and W (N and C are copied: scale 1, offsets 0)."""
    return {"InputPixelOffsets": [0, 0, input_offset, input_offset],
            "OutputPixelOffsets": [0, 0, output_offset, output_offset]}


def test_resample_grad_gives_its_pages_example(live: Raw) -> None:
    """The page names no offsets. With InputPixelOffsets = OutputPixelOffsets = 0.5 (the same under either reading of
    which offset is which) DirectML gives the page's [[9, 6], [0, 0]]; so do (0.5, 0) and (0, 0.5), and no other pair
    from {-0.5, 0, 0.5}: the v0 nearest rule rounds half up, floor(x + 0.5)."""
    dy = np.array([[[[4, 5, 6]]]], np.float32)
    for ipo, opo in ((0.5, 0.5), (0.5, 0.0), (0.0, 0.5)):
        out = output_of(live, f"t/resample-page-{ipo}-{opo}", "RESAMPLE_GRAD",
                        {**RESAMPLE_PAGE, **resample_offsets(ipo, opo)}, [("InputGradientTensor", dy)], [1, 1, 2, 2])
        np.testing.assert_array_equal(out, [[[[9, 6], [0, 0]]]], err_msg=f"offsets {ipo}, {opo}")


def test_resample_grad_names_its_offsets_after_its_own_tensors(live: Raw) -> None:
    """InputPixelOffsets 0.5, OutputPixelOffsets -0.5 tell the two readings apart: read as the forward's (H1),
    x = (y + 0.5)/S - 0.5 puts H's 0.5 on row 1; read after the gradient's own tensors (H2, ResampleGrad1's
    `swapped`), x = (y - 0.5)/S + 0.5 puts it on row 0 (H at -0.5; W at 0.17, 0.83, 1.5 -> columns 0, 1, 1).
    DirectML 1.15.4 gives the second; and LINEAR differs from NEAREST_NEIGHBOR, so the mode reaches DirectML."""
    dy = np.array([[[[4, 5, 6]]]], np.float32)
    out = output_of(live, "t/resample-swapped", "RESAMPLE_GRAD", {**RESAMPLE_PAGE, **resample_offsets(0.5, -0.5)},
                    [("InputGradientTensor", dy)], [1, 1, 2, 2])
    np.testing.assert_array_equal(out, [[[[4, 11], [0, 0]]]])
    # Scale 2, offsets 0 on W: x = y/2 = 0, 0.5, 1, 1.5 over two elements (the last tap clamped).
    dy = np.array([[[[1, 2, 4, 8]]]], np.float32)
    twice = {"DimensionCount": 4, "Scales": [1, 1, 1, 2], **resample_offsets(0, 0)}
    nearest = output_of(live, "t/resample-nearest", "RESAMPLE_GRAD", {**twice, "InterpolationMode": 0},
                        [("InputGradientTensor", dy)], [1, 1, 1, 2])
    linear = output_of(live, "t/resample-linear", "RESAMPLE_GRAD", {**twice, "InterpolationMode": 1},
                       [("InputGradientTensor", dy)], [1, 1, 1, 2])
    np.testing.assert_array_equal(nearest, [[[[1, 14]]]])  # y -> round half up (x): 0, 1, 1, 2 -> clamped 1
    np.testing.assert_array_equal(linear, [[[[2, 13]]]])  # 1 + 2/2, 2/2 + 4 + 8


# -- malformed requests -------------------------------------------------------------------------------
def test_malformed_requests_get_error_replies_and_the_harness_goes_on(live: Raw) -> None:
    # A well-delimited frame whose header is not JSON: answered (no id to echo), stream kept.
    live.send(protocol.PREFIX.pack(protocol.MAGIC, 5, 0) + b"{oops")
    bad = live.frame()
    assert bad.header["status"] == "error" and "not valid JSON" in bad.header["message"]
    header, payload = relu_request("t/nbytes", [4], [4], [4])
    header["inputs"][0]["nbytes"] = 12
    reply = live.run(header, payload)
    assert reply["status"] == "error" and "nbytes 12 disagrees" in reply["message"]
    header, payload = relu_request("t/outside", [4], [4], [4])
    header["inputs"][1]["offset"] = len(payload)
    assert "outside the payload" in live.run(header, payload)["message"]
    header, payload = relu_request("t/no-input", [4], [4], [4])
    header["inputs"] = header["inputs"][:1]
    reply = live.run(header, payload)
    assert reply["status"] == "error" and "InputGradientTensor" in reply["message"]
    reply = live.run({"id": "t/unknown-op", "op": "ROI_ALIGN_GRAD", "inputs": [], "outputs": []})
    assert reply["status"] == "unsupported" and "ROI_ALIGN_GRAD" in reply["message"]
    header, payload = relu_request("t/clip-no-min", [2], [2], [2])
    header.update(op="ELEMENT_WISE_CLIP_GRAD1", params={"MinMaxDataType": 1})
    reply = live.run(header, payload)
    assert reply["status"] == "error" and "params.Min" in reply["message"]
    # ClipGrad's FLOATs and AveragePoolingGrad's BOOL: a value of the wrong kind is named.
    for params, field in (({"Min": "low", "Max": 1}, "params.Min: low is not a number"),
                          ({"Min": 0, "Max": [1]}, "params.Max must be a number"),
                          ({"Min": 0}, "request lacks params.Max")):
        header, payload = relu_request("t/clip-v0-bad", [2], [2], [2])
        header.update(op="ELEMENT_WISE_CLIP_GRAD", params=params)
        reply = live.run(header, payload)
        assert reply["status"] == "error" and field in reply["message"], reply
    pooling = {"DimensionCount": 2, "Strides": [1, 1], "WindowSize": [2, 2], "StartPadding": [0, 0],
               "EndPadding": [0, 0]}
    entries, payload = protocol.pack_tensors([("InputGradientTensor", np.ones((1, 1, 2, 2), np.float32))])
    for include, status, field in ((True, "error", "params.IncludePadding must be an integer"),
                                   (1 << 40, "refused", "does not fit its BOOL field"),
                                   (None, "error", "request lacks params.IncludePadding")):
        params = pooling if include is None else {**pooling, "IncludePadding": include}
        reply = live.run({"id": "t/avg-bad", "op": "AVERAGE_POOLING_GRAD", "params": params, "inputs": entries,
                          "outputs": [{"name": "OutputGradientTensor", "DataType": 1, "Sizes": [1, 1, 3, 3]}]},
                         payload)
        assert reply["status"] == status and field in reply["message"], reply
    header, payload = relu_request("t/still-alive", [4], [4], [4])
    assert live.run(header, payload)["status"] == "ok"


def test_the_harness_that_answered_all_that_exits_0_when_its_stdin_closes(live: Raw) -> None:
    """The harness of the tests above (refusals, validation errors, malformed frames) ends cleanly: exit code 0."""
    header, payload = relu_request("t/last", [4], [4], [4])
    assert live.run(header, payload)["status"] == "ok"
    code, stderr = live.finish()
    assert code == 0, stderr


def test_run_before_hello_and_broken_stream(raw: Raw) -> None:
    header, payload = relu_request("t/early", [4], [4], [4])
    reply = raw.run(header, payload)
    assert reply["status"] == "error" and "before the hello" in reply["message"]
    raw.send(b"XXXX" + bytes(12))  # bad magic: the stream cannot be resynchronised
    code, stderr = raw.finish()
    assert code == 2 and "unreadable frame" in stderr


# -- bundled cases through the CLI --------------------------------------------------------------------
#: Seed examples, every operator's invalid cases and a spread of valid ones, whose DirectML behaviour is established
#: on every stack (examples/dml_harness/results/DECISIONS.md). MaxPoolingGrad with a gradient smaller or larger than
#: the pooled size (DirectML refuses it) is left out on purpose.
SELECTION = ("seed or relu_grad.invalid or clip_grad1.invalid or slice_grad.invalid or max_pooling_grad.invalid or "
             "resample_grad1.invalid or relu_grad.edge or slice_grad.smoke or clip_grad1.edge")
#: DirectML 1.15.4 accepts this invalid description (a window of size 0, which Slice1's page forbids), and fails the
#: smoke tier's cases built for its two known bugs: the expected failures of the selection.
KNOWN_ACCEPTED = {"slice_grad.invalid/window-size-zero",
                  # DirectML 1.15.4's two known bugs (examples/dml_harness/results/DECISIONS.md §8), in the smoke tier
                  "slice_grad.smoke/merged-axes-float32-r2-0", "slice_grad.smoke/merged-axes-int32-r3-1",
                  "max_pooling_grad.smoke/lowest-windows-float32-r4-0",
                  "max_pooling_grad.smoke/lowest-windows-float32-r5-nan-1",
                  # issue 41: DirectML 1.15.4's zero stride or window, NaN offsets, and INT64 comparison
                  "average_pooling_grad.invalid/stride-zero", "average_pooling_grad.invalid/window-zero",
                  "resample_grad.invalid/input-offset-nan", "resample_grad.invalid/output-offset-nan",
                  "resample_grad.invalid/coordinate-nan", "clip_grad.edge/int64-low-word-sign-bit",
                  "clip_grad1.int64/int64-low-word-sign-bit"}
#: Statuses that stand for another (expectations applied): the judged status is in the case's `outcome`.
SETTLED = {"EXPECTED_FAIL", "UNEXPECTED_PASS", "FLAKE"}


@cache
def selected_cases() -> dict[str, bool]:
    """The selection's case ids, each with whether the case is a negative one."""
    from dmlconform.cli import bundled_suites
    from dmlconform.suite.loader import load_paths
    from dmlconform.suite.select import select

    return {case.full_id: case.expect_invalid for case in select(load_paths([bundled_suites()]), SELECTION)}


def check_bundled_cases_on_directml(report: Path) -> None:
    """The selection's cases in a `dmlconform run` result on the real DirectML: each came out as established."""
    selected = set(selected_cases())
    ran = {case["id"]: case for case in json.loads(report.read_text())["cases"]}
    assert selected <= set(ran), f"{report} lacks {sorted(selected - set(ran))[:5]}: run the smoke tier or more"
    by_status: dict[str, list[str]] = {}
    for case_id in sorted(selected):
        case = ran[case_id]
        status = case["outcome"] if case["status"] in SETTLED else case["status"]
        by_status.setdefault(status, []).append(case_id)
    unexpected = {s: ids for s, ids in by_status.items() if s not in ("PASS", "INVALID_OK")}
    assert set(unexpected.get("FAIL", [])) <= KNOWN_ACCEPTED and set(unexpected) <= {"FAIL"}, unexpected
    assert len(by_status.get("PASS", [])) >= 40 and len(by_status.get("INVALID_OK", [])) >= 55, by_status
    assert all(ran[case_id]["status"] == "PASS" for case_id in selected if case_id.startswith("seed/"))


# -- --timings and the shared descriptor heap ------------------------------------------------------------
def maxpool_request(case_id: str) -> tuple[dict, bytes]:
    """MaxPoolingGrad 3x3 stride 2 pad 1 on 1x1x5x5: the operator that asks for the most descriptors (6)
    and a temporary resource."""
    x = np.array([(i * 7) % 11 - 5 for i in range(25)], np.float32).reshape(1, 1, 5, 5)
    dy = np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)
    entries, payload = protocol.pack_tensors([("InputTensor", x), ("InputGradientTensor", dy)])
    header = {"id": case_id, "op": "MAX_POOLING_GRAD",
              "params": {"DimensionCount": 2, "Strides": [2, 2], "WindowSize": [3, 3], "StartPadding": [1, 1],
                         "EndPadding": [1, 1], "Dilations": [1, 1]},
              "inputs": entries, "outputs": [{"name": "OutputGradientTensor", "DataType": 1, "Sizes": [1, 1, 5, 5]}]}
    return header, payload


def replies(command: str, requests: list[tuple[dict, bytes]]) -> list[tuple[dict, bytes]]:
    client = Raw(command)
    try:
        client.hello()
        answers = []
        for header, payload in requests:
            client.send(protocol.encode_frame({"type": "run", **header}, payload))
            frame = client.frame()
            answers.append((frame.header, frame.payload))
        assert client.finish()[0] == 0
        return answers
    finally:
        if client.process.poll() is None:
            client.process.kill()


#: What the tests below send, each to a harness of its own with one option changed: a large case then a small one
#: (the small one must see none of the large one's bytes), MaxPoolingGrad (the most descriptors, and a temporary
#: resource) after ReluGrad, a refusal, an odd size, and the first case and the pooling again (on the reused buffers
#: and heap).
SEQUENCE = [relu_request("t/large", [64, 64], [64, 64], [64, 64]), relu_request("t/small", [3], [3], [3]),
            maxpool_request("t/pool"), relu_request("t/refused", [1, 4], [1, 4], [1, 5]),
            relu_request("t/odd", [5, 7], [5, 7], [5, 7]), relu_request("t/large", [64, 64], [64, 64], [64, 64]),
            maxpool_request("t/pool2")]
SEQUENCE_STATUSES = ["ok", "ok", "ok", "refused", "ok", "ok", "ok"]


@pytest.fixture(scope="module")
def plain(harness: str) -> list[tuple[dict, bytes]]:
    """The replies of the harness with no option to SEQUENCE, which each option below must give again: one run for
    all the tests that compare with it."""
    return replies(harness, SEQUENCE)


def test_timings_write_a_line_per_request_and_change_no_reply(harness: str, plain: list[tuple[dict, bytes]],
                                                              tmp_path: Path) -> None:
    timed = replies(f"{harness} --timings {tmp_path}/t-%p.jsonl", SEQUENCE)
    assert [h["status"] for h, _ in plain] == SEQUENCE_STATUSES
    assert timed == plain  # headers and output bytes
    (path,) = tmp_path.glob("t-*.jsonl")
    start, *lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert start["event"] == "start" and path.name == f"t-{start['pid']}.jsonl" and start["device_us"] > 0
    steps = start["steps_us"]  # where the start went: each step's end, in order, within the device's creation
    assert list(steps) == ["begin", "directml_loaded", "dxgi_factory", "dxgi_adapter", "d3d12_device", "dml_device",
                           "queue", "harness_objects"]
    assert list(steps.values()) == sorted(steps.values()) and steps["harness_objects"] <= start["device_us"]
    relu, pool = "ACTIVATION_RELU_GRAD", "MAX_POOLING_GRAD"
    assert [(r["id"], r["op"], r["status"]) for r in lines] == [
        ("t/large", relu, "ok"), ("t/small", relu, "ok"), ("t/pool", pool, "ok"), ("t/refused", relu, "refused"),
        ("t/odd", relu, "ok"), ("t/large", relu, "ok"), ("t/pool2", pool, "ok")]
    phases = ("wait", "decode", "create", "compile", "initializer", "heap", "resources", "upload", "initialize",
              "bind", "dispatch", "readback", "reply")
    for r in lines:
        assert all(r[p] >= 0 for p in phases), r
    assert lines[5]["heap"] < lines[0]["heap"] / 10  # made at the first case only
    assert lines[3]["dispatch"] == 0 and "gpu_dispatch" not in lines[3]  # refused before any dispatch
    assert lines[0]["gpu_dispatch"] is not None and lines[0]["t_us"] < lines[5]["t_us"]


def test_a_heap_per_case_gives_the_same_replies_as_the_shared_heap(harness: str,
                                                                   plain: list[tuple[dict, bytes]]) -> None:
    """The shared heap rewrites the previous case's descriptors; --heap-per-case is the old way. (Under vkd3d's
    virtual heaps, as the directml backend starts the harness on lavapipe, a heap costs microseconds, not the 0.6 s of
    a default heap: the old way takes the whole sequence.)"""
    assert [h["status"] for h, _ in plain] == SEQUENCE_STATUSES
    assert plain == replies(f"{harness} --heap-per-case", SEQUENCE)
    assert plain[2][1] == plain[6][1]  # the same pooling again, on the reused heap


def test_reused_buffers_give_the_same_replies_as_buffers_of_each_case_own(harness: str,
                                                                          plain: list[tuple[dict, bytes]]) -> None:
    """Buffers are kept and grown from case to case, and the initializer goes in the operator's submission: a small
    case after a large one sees none of the large one's bytes (with the poison, and with none), and the replies are
    those of --buffers-per-case, the old way (fresh buffers, the initializer submitted on its own). Sent all at once
    (the hello's `pipeline`: requests ahead of the replies to earlier ones), they are answered the same, in order."""
    reused = {"": plain, " --poison none": replies(f"{harness} --poison none", SEQUENCE)}
    for poison, answers in reused.items():
        assert [h["status"] for h, _ in answers] == SEQUENCE_STATUSES
        assert answers == replies(f"{harness}{poison} --buffers-per-case", SEQUENCE)
        assert answers[0] == answers[5]  # the same case again
    client = Raw(harness)
    try:
        assert client.hello()["pipeline"] == 16
        client.send(b"".join(protocol.encode_frame({"type": "run", **h}, p) for h, p in SEQUENCE))
        ahead = [(frame.header, frame.payload) for frame in (client.frame() for _ in SEQUENCE)]
        assert client.finish()[0] == 0
    finally:
        if client.process.poll() is None:
            client.process.kill()
    assert ahead == plain


@pytest.fixture
def directml_report(request: pytest.FixtureRequest) -> Path:
    given = request.config.getoption("--directml-report")
    if given is None:
        pytest.skip("checks the DirectML run of .ci/run: --directml-report FILE, FILE from "
                    "dmlconform run --backend directml --adapter lavapipe --tier smoke --json FILE")
    return Path(given)


@pytest.mark.directml_report
def test_bundled_cases_on_directml(directml_report: Path) -> None:
    """On the result of .ci/run's DirectML step (`dmlconform run --backend directml --adapter lavapipe --tier smoke
    --json FILE` from the installed wheel), given with --directml-report FILE: the same DirectML run is not paid for
    twice. That run's harness is the wheel's, built by the same windows/build.py as the tests above build theirs."""
    check_bundled_cases_on_directml(directml_report)


@pytest.mark.directml_report
def test_the_directml_run_applied_the_releases_known_issues_by_default(directml_report: Path) -> None:
    """The same run, given no baseline: DirectML 1.15.4's known issues made its own failures EXPECTED_FAIL, each
    naming the issue, and nothing else failed (.ci/run checks that --known-issues off fails the same run)."""
    document = json.loads(directml_report.read_text())
    record = document["known_issues"]
    assert (record["mode"], record["backend"], record["release"], record["applied_release"]) == \
        ("on", "directml", "1.15.4", "1.15.4")
    from dmlconform.surface.paths import split_case_id

    known = {case["id"]: case["known_issue"]["id"] for case in document["cases"] if case["known_issue"]}
    # CI runs every path (--path all): the same cases on the operator and the graph path (DECISIONS.md §10, §11).
    on_paths = {path.value: {base for base, on in map(split_case_id, known) if on is path}
                for path in {split_case_id(case_id)[1] for case_id in known}}
    expected = {path for path in document.get("paths") or ["operator"] if path in ("operator", "graph", "in-place")}
    assert set(on_paths) == expected and {split_case_id(c)[0] for c in known} <= KNOWN_ACCEPTED, known
    # The five of issue 30 and issue 41's seven on the operator and graph paths, the two ClipGrad INT64 ones in place.
    assert {path: len(found) for path, found in on_paths.items()} == \
        {path: 2 if path == "in-place" else 12 for path in expected}, known
    assert all(case["status"] == "EXPECTED_FAIL" for case in document["cases"] if case["id"] in known)
    assert document["expectations"] == [] and "FAIL" not in document["summary"]


def _result(tmp_path: Path, statuses: dict[str, str], outcome: dict[str, str] | None = None) -> Path:
    cases = [{"id": case_id, "status": status, "outcome": (outcome or {}).get(case_id)}
             for case_id, status in statuses.items()]
    (tmp_path / "r.json").write_text(json.dumps({"cases": cases}))
    return tmp_path / "r.json"


def test_the_check_of_a_directml_run_fails_a_wrong_result_and_passes_a_right_one(tmp_path: Path) -> None:
    right = {case_id: "INVALID_OK" if invalid else "PASS" for case_id, invalid in selected_cases().items()}
    right["slice_grad.invalid/window-size-zero"] = "EXPECTED_FAIL"
    check_bundled_cases_on_directml(_result(tmp_path, right, {"slice_grad.invalid/window-size-zero": "FAIL"}))
    wrong_ones = [
        {**right, "seed/relu-grad-formula": "FAIL"},
        {**right, next(i for i in right if i.startswith("relu_grad.invalid/")): "FAIL"},
        {**right, next(i for i in right if i.startswith("clip_grad1.edge/")): "CRASH"},
        {case_id: status for case_id, status in right.items() if case_id != "seed/relu-grad-formula"},
    ]
    for wrong in wrong_ones:
        with pytest.raises(AssertionError):
            check_bundled_cases_on_directml(_result(tmp_path, wrong, {"slice_grad.invalid/window-size-zero": "FAIL"}))
