"""Memory bounded by declarations: peak resident memory of loading suites against the tensor bytes their cases
declare, and of the issue's zip bomb against an honest archive of the same size.

    python benchmarks/bench_hostile_memory.py [--mib 64]

1. Declared tensors. A one-case ReluGrad suite (X, dY and the expected dX, FLOAT32) whose tensors come from .npy
   files, from one .npz archive, from `generate:` (normal, the costliest generator), and from inline `data:`
   lists (YAML text), each loaded by `dmlconform list` in a process of its own. Printed: the peak (VmHWM), the
   peak less that of the same command on a one-element suite (the interpreter and its imports), and that excess
   per declared byte: the multiple k of the bound. For inline data the excess is also given per byte of YAML.
2. Suite text. YAML that parses into the most objects per byte (2 million empty mappings, distinct numbers,
   distinct keys, under a key the loader ignores): the excess per byte of text, which the suite limits count as
   TEXT_WEIGHT (dmlconform/suite/limits.py).
3. The zip bomb. The issue's 1 MB .npz (a member declaring 2^28 float32 zeros, 1 GiB) referenced by a case that
   declares shape [4], against an honest 1 MB .npz (262,144 random float32, declared as such): peaks and ratio.

Targets (exit 1 on a MISS): k <= 4 for tensors from files and generators; text at most TEXT_WEIGHT bytes per
byte; the bomb refused with a peak within 8 MB of the honest file's and under 100 MB. Timings are not taken:
memory does not depend on the machine's load.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.hostile_files import suite_with_file, zip_bomb  # noqa: E402

MIB = 1 << 20
TARGET_PER_DECLARED = 4.0
TARGET_BOMB_EXCESS = 8_000_000
#: `dmlconform ARGS`, printing the process's peak resident memory (bytes) as its last line on stderr.
PEAK = """import atexit, sys
def peak():
    kib = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    sys.stderr.write(f"\\nVmHWM {kib * 1024}\\n")
