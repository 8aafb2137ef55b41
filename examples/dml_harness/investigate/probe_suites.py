"""Probe suites for two questions real GPUs raise (issue 22), and the analysis of what a stack answered.

1. NEAREST_NEIGHBOR picks at knife-edge coordinates. Each case is 1-D, float32, with at most 24 output
   gradients dY[o] = 2^o, so every element of dX is a sum of distinct powers of two: its bits say exactly
   which gradients landed on it, hence which input each coordinate x(o) = (o - OPO)/S - IPO picked. Scales and
   offsets are chosen so that some x(o) lie on or within a few ULP of an integer (where floor and ceil change)
   or of a half-integer (where a rounding-to-nearest implementation changes).
2. fp32 denormals: ReluGrad, ClipGrad1, SliceGrad, MaxPoolingGrad and ResampleGrad1 with denormals in X only,
   in dY only, and in both, so that a flush in a comparison (X) is told apart from a flush in a copy (dY).

Every case carries the reference's answer (`bound`/`exact` as usual); the analysis reads the outputs the stack
returned (`dmlconform run ... --artifacts DIR --artifacts-all --json R.json`) and prints, per knife-edge, the
reference's pick, the stack's pick and where the exact (real-number) coordinate lies, and per denormal case
which elements were flushed.

  python examples/dml_harness/investigate/probe_suites.py write OUT_DIR
  python examples/dml_harness/investigate/probe_suites.py analyse R.json [R2.json ...]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import yaml

F32 = np.float32
TINY32 = float(np.finfo(np.float32).tiny)
DEN = [float(np.float32(np.finfo(np.float32).smallest_subnormal)) * k for k in (1, 3, 1000, 2**22)]  # denormals


def f32(value: float) -> float:
    return float(np.float32(value))


def exact_coordinate(o: int, scale: float, ipo: float, opo: float) -> Fraction:
    return (Fraction(o) - Fraction(f32(opo))) / Fraction(f32(scale)) - Fraction(f32(ipo))


def reference_coordinate(o: int, scale: float, ipo: float, opo: float) -> float:
    return float((F32(o) - F32(opo)) / F32(scale) - F32(ipo))


def ulp32(x: float) -> float:
    return float(np.spacing(np.float32(abs(x)) if x else np.float32(1)))


def knife_distance(o: int, scale: float, ipo: float, opo: float) -> tuple[float, float]:
    """In ULPs of x: the exact coordinate's distance to the nearest integer and to the nearest half-integer."""
    x = exact_coordinate(o, scale, ipo, opo)
    unit = ulp32(float(x))
    to_int = abs(x - round(x))
    to_half = abs(x - (math.floor(x) + Fraction(1, 2)))
    return float(to_int) / unit, float(to_half) / unit


def tensor(dtype: str, values: np.ndarray) -> dict:
    flat = values.reshape(-1)
    data = [f"0x{int(v):08x}" for v in flat.astype(np.float32).view(np.uint32)] if dtype == "FLOAT32" else \
        flat.tolist()
    return {"dtype": dtype, "shape": list(values.shape), "data": data}


SCALES = [1 / 3, 2 / 3, 0.6, 0.7, 0.1, 0.3, 0.9, 1.1, 1.3, 1.5, 2.5, 3.0, 5.0, 7.0, 4 / 3, 5 / 3, 0.2, 0.4, 6 / 7,
          3 / 7, 0.05, 1.2, 10 / 3]
OFFSETS = [0.0, 0.5, -0.5, 0.25, 0.1, -0.3, 1 / 3, -1 / 3]


def knife_cases(limit: int) -> list[dict]:
    found = []
    for scale in SCALES:
        for ipo in OFFSETS:
            for opo in OFFSETS:
                n_out = 24
                xs = [exact_coordinate(o, scale, ipo, opo) for o in range(n_out)]
                edges = [o for o in range(n_out) if min(knife_distance(o, scale, ipo, opo)) <= 8]
                if not edges:
                    continue
                n_in = int(min(64, max(2, math.floor(max(xs)) + 2)))
                found.append((len(edges), scale, ipo, opo, n_in))
    found.sort(key=lambda item: (-item[0], item[1], item[2], item[3]))
    cases = []
    for rounding in ("DECREASING", "INCREASING"):
        for number, (_, scale, ipo, opo, n_in) in enumerate(found[:limit]):
            dy = np.array([2.0**o for o in range(24)], dtype=np.float32)
            cases.append({
                "id": f"knife-{rounding.lower()}-{number}", "op": "RESAMPLE_GRAD1",
                "params": {"InterpolationMode": "NEAREST_NEIGHBOR", "RoundingDirection": rounding,
                           "Scales": [f32(scale)], "InputPixelOffsets": [f32(ipo)], "OutputPixelOffsets": [f32(opo)]},
                "inputs": {"InputGradientTensor": tensor("FLOAT32", dy)},
                "output_shape": [n_in], "tags": ["probe", "knife-edge"]})
    return cases


