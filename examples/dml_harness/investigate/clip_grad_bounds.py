"""Probe: how DirectML's ELEMENT_WISE_CLIP_GRAD (v0) compares X with its FLOAT bounds (OC-CG1..CG4).

Min and Max are DML FLOATs whatever the tensors' type, and the page does not say how an integer (or FLOAT16) X meets
them. Each probe case puts X where the readings part: beside fractional bounds (2.5, -2.5, 3.5, 0.7 ...: truncation,
rounding half to even, half away, floor and ceiling disagree there), above 2^24 (INT32, UINT32: float32 rounds X),
above 2^53 and 2^60 (INT64, UINT64: float64 and float32 round X), INT64 values whose low 32 bits alone would compare
otherwise, bounds beyond the type's range (saturating and wrapping conversions disagree), infinite and NaN bounds,
FLOAT16 X against float32 bounds that FLOAT16 cannot hold (and past 65504); NaN in X; a zeroed element beside a
negative, infinite or NaN gradient (the zero's sign, and NaN from a multiply by a mask); Min > Max and Min == Max.
dY is 1, 2, 3, ... so the output says which elements passed.

Every case's golden is the reference's default; `analyse` reads what the stack returned (`dmlconform run ...
--artifacts DIR --artifacts-all --json R.json`) and prints, per case, every model that reproduces it: the reference's
variants and the other conversions a driver could make (bounds to the type by floor, ceiling, a wrapping or x86
truncation without a clamp; INT64 compared on its low 32 bits).

  python examples/dml_harness/investigate/clip_grad_bounds.py write examples/dml_harness/investigate/probes
  DMLCONFORM_WINDOWS_PROGRAMS_DIR=... dmlconform run --backend directml --adapter lavapipe \
      --suite examples/dml_harness/investigate/probes/probe_clip_grad_bounds.yaml --artifacts A --artifacts-all \
      --json R.json
  python examples/dml_harness/investigate/clip_grad_bounds.py analyse R.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import yaml

from dmlconform.dtypes import DataType
from dmlconform.ops.clip_grad import CLIP_GRAD, VARIANTS, round_integer

SUITE = "probe_clip_grad_bounds"

def _param(value: float) -> float | str:
    """A FLOAT bound as the suite reads it back exactly."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == 0 and math.copysign(1, value) < 0:
        return "-0.0"
    return float(np.float32(value))


def _element(value: object, dtype: DataType) -> object:
    if dtype.is_float:
        number = float(value)  # type: ignore[arg-type]
        if math.isnan(number) or math.isinf(number) or (number == 0 and math.copysign(1, number) < 0):
            return f"0x{int(np.array(number, dtype.numpy).view(dtype.bits_dtype)):0{dtype.bits // 4}x}"
        return number
    return int(value)  # type: ignore[arg-type]


def _case(case_id: str, dtype: str, low: float, high: float, xs: list, note: str,
          dys: list | None = None) -> dict:
    data_type = DataType.parse(dtype)
    dys = dys if dys is not None else list(range(1, len(xs) + 1))
    x = np.array(xs, dtype=data_type.numpy) if not data_type.is_float else np.array(
        [float(v) for v in xs], dtype=data_type.numpy)
    dy = np.array(dys, dtype=data_type.numpy)
    from dmlconform.ops.base import Description, TensorDesc

    params = CLIP_GRAD.parse_params({"Min": _param(low), "Max": _param(high)}, data_type)
    shape = (len(xs),)
    desc = Description(CLIP_GRAD, params, {n: TensorDesc(data_type, shape) for n in CLIP_GRAD.tensors})
    golden = CLIP_GRAD.reference(desc, {"InputTensor": x, "InputGradientTensor": dy}).outputs["OutputGradientTensor"]
    return {
        "id": case_id, "note": note, "op": CLIP_GRAD.name,
        "params": {"Min": _param(low), "Max": _param(high)},
        "inputs": {"InputTensor": {"dtype": dtype, "shape": [len(xs)], "data": [_element(v, data_type) for v in x]},
                   "InputGradientTensor": {"dtype": dtype, "shape": [len(xs)],
                                           "data": [_element(v, data_type) for v in dy]}},
        "outputs": {"OutputGradientTensor": {"dtype": dtype, "shape": [len(xs)],
                                             "data": [_element(v, data_type) for v in golden]}},
        "tags": ["probe"],
    }