atexit.register(peak)
sys.argv = ["dmlconform", *sys.argv[1:]]
from dmlconform.cli import main
main()
"""


def peak_of(*args: object) -> tuple[int, int, str]:
    """(peak bytes, exit status, the error line if any) of `dmlconform ARGS`."""
    process = subprocess.run([sys.executable, "-c", PEAK, *map(str, args)], capture_output=True, text=True,
                             check=False)
    lines = process.stderr.strip().splitlines()
    error = next((line for line in lines if line.startswith("dmlconform: error")), "")
    return int(lines[-1].split()[1]), process.returncode, error


def relu_suite(folder: Path, source: str, elements: int) -> tuple[Path, int, int]:
    """A one-case ReluGrad suite of `elements` per tensor from `source`; (suite, declared bytes, YAML bytes)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(elements, dtype=np.float32)
    dy = rng.standard_normal(elements, dtype=np.float32)
    if source == "generate":
        spec = {"dist": "normal", "seed": 1}
        from dmlconform.dtypes import DataType
        from dmlconform.suite.generate import generate

        x = generate(spec, DataType.FLOAT32, (elements,))
        dy = generate({**spec, "seed": 2}, DataType.FLOAT32, (elements,))
    dx = np.where(x > 0, dy, np.float32(0))
    tensors = {"InputTensor": x, "InputGradientTensor": dy, "OutputGradientTensor": dx}
    specs = {}
    for name, array in tensors.items():
        shape = f"shape: [{elements}]"
        if source == "npy":
            np.save(folder / f"{name}.npy", array)
            specs[name] = f"{{dtype: FLOAT32, {shape}, file: {name}.npy}}"
        elif source == "npz":
            specs[name] = f"{{dtype: FLOAT32, {shape}, file: 'data.npz:{name}'}}"
        elif source == "generate" and name != "OutputGradientTensor":
            seed = 1 if name == "InputTensor" else 2
            specs[name] = f"{{dtype: FLOAT32, {shape}, generate: {{dist: normal, seed: {seed}}}}}"
        elif source == "generate":
            np.save(folder / f"{name}.npy", array)
            specs[name] = f"{{dtype: FLOAT32, {shape}, file: {name}.npy}}"
        else:
            specs[name] = f"{{dtype: FLOAT32, {shape}, data: [{', '.join(f'{v!r}' for v in array.tolist())}]}}"
    if source == "npz":
        np.savez_compressed(folder / "data.npz", **tensors)
    text = (f"format: dmlconform/v1\nsuite: memory.{source}\ncases:\n  - id: c\n    op: ACTIVATION_RELU_GRAD\n"
            f"    inputs:\n      InputTensor: {specs['InputTensor']}\n"
            f"      InputGradientTensor: {specs['InputGradientTensor']}\n"
            f"    outputs:\n      OutputGradientTensor: {specs['OutputGradientTensor']}\n")
    suite = folder / "suite.yaml"
    suite.write_text(text)
    return suite, sum(a.nbytes for a in tensors.values()), len(text.encode())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=64, help="bytes each tensor declares, in MiB (inline data: 1/16)")
    args = parser.parse_args()
    missed = False
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        (root / "base").mkdir()
        base_suite, _, _ = relu_suite(root / "base", "npy", 1)
        base, _, _ = peak_of("list", base_suite)
        print(f"1. declared tensors: `dmlconform list` of a one-case ReluGrad suite (X, dY, dX FLOAT32); baseline "
              f"(one element each) {base / MIB:.0f} MiB")
        print(f"   {'source':10} {'declared MiB':>12} {'YAML KiB':>9} {'peak MiB':>9} {'excess MiB':>10} "
              f"{'k = excess/declared':>20}  verdict")
        for source in ("npy", "npz", "generate", "data"):
            folder = root / source
            folder.mkdir()
            elements = args.mib * MIB // 4 // (16 if source == "data" else 1)
            suite, declared, text = relu_suite(folder, source, elements)
            peak, status, error = peak_of("list", suite)
            excess = peak - base
            k = excess / declared
            if source == "data":
                verdict = f"(inline data: {excess / text:.1f} bytes per YAML byte; no target)"
            else:
                verdict = "PASS" if k <= TARGET_PER_DECLARED and status == 0 else "MISS"
                missed |= verdict == "MISS"
            print(f"   {source:10} {declared / MIB:12.1f} {text / 1024:9.0f} {peak / MIB:9.0f} {excess / MIB:10.1f} "
                  f"{k:20.2f}  {verdict}{' ' + error if error else ''}")

        from dmlconform.suite.limits import TEXT_WEIGHT

        count = 2_000_000
        print(f"2. suite text: `dmlconform list` of a suite whose YAML holds {count:,} of ... under an ignored key")
        for name, text in (("empty mappings", "{}," * count), ("distinct ints", ",".join(map(str, range(count)))),
                           ("distinct keys", ",".join(f"k{i}: 1" for i in range(count // 2)))):
            body = f"x: [{text}]\n" if name != "distinct keys" else f"x: {{{text}}}\n"
            suite = root / "base" / f"text-{len(body)}.yaml"  # beside the base suite's .npy files
            suite.write_text(base_suite.read_text().replace("cases:", body + "cases:", 1))
            peak, status, error = peak_of("list", suite, "--suite-limit", "bytes=none")
            per_byte = (peak - base) / len(body)
            verdict = "PASS" if per_byte <= TEXT_WEIGHT and status == 0 else "MISS"
            missed |= verdict == "MISS"
            print(f"   {name:16} {len(body) / 1e6:6.1f} MB of YAML, peak {peak / MIB:5.0f} MiB: {per_byte:5.1f} bytes "
                  f"per byte of text  {verdict} (counted as {TEXT_WEIGHT}){' ' + error if error else ''}")

        (root / "bomb").mkdir()
        (root / "honest").mkdir()
        bomb = zip_bomb(root / "bomb" / "a.npz")
        np.savez_compressed(root / "honest" / "a.npz",
                            x=np.random.default_rng(1).standard_normal(262_144, dtype=np.float32))
        honest = root / "honest" / "a.npz"
        bomb_peak, bomb_status, bomb_error = peak_of("list", suite_with_file(root / "bomb" / "s.yaml", "a.npz:x", [4]))
        honest_peak, honest_status, _ = peak_of("list", suite_with_file(root / "honest" / "s.yaml", "a.npz:x",
                                                                        [262_144]))
        ok = (bomb_status == 2 and honest_status == 0 and bomb_peak - honest_peak <= TARGET_BOMB_EXCESS
              and bomb_peak < 100_000_000)
        missed |= not ok
        print(f"3. the zip bomb ({bomb.stat().st_size / 1e6:.2f} MB, a member declaring 2^28 float32) against an "
              f"honest archive ({honest.stat().st_size / 1e6:.2f} MB, 262,144 float32), each read by `dmlconform list`")
        print(f"   honest: peak {honest_peak / 1e6:.1f} MB, exit {honest_status}")
        print(f"   bomb:   peak {bomb_peak / 1e6:.1f} MB ({bomb_peak / honest_peak:.2f}x the honest file's), exit "
              f"{bomb_status}: {bomb_error}")
        print(f"   {'PASS' if ok else 'MISS'} (target: refused, within {TARGET_BOMB_EXCESS / 1e6:.0f} MB of the honest "
              "file's peak and under 100 MB)")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
