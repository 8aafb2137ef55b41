"""Which reading of DML_AVERAGE_POOLING_GRAD a stack follows where its page is silent: the probe and its analysis.

The page points every field at DML_AVERAGE_POOLING and says nothing of (dmlconform/ops/average_pooling_grad.py):

* OC-AP1, the divisor of a window that runs past EndPadding (a gradient larger than the pooled size, or a window
  larger than the padded input): `full-window`, `clipped-to-padding` or `in-bounds-overhang`;
* OC-AP2, a window with no position in the input: every reading sends it nowhere; the probe puts a NaN there, so
  an implementation that lets it reach an element shows it;
* OC-AP3, asymmetric padding with IncludePadding TRUE: EndPadding counted as StartPadding is (the reference), or
  the padded input taken as `[-StartPadding, In + StartPadding)` (`end-padding-as-start`), or EndPadding dropped as
  ONNX Runtime's AveragePool did (microsoft/onnxruntime#24681, `end-padding-dropped`, not a reading of the page);
* which gradient sizes it refuses (the pooled size, one less, one more), and zero strides and windows;
* how it divides: one window per element (stride = window), so each element is one quotient, judged exactly against
  `dy / d` correctly rounded, `dy·(1/d)` with the reciprocal rounded to float32, and, for FLOAT16 data, either in
  float32 then converted to nearest or toward zero (D3D's float conversion), or in float16.

Gradients are powers of two where readings are compared (their answers differ by whole factors), and random values
where the division is (so the quotient's last bit tells the arithmetic apart). Each case lists one candidate per
distinct answer, named by every reading that gives it (joined by "."); `analyse` prints, per case, what matched.

  python examples/dml_harness/investigate/average_pooling_grad_readings.py write probes/probe_average_pooling_grad.yaml
  dmlconform run --backend directml --adapter lavapipe --suite probes/probe_average_pooling_grad.yaml --json R.json
  python examples/dml_harness/investigate/average_pooling_grad_readings.py analyse R.json [R2.json ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from dmlconform.dtypes import DataType
from dmlconform.ops.average_pooling_grad import AVERAGE_POOLING_GRAD, AxisWindows, divided, pooled_size, scatter
from dmlconform.ops.base import Description, TensorDesc

F32, F16 = DataType.FLOAT32, DataType.FLOAT16
SUITE = "probe_average_pooling_grad"


def powers(shape: tuple[int, ...], dtype: DataType = F32) -> np.ndarray:
    count = int(np.prod(shape))
    return (2.0 ** (np.arange(count) % 12)).astype(dtype.numpy).reshape(shape)


def format_element(value: np.generic, dtype: DataType) -> str:
    """An element as its bit pattern (exact for every value, NaN included)."""
    bits = np.array(value, dtype=dtype.numpy).view(dtype.bits_dtype)
    return f"0x{int(bits):0{dtype.numpy.itemsize * 2}x}"


def tensor(array: np.ndarray, dtype: DataType) -> dict[str, Any]:
    data = [format_element(v, dtype) for v in array.reshape(-1)]
    return {"dtype": dtype.name, "shape": list(array.shape), "data": data}


def describe(params: dict[str, Any], dy_shape: tuple[int, ...], dx_shape: tuple[int, ...], dtype: DataType
             ) -> Description:
    op = AVERAGE_POOLING_GRAD
    return Description(op, op.parse_params(params, dtype), {"InputGradientTensor": TensorDesc(dtype, dy_shape),
                                                             "OutputGradientTensor": TensorDesc(dtype, dx_shape)})


def end_dropped(desc: Description, dy: np.ndarray) -> np.ndarray:
    """ONNX Runtime's AveragePool 19 before microsoft/onnxruntime#27375 (issue #24681): with count_include_pad the
    divisor counts the window's positions in [-StartPadding, In), the end padding dropped."""
    dx_shape = desc.output.shape
    axes = [AxisWindows(n, o, k, s, a, e) for n, o, k, s, a, e in
            zip(dx_shape[2:], dy.shape[2:], desc.params["WindowSize"], desc.params["Strides"],
                desc.params["StartPadding"], desc.params["EndPadding"], strict=True)]
    divisor = np.ones((), dtype=np.int64)
    for axis in axes:
        factor = axis.covered(-axis.start, axis.extent) if desc.params["IncludePadding"] else axis.inside
        divisor = np.multiply.outer(divisor, factor)
    return scatter(divided(dy, divisor), axes).astype(dy.dtype)


