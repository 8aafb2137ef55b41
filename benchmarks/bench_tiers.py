"""Tier figures: wall time of `dmlconform run --tier T` on the reference, and of generating the tiers. Prints ratios
against the hand-written suites alone, measured in the same run; asserts nothing.

    python benchmarks/bench_tiers.py [--repeats 3] [--full]

The issue asks for smoke under 10 s and standard under 2 minutes on the reference on the 2-core development
machine. `--full` also times the full tier (generated into a temporary cache first, which is timed too).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HAND_WRITTEN = [str(REPO / "test_vectors" / name) for name in ("seed", "relu_grad", "clip_grad1", "slice_grad",
                                                                 "max_pooling_grad", "resample_grad1")]


def wall(args: list[str], repeats: int, env: dict[str, str]) -> float:
    times = []
    for _ in range(repeats):
        clock = time.perf_counter()
        subprocess.run([sys.executable, "-m", "dmlconform", *args], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True, env=env)
        times.append(time.perf_counter() - clock)
    return statistics.median(times)


def count(args: list[str], env: dict[str, str]) -> int:
    listing = subprocess.run([sys.executable, "-m", "dmlconform", "list", *args], capture_output=True, text=True,
                             check=True, env=env)
    return int(listing.stdout.strip().splitlines()[-1].split()[0])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--full", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "CI": "true", "DMLCONFORM_CACHE": cache}
        runs = [("hand-written suites (peer)", ["run", *HAND_WRITTEN], ["list", *HAND_WRITTEN]),
                ("--tier smoke", ["run", "--tier", "smoke"], ["--tier", "smoke"]),
                ("--tier standard (the default)", ["run"], [])]
        rows: list[tuple[str, int | None, float]] = []
        if args.full:
            generate = wall(["generate", "--tier", "full", "--quiet"], 1, env)
            runs.append(("--tier full", ["run", "--tier", "full"], ["--tier", "full"]))
        for label, command, listing in runs:
            cases = count(listing[1:] if listing and listing[0] == "list" else listing, env)
            rows.append((label, cases, wall(command, args.repeats, env)))
        if args.full:
            rows.append(("generate --tier full (once)", None, generate))
    peer = rows[0][2]
    print(f"{'run':<34} {'cases':>6} {'wall s':>8} {'× peer':>7}")
    for label, cases, seconds in rows:
        ratio = f"{seconds / peer:7.2f}" if cases is not None else ""
        print(f"{label:<34} {cases if cases is not None else '':>6} {seconds:8.2f} {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
