"""Peak memory of `dmlconform run` on one case with a 256 MiB tensor, against the case's own tensor bytes.

    python benchmarks/bench_memory.py [--mib 256] [--backend numpy]

For each of three cases (ReluGrad with X, dY and dX of 256 MiB; MaxPoolingGrad whose X is 256 MiB, 3x3
stride 2 pad 1; ResampleGrad1 LINEAR x2 whose dY is 256 MiB), the benchmark writes a suite with the tensors
as .npy files (expected output from the reference, computed here), runs `dmlconform run` on it in a
subprocess, and samples the resident memory of the whole process tree (the command and its worker) every
5 ms. It prints the peak of the tree's total RSS, each process' high-water mark, and the ratio of the peak
to the case's tensor bytes (inputs plus expected output). Target: at most 4x. Exit status 1 on a MISS.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from dmlconform.dtypes import DataType
from dmlconform.ops import find_operator
from dmlconform.ops.base import Description, TensorDesc

TARGET = 4.0
MIB = 1 << 20


def tree(root: int) -> list[int]:
    """root and every descendant, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def status_kib(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def peak_rss(command: list[str]) -> tuple[int, dict[int, int], int]:
    """(peak total RSS of the tree in bytes, each process' last-seen high-water mark, exit status)."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               env={**os.environ, "CI": "true"})
    peak, marks = 0, {}
    members = [process.pid]
    sampled = 0
    while process.poll() is None:
        if sampled % 20 == 0:
            members = tree(process.pid)  # the worker starts after the command
        sampled += 1
        peak = max(peak, sum(status_kib(pid, "VmRSS") for pid in members) * 1024)
        for pid in members:
            marks[pid] = max(marks.get(pid, 0), status_kib(pid, "VmHWM") * 1024)
        time.sleep(0.005)
    stderr = process.stderr.read().decode() if process.stderr else ""
    if process.returncode not in (0, 1):
        print(stderr, file=sys.stderr)
    return peak, marks, process.returncode


def write_case(folder: Path, name: str, op_name: str, params: dict, inputs: dict[str, np.ndarray]) -> int:
    """A one-case suite in `folder`; returns the case's tensor bytes."""
    op = find_operator(op_name)
    dtype = DataType.FLOAT32
    output_shape = inputs["InputTensor"].shape if "InputTensor" in inputs else params.pop("_output_shape")
    tensors = {k: TensorDesc(dtype, v.shape) for k, v in inputs.items()}
    tensors["OutputGradientTensor"] = TensorDesc(dtype, tuple(output_shape))
    description = Description(op, op.parse_params(params, dtype), tensors)
    expected = op.reference(description, inputs).outputs["OutputGradientTensor"]
    arrays = {**inputs, "OutputGradientTensor": expected}
    for key, array in arrays.items():
        np.save(folder / f"{key}.npy", array)
    lines = ["format: dmlconform/v1", f"suite: memory.{name}", "cases:", f"  - id: {name}", f"    op: {op_name}",
             f"    params: {params!r}".replace("'", '"').replace("(", "[").replace(")", "]"), "    inputs:"]
    for key in inputs:
        lines.append(f"      {key}: {{dtype: FLOAT32, shape: {list(inputs[key].shape)}, file: {key}.npy}}")
    lines += ["    outputs:", f"      OutputGradientTensor: {{dtype: FLOAT32, shape: {list(expected.shape)}, "
              "file: OutputGradientTensor.npy}"]
    (folder / "suite.yaml").write_text("\n".join(lines) + "\n")
    return sum(a.nbytes for a in arrays.values())


def cases(mib: int) -> list[tuple[str, str, dict, dict[str, np.ndarray]]]:
    rng = np.random.default_rng(0)
    elements = mib * MIB // 4
    side = int(np.sqrt(elements // 64))
    side -= side % 2
    x = rng.standard_normal((1, 64, side, side), dtype=np.float32)
    return [
        ("relu_grad", "ACTIVATION_RELU_GRAD", {},
         {"InputTensor": rng.standard_normal(elements, dtype=np.float32).reshape(64, -1),
          "InputGradientTensor": rng.standard_normal(elements, dtype=np.float32).reshape(64, -1)}),
        ("max_pooling_grad", "MAX_POOLING_GRAD",
         {"Strides": [2, 2], "WindowSize": [3, 3], "StartPadding": [1, 1], "EndPadding": [1, 1], "Dilations": [1, 1]},
         {"InputTensor": x, "InputGradientTensor": rng.standard_normal((1, 64, side // 2, side // 2),
                                                                         dtype=np.float32)}),
        ("resample_grad1", "RESAMPLE_GRAD1",
         {"InterpolationMode": "LINEAR", "RoundingDirection": "DECREASING", "Scales": [1.0, 1.0, 2.0, 2.0],
          "InputPixelOffsets": [0.5] * 4, "OutputPixelOffsets": [-0.5] * 4,
          "_output_shape": (1, 64, side // 2, side // 2)},
         {"InputGradientTensor": x}),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256, help="size of the case's largest tensor")
    parser.add_argument("--backend", default="numpy")
    args = parser.parse_args()
    baseline, _, _ = peak_rss([sys.executable, "-c", "import dmlconform.cli.run, numpy, yaml, rich"])
    print(f"{'case':18} {'tensor MiB':>10} {'peak MiB':>9} {'ratio':>6}  per process (MiB)      verdict")
    missed = False
    for name, op_name, params, inputs in cases(args.mib):
        with tempfile.TemporaryDirectory() as folder:
            tensor_bytes = write_case(Path(folder), name, op_name, dict(params), inputs)
            peak, marks, status = peak_rss([sys.executable, "-m", "dmlconform", "run", "--backend", args.backend,
                                            str(Path(folder) / "suite.yaml")])
        ratio = peak / tensor_bytes
        verdict = "PASS" if ratio <= TARGET and status == 0 else "MISS"
        missed |= verdict == "MISS"
        per_process = ", ".join(f"{v / MIB:.0f}" for v in sorted(marks.values(), reverse=True)[:3])
        print(f"{name:18} {tensor_bytes / MIB:10.0f} {peak / MIB:9.0f} {ratio:6.2f}  {per_process:22} {verdict} "
              f"(target <= {TARGET:g}x; exit {status})")
    print(f"(an interpreter with the command's imports alone: {baseline / MIB:.0f} MiB)")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