def probe(case_id: str, params: dict[str, Any], dx_shape: tuple[int, ...], dy: np.ndarray, note: str,
          behaviour: str, refusable: bool = False, dropped: bool = False, dtype: DataType = F32) -> dict[str, Any]:
    """A case whose candidates are the distinct answers of the reference's readings (and `refused` where the gradient
    is not the pooled size, `end-padding-dropped` where asked)."""
    desc = describe(params, dy.shape, dx_shape, dtype)
    AVERAGE_POOLING_GRAD.validate(desc)
    answers: dict[tuple[str, ...], list[str]] = {}
    named = {name: AVERAGE_POOLING_GRAD.reference(desc, {"InputGradientTensor": dy}, name).outputs[
        "OutputGradientTensor"] for name in AVERAGE_POOLING_GRAD.variants}
    if dropped:
        named["end-padding-dropped"] = end_dropped(desc, dy)
    for name, out in named.items():
        answers.setdefault(tuple(format_element(v, dtype) for v in out.reshape(-1)), []).append(name)
    candidates: dict[str, Any] = {".".join(names): {"OutputGradientTensor": {
        "dtype": dtype.name, "shape": list(dx_shape), "data": list(values)}} for values, names in answers.items()}
    if refusable:
        candidates["refused"] = "refused"
    case = {"id": case_id, "note": note, "op": "AVERAGE_POOLING_GRAD", "params": params,
            "inputs": {"InputGradientTensor": tensor(dy, dtype)}}
    if len(candidates) == 1:
        case["outputs"] = next(iter(candidates.values()))
    else:
        case["candidates"] = candidates
        case["behaviour"] = behaviour
    case["tags"] = ["probe", behaviour]
    return case


def geometry(window: list[int], strides: list[int], start: list[int], end: list[int], include: bool
             ) -> dict[str, Any]:
    return {"Strides": strides, "WindowSize": window, "StartPadding": start, "EndPadding": end,
            "IncludePadding": include}