def denormal_cases() -> list[dict]:
    d = DEN
    x_den = np.array([d[0], -d[0], d[1], -d[2], d[3], -d[3], TINY32, -TINY32, 0.0, -0.0, 1.0, -1.0], dtype=np.float32)
    x_norm = np.array([0.5, -0.5, 2.0, -2.0, 0.25, -0.25, 1.5, -1.5, 0.75, -0.75, 3.0, -3.0], dtype=np.float32)
    dy_norm = np.array([1.0 + k / 16 for k in range(12)], dtype=np.float32) * np.array([1, -1] * 6, dtype=np.float32)
    dy_den = np.array([d[k % 4] * (1 if k % 2 == 0 else -1) for k in range(12)], dtype=np.float32)
    cases = []
    for where, x, dy in (("x", x_den, dy_norm), ("dy", x_norm, dy_den), ("both", x_den, dy_den)):
        cases.append({"id": f"relu-denormal-{where}", "op": "ACTIVATION_RELU_GRAD", "params": {},
                      "inputs": {"InputTensor": tensor("FLOAT32", x), "InputGradientTensor": tensor("FLOAT32", dy)},
                      "output_shape": [12], "tags": ["probe", "denormal", where]})
        for low, high in ((0.0, 1.0), (-1.0, 1.0), (d[1], 1.0), (-d[2], d[3]), (-2.5, 2.5)):
            cases.append({"id": f"clip-denormal-{where}-min{low:.3g}-max{high:.3g}", "op": "ELEMENT_WISE_CLIP_GRAD1",
                          "params": {"Min": f"0x{int(np.float32(low).view(np.uint32)):08x}",
                                     "Max": f"0x{int(np.float32(high).view(np.uint32)):08x}"},
                          "inputs": {"InputTensor": tensor("FLOAT32", x), "InputGradientTensor": tensor("FLOAT32", dy)},
                          "output_shape": [12], "tags": ["probe", "denormal", where]})
    cases.append({"id": "slice-denormal-dy", "op": "SLICE_GRAD",
                  "params": {"InputWindowOffsets": [2], "InputWindowSizes": [12], "InputWindowStrides": [1]},
                  "inputs": {"InputGradientTensor": tensor("FLOAT32", dy_den)}, "output_shape": [16],
                  "tags": ["probe", "denormal", "dy"]})
    cases.append({"id": "resample-copy-denormal-dy", "op": "RESAMPLE_GRAD1",
                  "params": {"InterpolationMode": "NEAREST_NEIGHBOR", "RoundingDirection": "DECREASING",
                             "Scales": [1.0], "InputPixelOffsets": [0.5], "OutputPixelOffsets": [0.5]},
                  "inputs": {"InputGradientTensor": tensor("FLOAT32", dy_den)}, "output_shape": [12],
                  "tags": ["probe", "denormal", "dy"]})
    cases.append({"id": "resample-linear-denormal-dy", "op": "RESAMPLE_GRAD1",
                  "params": {"InterpolationMode": "LINEAR", "RoundingDirection": "DECREASING",
                             "Scales": [2.0], "InputPixelOffsets": [0.5], "OutputPixelOffsets": [0.5]},
                  "inputs": {"InputGradientTensor": tensor("FLOAT32", dy_den)}, "output_shape": [6],
                  "tags": ["probe", "denormal", "dy"]})
    for where, x, dy in (("x", x_den, dy_norm[:6]), ("dy", x_norm, dy_den[:6]), ("both", x_den, dy_den[:6])):
        cases.append({"id": f"maxpool-denormal-{where}", "op": "MAX_POOLING_GRAD",
                      "params": {"Strides": [1, 2], "WindowSize": [1, 2], "StartPadding": [0, 0], "EndPadding": [0, 0],
                                 "Dilations": [1, 1]},
                      "inputs": {"InputTensor": tensor("FLOAT32", x.reshape(1, 1, 1, 12)),
                                 "InputGradientTensor": tensor("FLOAT32", dy.reshape(1, 1, 1, 6))},
                      "output_shape": [1, 1, 1, 12], "tags": ["probe", "denormal", where]})
    return cases


