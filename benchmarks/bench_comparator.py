"""The comparator against NumPy's own checks, measured in the same run.

    python benchmarks/bench_comparator.py [--repeats 7]

16M FLOAT32 and 16M FLOAT16 elements, 10 % of them 1 to 3 ULP away: `judge` under `ulp:3` against
numpy.testing.assert_array_max_ulp(maxulp=3) (target: at least 4x faster, ours/peer <= 0.25); identical
arrays: `judge` against numpy.array_equal (target: within 2x, ours/peer <= 2). Medians of paired runs.
Exit status 1 on a MISS.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
from timing import paired_medians

from dmlconform.compare.comparator import judge
from dmlconform.compare.tolerance import Tolerance
from dmlconform.dtypes import DataType

ELEMENTS = 1 << 24


def nudged(values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A copy with 10 % of the elements moved 1 to 3 ULP away from zero (so the distance is exact)."""
    out = values.copy()
    chosen = rng.random(values.size) < 0.1
    bits = out.view(f"u{values.itemsize}")
    bits[chosen] += rng.integers(1, 4, size=int(chosen.sum())).astype(bits.dtype)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    repeats = parser.parse_args().repeats
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; {ELEMENTS} elements; medians of {repeats}")
    print(f"{'work':44} {'ours (s)':>9} {'peer (s)':>9} {'ours/peer':>9}  peer")
    missed = False
    rng = np.random.default_rng(2)
    rule = Tolerance.parse("ulp:3")
    for dtype in (DataType.FLOAT32, DataType.FLOAT16):
        golden = (rng.standard_normal(ELEMENTS) * 100).astype(dtype.numpy)
        golden[golden == 0] = 1  # keep every nudged element a finite number of ULPs away
        actual = nudged(golden, rng)
        assert judge(golden, actual, dtype, rule).max_ulp == 3
        rows = [(f"judge ulp:3, {dtype.name}, 10 % off by 1-3 ULP",
                 lambda g=golden, a=actual, d=dtype: judge(g, a, d, rule),
                 lambda g=golden, a=actual: np.testing.assert_array_max_ulp(g, a, maxulp=3),
                 "assert_array_max_ulp", 0.25),
                (f"judge, {dtype.name}, identical", lambda g=golden, d=dtype: judge(g, g.copy(), d, rule),
                 lambda g=golden: np.array_equal(g, g.copy()), "array_equal", 2.0)]
        for name, ours, peer, peer_name, target in rows:
            mine, theirs = paired_medians(ours, peer, repeats)
            ratio = mine / theirs
            verdict = "PASS" if ratio <= target else "MISS"
            missed |= verdict == "MISS"
            print(f"{name:44} {mine:9.4f} {theirs:9.4f} {ratio:9.2f}  {peer_name} {verdict} (target <= {target:g})")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