def readings() -> list[dict[str, Any]]:
    cases = []
    # OC-AP1: a gradient one larger than the pooled size. Width 7, window 4, stride 3, EndPadding 1: pooled 2; window
    # 2 covers 6..9, of which 6 is the input, 7 the end padding: full 4, clipped 2, in-bounds 1.
    for include in (True, False):
        cases.append(probe(f"overhang-gradient-larger-include-{str(include).lower()}",
                           geometry([1, 4], [1, 3], [0, 0], [0, 1], include), (1, 1, 1, 7), powers((1, 1, 1, 3)),
                           "pooled width (7 + 1 - 4) // 3 + 1 = 2, dY 3: window 2 covers 6..9 (6 in the input, 7 "
                           "padding, 8 and 9 past it)", "avgpool-gradient-not-pooled-size", refusable=True))
    # OC-AP1: a window larger than the padded input (the formula gives 0 or less; DirectML takes 1 for MaxPoolingGrad).
    cases.append(probe("overhang-window-larger-than-padded-input", geometry([1, 5], [1, 1], [0, 1], [0, 0], True),
                       (1, 1, 1, 2), powers((1, 1, 1, 1)),
                       "width 2, StartPadding 1, window 5: (2 + 1 - 5) // 1 + 1 = -1, dY 1; the window covers -1..3: "
                       "full 5, clipped [-1, 2) 3, as-start [-1, 3) 4, in-bounds 2", "avgpool-window-overhang",
                       refusable=True))
    cases.append(probe("overhang-window-larger-2d", geometry([4, 3], [2, 2], [1, 0], [1, 0], True),
                       (1, 2, 2, 2), powers((1, 2, 1, 1)),
                       "2-D: H 2 with padding 1 and 1 (window 4 = the padded height), W 2 with window 3: the W axis "
                       "overhangs", "avgpool-window-overhang", refusable=True))
    # OC-AP2: windows wholly in the padding, a NaN gradient there.
    for include in (True, False):
        dy = powers((1, 1, 1, 3))
        dy[0, 0, 0, 0] = np.nan
        cases.append(probe(f"padding-only-window-nan-include-{str(include).lower()}",
                           geometry([1, 2], [1, 2], [0, 2], [0, 2], include), (1, 1, 1, 3), dy,
                           "width 3, window 2, stride 2, padding 2 and 2: window 0 covers -2, -1 (padding only) and "
                           "its gradient is NaN; every reading sends it nowhere", "avgpool-padding-only-window"))
    # OC-AP3: asymmetric padding at the pooled size.
    for start, end in ((0, 2), (2, 0), (1, 3)):
        cases.append(probe(f"asymmetric-padding-{start}-{end}", geometry([1, 3], [1, 1], [0, start], [0, end], True),
                           (1, 1, 1, 4), powers((1, 1, 1, pooled_size(4, 3, 1, start, end))),
                           f"width 4, window 3, stride 1, StartPadding {start}, EndPadding {end}, IncludePadding TRUE",
                           "avgpool-asymmetric-padding", dropped=True))
    cases.append(probe("asymmetric-padding-3d", geometry([2, 3, 2], [1, 2, 1], [0, 1, 1], [1, 2, 0], True),
                       (1, 1, 3, 4, 3), powers((1, 1, 3, 3, 3)), "5-D, asymmetric on every axis",
                       "avgpool-asymmetric-padding", dropped=True))
    # Symmetric padding: a single answer, but ONNX Runtime's dropped end padding differs (the bug's witness).
    cases.append(probe("symmetric-padding", geometry([3, 3], [1, 1], [1, 1], [1, 1], True), (1, 1, 3, 3),
                       powers((1, 1, 3, 3)), "3x3 window, padding 1 all round, IncludePadding TRUE: every divisor 9",
                       "avgpool-symmetric-padding", dropped=True))
    # Gradient sizes: one smaller than the pooled size.
    cases.append(probe("gradient-smaller", geometry([1, 2], [1, 2], [0, 0], [0, 0], False), (1, 1, 1, 6),
                       powers((1, 1, 1, 2)), "pooled width 3, dY 2", "avgpool-gradient-not-pooled-size",
                       refusable=True))
    return cases


def refusals() -> list[dict[str, Any]]:
    """Descriptions the reference refuses (zero stride or window, batch or channels that differ)."""
    def invalid(case_id: str, params: dict[str, Any], dy_shape: tuple[int, ...], dx_shape: tuple[int, ...],
                note: str) -> dict[str, Any]:
        return {"id": case_id, "note": note, "op": "AVERAGE_POOLING_GRAD", "params": params, "expect": "invalid",
                "inputs": {"InputGradientTensor": tensor(powers(dy_shape), F32)},
                "outputs": {"OutputGradientTensor": {"dtype": "FLOAT32", "shape": list(dx_shape)}},
                "tags": ["probe", "refusal"]}

    return [
        invalid("stride-zero", geometry([2, 2], [1, 0], [0, 0], [0, 0], False), (1, 1, 3, 3), (1, 1, 4, 4),
                "Strides[1] = 0"),
        invalid("window-zero", geometry([2, 0], [1, 1], [0, 0], [0, 0], False), (1, 1, 3, 5), (1, 1, 4, 4),
                "WindowSize[1] = 0"),
        invalid("channels-differ", geometry([2, 2], [1, 1], [0, 0], [0, 0], False), (1, 2, 3, 3), (1, 1, 4, 4),
                "dY has 2 channels, dX 1"),
        invalid("batch-differs", geometry([2, 2], [1, 1], [0, 0], [0, 0], False), (2, 1, 3, 3), (1, 1, 4, 4),
                "dY has batch 2, dX 1"),
    ]


