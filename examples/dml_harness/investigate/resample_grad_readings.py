"""Which reading of DML_RESAMPLE_GRAD (v0) a stack follows, where its page is silent: the probe and its analysis.

The page points every field at Resample1 and names no NEAREST_NEIGHBOR rounding rule, no LINEAR edge rule and not
which offset is which (dmlconform/ops/resample_grad.py). Each probe case separates the readings of one choice and
holds every other fixed, so the candidate a stack matches names its reading:

* offsets: LINEAR (no rounding), coordinates inside the input in both readings, IPO != OPO;
* rounding: NEAREST_NEIGHBOR with equal offsets (both offset readings agree) and coordinates at fractions 0, .25,
  .5 and .75 of several integers, where floor, ceil, half-up, half-down and half-even all pick differently; and
  x = 0.49999997, where floor(x + 0.5) in float32 rounds the sum to 1;
* edges: LINEAR with equal offsets and coordinates below -1, between -1 and 0 and past the last element;
* the page's own example in 4-D (FL 3_0) with half-pixel and zero offsets, its candidates named by every variant.

Gradients are distinct powers of two (float32, so every sum is exact and its bits say which gradients landed where).
Each case lists one candidate per distinct answer, named by every reading that gives it (joined by "."); `analyse`
prints, per case, the readings the stack's answer matched.

  python examples/dml_harness/investigate/resample_grad_readings.py write probes/probe_resample_grad_readings.yaml
  dmlconform run --backend directml --adapter lavapipe --suite probes/probe_resample_grad_readings.yaml --json R.json
  python examples/dml_harness/investigate/resample_grad_readings.py analyse R.json [R2.json ...]
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
from dmlconform.ops.base import Description, TensorDesc
from dmlconform.ops.resample_grad import EDGE_READINGS, OFFSET_READINGS, RESAMPLE_GRAD, ROUNDINGS, variant

F32 = DataType.FLOAT32
#: x(0) = (0 - c)/1 - c = 0.49999997 (0.5 - 2^-25, a float32 value) with c = -(0.25 - 2^-26): the one coordinate at
#: which floor(x + 0.5) evaluated in float32 (the sum rounds to 1.0) picks another element than the exact rule.
BELOW_HALF = -(0.25 - 2.0**-26)


def powers(shape: tuple[int, ...]) -> np.ndarray:
    return (2.0 ** np.arange(int(np.prod(shape)))).astype(np.float32).reshape(shape)


def probe(case_id: str, mode: str, scales: list[float], ipo: list[float], opo: list[float], dy_shape: tuple[int, ...],
          dx_shape: tuple[int, ...], choice: str, note: str) -> dict[str, Any]:
    """A case whose candidates are the distinct answers of the readings of `choice` (the others at their default)."""
    params = {"InterpolationMode": mode, "Scales": scales, "InputPixelOffsets": ipo, "OutputPixelOffsets": opo}
    tensors = {"InputGradientTensor": TensorDesc(F32, dy_shape), "OutputGradientTensor": TensorDesc(F32, dx_shape)}
    desc = Description(RESAMPLE_GRAD, RESAMPLE_GRAD.parse_params(params, F32), tensors)
    RESAMPLE_GRAD.validate(desc)
    dy = powers(dy_shape)
    readings = {"offsets": {name: variant(offsets=name) for name in OFFSET_READINGS},
                "rounding": {name: variant(rounding=name) for name in ROUNDINGS},
                "edges": {name: variant(edges=name) for name in EDGE_READINGS},
                "all": {name: name for name in RESAMPLE_GRAD.variants}}[choice]
    answers: dict[tuple[float, ...], list[str]] = {}
    for reading, name in readings.items():
        out = RESAMPLE_GRAD.reference(desc, {"InputGradientTensor": dy}, name).outputs["OutputGradientTensor"]
        answers.setdefault(tuple(float(v) for v in out.reshape(-1)), []).append(reading)
    candidates = {".".join(names): {"OutputGradientTensor": {"dtype": "FLOAT32", "shape": list(dx_shape),
                                                             "data": list(values)}}
                  for values, names in answers.items()}
    behaviour = {"all": "resample-v0-readings", "offsets": "resample-offset-convention",
                 "rounding": "resample-v0-nearest-rounding", "edges": "resample-v0-linear-edges"}[choice]
    return {"id": case_id, "note": note, "op": "RESAMPLE_GRAD", "params": params,
            "inputs": {"InputGradientTensor": {"dtype": "FLOAT32", "shape": list(dy_shape),
                                               "data": [float(v) for v in dy.reshape(-1)]}},
            "candidates": candidates, "behaviour": behaviour, "tags": ["probe", choice]}


def cases() -> list[dict[str, Any]]:
    found = [
        probe("offsets-linear-up2", "LINEAR", [2.0], [-1.0], [0.5], (8,), (6,), "offsets",
              "literal x = (o - 0.5)/2 + 1 = o/2 + 0.75; swapped x = (o + 1)/2 - 0.5 = o/2: both inside [0, 5]"),
        probe("offsets-linear-down2", "LINEAR", [0.5], [0.25], [-0.5], (4,), (9,), "offsets",
              "literal x = (o + 0.5)/0.5 - 0.25 = 2o + 0.75; swapped x = (o - 0.25)/0.5 + 0.5 = 2o"),
        probe("offsets-linear-rank3", "LINEAR", [1.0, 2.0, 1.5], [0.0, -1.0, 0.25], [0.0, 0.5, -0.25], (2, 8, 5),
              (2, 6, 6), "offsets", "axis 1 as offsets-linear-up2; axis 2 scale 1.5 with IPO 0.25, OPO -0.25"),
        probe("rounding-quarters", "NEAREST_NEIGHBOR", [4.0], [0.0], [0.0], (14,), (4,), "rounding",
              "x = o/4 = 0, .25, .5, .75, 1, ..., 3.25: floor, ceil, half-up, half-down and half-even all differ"),
        probe("rounding-quarters-half-offsets", "NEAREST_NEIGHBOR", [4.0], [0.5], [0.5], (16,), (4,), "rounding",
              "x = (o - .5)/4 - .5 = -.625, -.375, ..., 3.125: eighths, no tie, two roundings groups"),
        probe("rounding-ties", "NEAREST_NEIGHBOR", [1.0], [-0.25], [-0.25], (5,), (7,), "rounding",
              "x = o + .5 = .5, 1.5, 2.5, 3.5, 4.5: every coordinate a tie; half-up and half-even differ at even k"),
        probe("rounding-below-half", "NEAREST_NEIGHBOR", [1.0], [BELOW_HALF], [BELOW_HALF], (1,), (2,), "rounding",
              "x = 0.49999997 (0.5 - 2^-25): floor, half-down, half-even and exact half-up pick 0; ceil and "
              "floor(x + 0.5) in float32 (the sum rounds to 1.0) pick 1"),
        probe("rounding-rank4-fl3", "NEAREST_NEIGHBOR", [1.0, 1.0, 2.0, 4.0], [0.0] * 4, [0.0] * 4, (1, 2, 4, 8),
              (1, 2, 3, 2), "rounding", "4-D (FL 3_0): x = o/2 (H) and o/4 (W)"),
        probe("edges-linear-below", "LINEAR", [1.0], [0.75], [0.75], (6,), (4,), "edges",
              "x = o - 1.5 = -1.5 (both taps below 0), -.5 (one tap below), .5, 1.5, 2.5, 3.5 (one tap past 3)"),
        probe("edges-linear-above", "LINEAR", [1.0], [-1.25], [-1.25], (4,), (5,), "edges",
              "x = o + 2.5 = 2.5, 3.5, 4.5, 5.5: taps past the last element, 5.5 wholly past it"),
    ]
    for name, ipo, opo in (("half-pixel-swapped", -0.5, 0.5), ("half-pixel-literal", 0.5, -0.5), ("zero", 0.0, 0.0)):
        found.append(probe(f"page-example-{name}", "NEAREST_NEIGHBOR", [1.0, 1.0, 0.5, 1.5], [ipo] * 4, [opo] * 4,
                           (1, 1, 1, 3), (1, 1, 2, 2), "all",
                           "the page's example (dY [4, 5, 6] -> [[9, 6], [0, 0]]) with dY = 1, 2, 4; candidates named "
                           "by every variant (offsets+rounding) that gives them"))
    return found


def write(path: Path) -> None:
    suite = {"format": "dmlconform/v1", "suite": "probe_resample_grad_readings",
             "description": "ResampleGrad (v0): which reading of each open choice a stack follows", "cases": cases()}
    path.write_text(yaml.safe_dump(suite, sort_keys=False, width=120), encoding="utf-8")


def analyse(paths: list[Path]) -> None:
    for path in paths:
        document = json.loads(path.read_text(encoding="utf-8"))
        print(f"== {path}")
        for result in document["cases"]:
            if not result["id"].startswith("probe_resample_grad_readings/"):
                continue
            matched = result.get("matched_all") or ([result["matched"]] if result.get("matched") else [])
            print(f"  {result['id'].split('/', 1)[1]:44} {result['status']:8} {', '.join(matched) or '-'}")


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