def probe_cases() -> list[dict]:
    cases = []
    around = list(range(-5, 9))
    for dtype in ("INT32", "INT16", "INT8", "INT64"):
        for low, high in ((-2.5, 3.5), (-3.5, 2.5), (2.5, 6.5), (-0.7, 2.3), (-1.5, 4.5), (0.49, 5.51)):
            cases.append(_case(f"fractional-{dtype.lower()}-{low}-{high}", dtype, low, high, around,
                               "fractional bounds: truncated, rounded half even, half away, floored, ceiled differ"))
    for dtype in ("UINT32", "UINT16", "UINT8", "UINT64"):
        for low, high in ((0.5, 5.5), (1.5, 6.5), (2.5, 7.5), (0.7, 3.3)):
            cases.append(_case(f"fractional-{dtype.lower()}-{low}-{high}", dtype, low, high, list(range(0, 12)),
                               "fractional bounds on an unsigned type"))
    big = 2**24
    for dtype in ("INT32", "UINT32"):
        cases.append(_case(f"above-2p24-{dtype.lower()}", dtype, float(big), float(big + 4),
                           [big - 1, big, big + 1, big + 2, big + 3, big + 4, big + 5],
                           "X above 2^24: through float32 16777217 is 2^24 (at Min), 16777219 is 16777220 (at Max)"))
        cases.append(_case(f"above-2p30-{dtype.lower()}", dtype, 1073741824.0, 1073741952.0,
                           [1073741823, 1073741824, 1073741825, 1073741855, 1073741856, 1073741857, 1073741888,
                            1073741920, 1073741951, 1073741952, 1073741953],
                           "X above 2^30 (float32 steps of 128): 1073741825..63 round to Min, 1073741889.. to Max"))
    for dtype in ("INT64", "UINT64"):
        p53, p60 = 2**53, 2**60
        cases.append(_case(f"above-2p53-{dtype.lower()}", dtype, float(p53), float(p53 + 4),
                           [p53 - 1, p53, p53 + 1, p53 + 2, p53 + 3, p53 + 4, p53 + 5],
                           "X above 2^53: through float64 2^53+1 is 2^53, 2^53+3 is 2^53+4; through float32 all of "
                           "them are 2^53"))
        cases.append(_case(f"above-2p60-{dtype.lower()}", dtype, float(p60 - 2**36), float(p60),
                           [p60 - 2**36 - 1, p60 - 2**36, p60 - 2**36 + 1, p60 - 2**35, p60 - 2**35 + 1, p60 - 1,
                            p60, p60 + 1],
                           "bounds one float32 step apart below 2^60; X between them rounds onto one or the other "
                           "through float32 or float64"))
        cases.append(_case(f"high-words-{dtype.lower()}", dtype, 0.5, 10.5,
                           [1, 5, 2**32 + 1, 2**32 + 5, 2**33 + 20, 3 * 2**32, 2**40 + 7, 2**63 + 3 if dtype ==
                            "UINT64" else -(2**32) + 5],
                           "64-bit X whose low 32 bits alone lie inside (1, 5, 1, 5, 20, 0, 7, ...): only a compare "
                           "of the low words passes them"))
    for dtype, low, high in (("INT8", -200.0, 200.0), ("INT8", -129.0, 128.0), ("UINT8", -1.0, 300.0),
                             ("UINT8", -1.0, 256.0), ("INT16", -40000.0, 40000.0), ("UINT16", -1.0, 70000.0),
                             ("INT32", -3e9, 3e9), ("UINT32", -1.0, 5e9), ("INT64", -1e19, 1e19),
                             ("UINT64", -1.0, 2e19)):
        info = np.iinfo(DataType.parse(dtype).numpy)
        lo_, hi_ = int(info.min), int(info.max)
        xs = sorted({lo_, lo_ + 1, lo_ + 2, 0, 1, 44 if hi_ > 44 else 0, 56 if hi_ > 56 else 0, hi_ - 2, hi_ - 1,
                     hi_})
        cases.append(_case(f"beyond-range-{dtype.lower()}-{low:g}-{high:g}", dtype, low, high, xs,
                           "bounds beyond the type's range: exact compares keep every X, saturating conversions "
                           "zero the type's ends, wrapping ones move the bounds inside"))
    for dtype in ("INT32", "UINT8", "INT64", "UINT64", "INT16", "INT8", "UINT16", "UINT32"):
        info = np.iinfo(DataType.parse(dtype).numpy)
        xs = [int(info.min), int(info.min) + 1, 0 if info.min < 0 else 2, int(info.max) - 1, int(info.max)]
        cases.append(_case(f"infinite-bounds-{dtype.lower()}", dtype, -math.inf, math.inf, xs,
                           "Min -inf, Max inf: exact keeps every X; saturating conversions zero the type's ends"))
        cases.append(_case(f"nan-min-{dtype.lower()}", dtype, math.nan, 10.5,
                           [int(info.min), 0 if info.min < 0 else 3, 1, 5, 10, 11, int(info.max)],
                           "Min NaN: every X fails X > NaN (nan-zero form) and X <= NaN (literal form); a "
                           "conversion to the type makes it 0 (D3D) or the type's minimum (x86)"))
        cases.append(_case(f"nan-max-{dtype.lower()}", dtype, 2.5, math.nan,
                           [int(info.min), 0 if info.min < 0 else 3, 2, 3, 10, int(info.max)],
                           "Max NaN"))
    for bound in ("min", "max"):
        top = 2**63
        cases.append(_case(f"nan-{bound}-uint64-around-2p63", "UINT64", math.nan if bound == "min" else 2.5,
                           math.nan if bound == "max" else 2**64 - 2.0**40, [3, top - 1, top, top + 1, 2**64 - 1],
                           f"{bound.capitalize()} NaN on UINT64 with X around 2^63: 2^63 (x86's integer indefinite) "
                           "and 2^64 - 1 (saturated) part there"))
    cases.append(_case("float16-bounds-between-halves", "FLOAT16", 0.99995, 2.0015,
                       [float(np.float16(0.99951171875)), 1.0, 1.0009765625, 2.0, 2.001953125, 0.5, 3.0],
                       "Min 0.99995 (a half: 1.0 nearest, 0.99951 toward zero), Max 2.0015 (2.00195 nearest, 2.0 "
                       "toward zero)"))
    cases.append(_case("float16-bounds-beyond-65504", "FLOAT16", -70000.0, 70000.0,
                       [-math.inf, -65504.0, 0.0, 65504.0, math.inf],
                       "bounds past FLOAT16's range: nearest gives ±inf, D3D's conversion ±65504"))
    cases.append(_case("float16-infinite-bounds", "FLOAT16", -math.inf, math.inf,
                       [-math.inf, -65504.0, -1.0, 0.0, 65504.0, math.inf],
                       "Min -inf, Max inf on FLOAT16: a bound clamped to the finite range first zeroes ±65504"))
    cases.append(_case("float32-infinite-bounds", "FLOAT32", -math.inf, math.inf,
                       [-math.inf, -3.4028234663852886e38, -1.0, 0.0, 3.4028234663852886e38, math.inf],
                       "Min -inf, Max inf on FLOAT32: a bound clamped to the finite range first zeroes ±FLT_MAX"))
    cases.append(_case("float16-nan-min", "FLOAT16", math.nan, 1.0, [-65504.0, -1.0, 0.0, 0.5, 1.0, 2.0],
                       "Min NaN on FLOAT16"))
    cases.append(_case("float16-nan-max", "FLOAT16", -1.0, math.nan, [-2.0, -1.0, 0.0, 0.5, 1.0, 65504.0],
                       "Max NaN on FLOAT16"))
    cases.append(_case("float16-tiny-bounds", "FLOAT16", -1e-8, 1e-8, [-6e-8, -0.0, 0.0, 6e-8, 1.0],
                       "bounds below FLOAT16's smallest denormal (5.96e-8): to 0 in FLOAT16"))
    cases.append(_case("nan-x-float32", "FLOAT32", -1.0, 2.0, [math.nan, -1.0, -0.5, 2.0, 3.0, 0.0, -math.nan],
                       "NaN in X: nan-zero or nan-passes"))
    cases.append(_case("nan-x-float16", "FLOAT16", -1.0, 2.0, [math.nan, -1.0, 0.5, 2.0, -math.nan],
                       "NaN in X, FLOAT16"))
    cases.append(_case("nan-min-float32", "FLOAT32", math.nan, 1.0, [-math.inf, -1.0, 0.0, 0.5, 1.0, 2.0],
                       "Min NaN on floats"))
    cases.append(_case("nan-max-float32", "FLOAT32", -1.0, math.nan, [-2.0, -1.0, 0.0, 0.5, 1.0, math.inf],
                       "Max NaN on floats"))
    cases.append(_case("zero-sign-float32", "FLOAT32", 0.0, 1.0, [-1.0, -1.0, -1.0, -1.0, 2.0, 2.0, 0.5],
                       "X outside with dY -1, -inf, NaN, inf, -7, 5, and one inside: +0 from a select; -0 and NaN "
                       "from a multiply by a 0/1 mask",
                       dys=[-1.0, -math.inf, math.nan, math.inf, -7.0, 5.0, 3.0]))
    cases.append(_case("zero-sign-float16", "FLOAT16", 0.0, 1.0, [-1.0, -1.0, -1.0, 2.0, 0.5],
                       "the same, FLOAT16", dys=[-1.0, -math.inf, math.nan, -3.0, 3.0]))
    cases.append(_case("min-above-max-float32", "FLOAT32", 2.0, -1.0, [-math.inf, -3.0, -1.0, 0.5, 2.0, 5.0,
                                                                      math.inf], "Min > Max: all zeros"))
    cases.append(_case("min-above-max-int32", "INT32", 4.0, 3.0, [-5, 3, 4, 5, 9], "Min > Max on integers"))
    cases.append(_case("min-above-max-fractional-int32", "INT32", 3.7, 3.2, [2, 3, 4, 5],
                       "Min 3.7 > Max 3.2: truncated both are 3, rounded 4 and 3"))
    cases.append(_case("min-equals-max-float32", "FLOAT32", 1.0, 1.0, [0.0, 1.0, 2.0], "Min == Max"))
    return cases


