"""SliceGrad in DirectML 1.15.4 merges window axes: a model that predicts its outputs, checked against a run.

Found in the full tier (both stacks fail the same six SliceGrad cases; results/DECISIONS.md §7). The model: an axis
whose window is the whole axis read forwards one by one (offset 0, size = OutputGradientTensor's size, stride 1) is
merged into its outer neighbour when that one is read forwards one by one too, as if the gradient were contiguous
across the two; DirectML then reads InputGradientTensor as if its size on the merged inner axis were the window's.
Where the gradient is smaller than the window on such an axis (a Slice1 output the caller chose smaller, which the
pages allow), gradients land on the wrong elements.

For every valid SliceGrad case of the given tiers the script says whether the model's output differs from the
golden, and compares that with the case's status in each result: the model should differ exactly where the stack
FAILed. With a result that kept its outputs (`--artifacts DIR`), it also compares the model's output with
DirectML's, bit for bit.

  python examples/dml_harness/investigate/slice_grad_merged_axes.py --tier full RESULT.json [RESULT2.json ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from dmlconform.case import Case
from dmlconform.generation.tier_files import ensure_full_tier
from dmlconform.ops.slice_grad import window_indices
from dmlconform.suite.loader import load_paths
from dmlconform.suite.tiers import Tier

ROOT = Path(__file__).resolve().parents[3]


def merged(dy: list[int], dx: list[int], offsets: list[int], sizes: list[int], strides: list[int]
           ) -> tuple[list[int], ...]:
    """The description after DirectML's suspected merge, innermost axis first."""
    axis = len(dx) - 1
    while axis > 0:
        whole = offsets[axis] == 0 and sizes[axis] == dx[axis] and strides[axis] == 1
        if whole and strides[axis - 1] == 1:
            offsets[axis - 1] *= dx[axis]
            sizes[axis - 1] *= dx[axis]
            dx[axis - 1] *= dx[axis]
            dy[axis - 1] *= dy[axis]  # the gradient taken as contiguous across the two axes
            for values in (dy, dx, offsets, sizes, strides):
                del values[axis]
        axis -= 1
    return dy, dx, offsets, sizes, strides


def model_output(case: Case) -> np.ndarray:
    p = case.description.params
    gradient = case.inputs["InputGradientTensor"]
    shape = case.description.tensors["OutputGradientTensor"].shape
    dy, dx, offsets, sizes, strides = merged(list(gradient.shape), list(shape), list(p["InputWindowOffsets"]),
                                             list(p["InputWindowSizes"]), list(p["InputWindowStrides"]))
    out = np.zeros(dx, dtype=gradient.dtype)
    out[np.ix_(*window_indices(tuple(offsets), tuple(sizes), tuple(strides), tuple(dy)))] = gradient.reshape(dy)
    return out.reshape(shape)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="+", type=Path, help="dmlconform run --json results on DirectML")
    parser.add_argument("--tier", choices=("smoke", "standard", "full"), default="full")
    args = parser.parse_args()
    tier = Tier(args.tier)
    roots = [ROOT / "test_vectors"]
    if tier is Tier.FULL:
        roots = [ensure_full_tier(lambda line: print(line, file=sys.stderr))]
    cases = [c for c in load_paths(roots, tier) if c.op.name == "SLICE_GRAD" and not c.expect_invalid]
    agree = True
    for path in args.results:
        document = json.loads(path.read_text())
        ran = {c["id"]: c for c in document["cases"]}
        tally: dict[tuple[bool, str], int] = {}
        for case in cases:
            if case.full_id not in ran:
                continue
            record = ran[case.full_id]
            output = model_output(case)
            differs = not np.array_equal(output.view(np.uint8), case.expected["OutputGradientTensor"].view(np.uint8))
            key = (differs, record["status"])
            tally[key] = tally.get(key, 0) + 1
            agree &= differs == (record["status"] == "FAIL")
            kept = (record.get("artifacts") or {}).get("OutputGradientTensor")
            if kept and differs:
                actual = np.load(path.parent / kept if not Path(kept).is_absolute() else kept)
                same = np.array_equal(actual.view(np.uint8), output.view(np.uint8))
                agree &= same
                print(f"{case.full_id}: DirectML's output {'is' if same else 'is NOT'} the model's, bit for bit")
        print(f"{path}: " + ", ".join(f"model {'differs' if d else 'agrees'} & {s}: {n}"
                                      for (d, s), n in sorted(tally.items())))
    print("the model predicts every status" if agree else "the model does NOT predict every status")
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