def write(folder: Path) -> None:
    """Each suite written twice: with placeholder outputs, then with the reference's answers of the loaded cases."""
    from dmlconform.suite.loader import load_suite

    folder.mkdir(parents=True, exist_ok=True)
    for name, cases, about in (
            ("probe_knife_edges", knife_cases(60), "NEAREST_NEIGHBOR picks at coordinates on or next to integers"),
            ("probe_fp32_denormals", denormal_cases(), "fp32 denormals in X only, dY only, both")):
        for case in cases:
            shape = case.pop("output_shape")
            case["outputs"] = {"OutputGradientTensor": tensor("FLOAT32", np.zeros(shape, dtype=np.float32))}
        suite = {"format": "dmlconform/v1", "suite": name, "description": about, "cases": cases}
        path = folder / f"{name}.yaml"
        path.write_text(yaml.safe_dump(suite, sort_keys=False, width=200))
        loaded, _ = load_suite(path, folder)
        for case, parsed in zip(cases, loaded, strict=True):
            answer = parsed.reference(None).outputs["OutputGradientTensor"]
            case["outputs"]["OutputGradientTensor"] = tensor("FLOAT32", answer)
        path.write_text(yaml.safe_dump(suite, sort_keys=False, width=200))
        print(f"{path}: {len(cases)} cases", file=sys.stderr)


def _outputs(result_path: Path) -> tuple[dict, dict]:
    document = json.loads(result_path.read_text())
    base = result_path.parent
    found = {}
    for case in document["cases"]:
        for path in (case.get("artifacts") or {}).values():
            file = Path(path) if Path(path).is_absolute() else base / path
            if file.exists():
                found[case["id"]] = np.load(file)
    return document, found


def analyse(paths: list[Path]) -> None:
    from dmlconform.suite.loader import load_paths

    for path in paths:
        document, outputs = _outputs(path)
        print(f"== {path}: {document['backend'].get('device')} ({len(outputs)} outputs)")
        suites = {Path(c["file"]).name for c in document["cases"] if c["id"].startswith("probe_")}
        files = [Path(__file__).parent / "probes" / name for name in suites]
        cases = {c.full_id: c for c in load_paths([f for f in files if f.exists()])} if files else {}
        moved = 0
        for case_id, actual in sorted(outputs.items()):
            case = cases.get(case_id)
            if case is None:
                continue
            if "knife" in case_id:
                moved += _knife(case, actual.reshape(-1))
            else:
                _denormal(case, actual)
        print(f"knife-edge picks that differ from the reference: {moved}")


def _knife(case, actual: np.ndarray) -> int:
    """Prints every pick that differs from the reference's (the division form, with DirectML's `swapped` reading
    of the offsets: the gradient's InputPixelOffsets are the forward's OutputPixelOffsets) and how far the exact
    coordinate is from an integer, in units of u·A (the rule's Δx is 7 of them)."""
    p = case.description.params
    scale = p["Scales"][0]
    opo, ipo = p["InputPixelOffsets"][0], p["OutputPixelOffsets"][0]  # swapped
    decreasing = p["RoundingDirection"] == "DECREASING"
    n_in = actual.size
    picks = {}
    for i, value in enumerate(actual.astype(np.float64)):
        bits = int(value)
        for o in range(24):
            if bits >> o & 1:
                picks[o] = i
    moved = 0
    for o in range(24):
        x_ref = reference_coordinate(o, scale, ipo, opo)
        want = min(max(math.floor(x_ref) if decreasing else math.ceil(x_ref), 0), n_in - 1)
        got = picks.get(o)
        if got != want:
            moved += 1
            x = exact_coordinate(o, scale, ipo, opo)
            size = ((abs(o) + abs(f32(opo))) / abs(f32(scale)) + abs(f32(ipo))) * 2.0**-24
            print(f"  {case.full_id} o={o}: S={f32(scale)!r} forward OPO={f32(opo)!r} IPO={f32(ipo)!r} "
                  f"x(float32 division)={x_ref!r} exact={float(x)!r} "
                  f"({float(abs(x - round(x))) / size:.3f} u·A from an integer) reference pick {want}, "
                  f"stack pick {got}")
    return moved


def _denormal(case, actual: np.ndarray) -> None:
    expected = case.expected["OutputGradientTensor"].reshape(-1)
    got = actual.reshape(-1).astype(np.float32)
    diff = np.nonzero(expected.view(np.uint32) != got.view(np.uint32))[0]
    if diff.size == 0:
        print(f"  {case.full_id}: as the reference (denormals preserved)")
        return
    x = case.inputs.get("InputTensor")
    parts = []
    for i in diff.tolist():
        xs = f" x={x.reshape(-1)[i]!r}" if x is not None and x.size == expected.size else ""
        parts.append(f"[{i}]{xs} expected {expected[i]!r} got {got[i]!r}")
    print(f"  {case.full_id}: {len(diff)} differ: " + "; ".join(parts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("write").add_argument("folder", type=Path)
    sub.add_parser("analyse").add_argument("results", type=Path, nargs="+")
    args = parser.parse_args()
    if args.command == "write":
        write(args.folder)
    else:
        analyse(args.results)


if __name__ == "__main__":
    main()