def write(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    document = {"format": "dmlconform/v1", "suite": SUITE,
                "description": "ElementWiseClipGrad (v0): FLOAT bounds against integer and FLOAT16 X "
                               "(examples/dml_harness/investigate/clip_grad_bounds.py)",
                "cases": probe_cases()}
    path = folder / f"{SUITE}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False, width=120))
    return path


# -- analysis --------------------------------------------------------------------------------------------------
def _convert(bound: float, dtype: np.dtype, how: str) -> int:
    """Other ways a driver could turn a FLOAT bound into the integer type."""
    info = np.iinfo(dtype)
    if math.isnan(bound):
        return int(info.min) if how == "x86" else 0
    if math.isinf(bound):
        whole = int(info.max) if bound > 0 else int(info.min)
    elif how == "floor":
        whole = math.floor(bound)
    elif how == "ceil":
        whole = math.ceil(bound)
    else:
        whole = math.trunc(bound)
    if how in ("wrap", "x86"):
        if how == "x86" and not -(2**63) <= whole < 2**63:
            whole = -(2**63)  # cvttsd2si's integer indefinite
        width = 8 * dtype.itemsize
        whole %= 2**width
        if info.min < 0 and whole >= 2 ** (width - 1):
            whole -= 2**width
        return whole
    return min(max(whole, int(info.min)), int(info.max))


def extra_models(x: np.ndarray, low: float, high: float) -> dict[str, np.ndarray]:
    """keep masks of conversions that are not reference variants."""
    found: dict[str, np.ndarray] = {}
    if x.dtype.kind in "iu":
        for how in ("floor", "ceil", "wrap", "x86"):
            lo, hi = _convert(low, x.dtype, how), _convert(high, x.dtype, how)
            xs = x.astype(object)
            found[f"bound-{how}"] = np.array([lo < v < hi for v in xs])
        if x.dtype.itemsize == 8:
            low32 = (x.astype(np.uint64) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
            as_int = low32.view(np.int32) if x.dtype.kind == "i" else low32
            for name, values in (("low-word-exact", as_int.astype(object)),
                                 ("low-word-float32", [round_integer(int(v), 24) for v in as_int])):
                found[name] = np.array([(low < v < high) if not math.isnan(low) and not math.isnan(high) else False
                                        for v in values])
    return found


def analyse(paths: list[Path]) -> int:
    from dmlconform.suite.loader import load_paths

    suite = Path(__file__).resolve().parent / "probes" / f"{SUITE}.yaml"
    cases = {case.id: case for case in load_paths([suite])}
    for path in paths:
        result = json.loads(path.read_text())
        print(f"== {path} ({result['backend'].get('device')})")
        tally: dict[str, int] = {}
        for entry in result["cases"]:
            case_id = entry["id"].split("/", 1)[1]
            case = cases.get(case_id)
            artifacts = entry.get("artifacts") or {}
            if case is None:
                continue
            if entry["status"] not in ("PASS", "FAIL") or "OutputGradientTensor" not in artifacts:
                print(f"{case_id:50} {entry['status']} {entry.get('message', '')[:90]}")
                continue
            got = np.load(path.parent / artifacts["OutputGradientTensor"]) if not Path(
                artifacts["OutputGradientTensor"]).is_absolute() else np.load(artifacts["OutputGradientTensor"])
            x, dy = case.inputs["InputTensor"], case.inputs["InputGradientTensor"]
            matches = []
            for variant in VARIANTS:
                answer = CLIP_GRAD.reference(case.description, case.inputs, variant).outputs["OutputGradientTensor"]
                if _same(answer, got):
                    matches.append(variant)
            low, high = case.description.params["Min"], case.description.params["Max"]
            for name, keep in extra_models(x, low, high).items():
                if _same(np.where(keep, dy, np.zeros((), dy.dtype)), got):
                    matches.append(name)
            bits = _show(got)
            print(f"{case_id:50} {entry['status']:5} matches {', '.join(matches) or 'NONE'}  got {bits}")
            for name in matches:
                tally[name] = tally.get(name, 0) + 1
        print("models matching every case they were asked about:", json.dumps(tally))
    return 0


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype.kind == "f":
        return bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))
    return bool(np.array_equal(a, b))


def _show(values: np.ndarray) -> str:
    if values.dtype.kind == "f":
        width = values.dtype.itemsize * 2
        return "[" + ", ".join(f"{v!s}" if v != 0 or not np.signbit(v) else "-0"
                               for v in values.tolist()) + "] bits " + " ".join(
            f"{int(b):0{width}x}" for b in values.view(f"u{values.dtype.itemsize}"))
    return str(values.tolist())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("write").add_argument("folder", type=Path)
    sub.add_parser("analyse").add_argument("results", type=Path, nargs="+")
    args = parser.parse_args(argv)
    if args.command == "write":
        print(write(args.folder))
        return 0
    return analyse(args.results)


if __name__ == "__main__":
    sys.exit(main())