def models(dy: np.ndarray, d: int, dtype: DataType) -> dict[str, np.ndarray]:
    """One quotient per element, each way an implementation may form it."""
    f32 = dy.astype(np.float32)
    quotient = (f32.astype(np.float64) / d).astype(np.float32)  # float32 division, correctly rounded
    reciprocal = (f32 * np.float32(1.0 / d)).astype(np.float32)  # float32 reciprocal, correctly rounded, then product
    if dtype is F32:
        return {"divide": quotient, "reciprocal": reciprocal}
    out = {"float32-divide-nearest": quotient.astype(np.float16),
           "float32-reciprocal-nearest": reciprocal.astype(np.float16),
           "float32-divide-toward-zero": toward_zero(quotient),
           "float32-reciprocal-toward-zero": toward_zero(reciprocal),
           "float16-reciprocal": (dy * np.float16(1.0 / d)).astype(np.float16)}
    return out


def toward_zero(values: np.ndarray) -> np.ndarray:
    """float32 to float16 rounded toward zero (D3D's float-to-float conversion)."""
    nearest = values.astype(np.float16)
    over = np.abs(nearest.astype(np.float32)) > np.abs(values)
    step = np.nextafter(nearest, np.float16(0))
    return np.where(over, step, nearest).astype(np.float16)


def arithmetic(dtype: DataType, divisor_windows: list[int], seed: int) -> dict[str, Any]:
    """Windows apart (stride = window), IncludePadding TRUE: each element receives one quotient dy / d."""
    rng = np.random.default_rng(seed)
    window = divisor_windows
    out = 64
    dy = rng.uniform(-8, 8, size=(1, 1, 1, out)).astype(dtype.numpy)
    d = int(np.prod(window))
    dx_shape = (1, 1, window[0], out * window[1])
    answers: dict[tuple[str, ...], list[str]] = {}
    for name, quotients in models(dy, d, dtype).items():
        full = np.repeat(np.repeat(quotients, window[1], axis=3), window[0], axis=2)
        answers.setdefault(tuple(format_element(v, dtype) for v in full.reshape(-1)), []).append(name)
    candidates = {".".join(names): {"OutputGradientTensor": {"dtype": dtype.name, "shape": list(dx_shape),
                                                             "data": list(values)}}
                  for values, names in answers.items()}
    return {"id": f"quotient-{dtype.name.lower()}-divisor-{d}", "op": "AVERAGE_POOLING_GRAD",
            "note": f"windows {window} apart: every element one quotient dy / {d}",
            "params": geometry(window, window, [0, 0], [0, 0], True),
            "inputs": {"InputGradientTensor": tensor(dy, dtype)}, "candidates": candidates, "tolerance": "exact",
            "behaviour": f"avgpool-quotient-{dtype.name.lower()}", "tags": ["probe", "quotient"]}


def cases() -> list[dict[str, Any]]:
    found = readings() + refusals()
    for dtype in (F32, F16):
        for index, window in enumerate(([1, 3], [1, 5], [1, 7], [3, 3], [1, 2])):
            found.append(arithmetic(dtype, window, 100 + index))
    return found


def write(path: Path) -> None:
    suite = {"format": "dmlconform/v1", "suite": SUITE,
             "description": "AveragePoolingGrad: which reading of each open choice a stack follows, and how it divides",
             "cases": cases()}
    path.write_text(yaml.safe_dump(suite, sort_keys=False, width=120), encoding="utf-8")


def analyse(paths: list[Path]) -> None:
    for path in paths:
        document = json.loads(path.read_text(encoding="utf-8"))
        print(f"== {path}")
        for result in document["cases"]:
            if not result["id"].startswith(f"{SUITE}/"):
                continue
            matched = result.get("matched_all") or ([result["matched"]] if result.get("matched") else [])
            print(f"  {result['id'].split('/', 1)[1]:48} {result['status']:10} {', '.join(matched) or '-'}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("write").add_argument("path", type=Path)
    commands.add_parser("analyse").add_argument("results", type=Path, nargs="+")
    args = parser.parse_args(argv)
    if args.command == "write":
        write(args.path)
    else:
        analyse(args.results)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
