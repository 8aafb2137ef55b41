"""Start-up: `dmlconform --help` against `python -c "import numpy"`, measured in the same run.

    python benchmarks/bench_startup.py [--runs 20]

Uses hyperfine where it is installed (`apt-get install hyperfine`), else repeated subprocess timing (medians).
Also lists the heavy modules the command imports (must be none of onnxruntime, torch). Target: ours/peer <= 3.
Exit status 1 on a MISS.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = 3.0
HELP = [sys.executable, "-m", "dmlconform", "--help"]
PEER = [sys.executable, "-c", "import numpy"]
PROBE = ("import sys; sys.argv = ['dmlconform', '--help']\n"
         "try:\n    from dmlconform.cli import main; main()\nexcept SystemExit: pass\n"
         "print('IMPORTED:' + ','.join(sorted({m.split('.')[0] for m in sys.modules}\n"
         "                                  & {'onnxruntime', 'onnx', 'torch', 'numpy'})))")


def medians_by_hyperfine(runs: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as folder:
        export = Path(folder) / "times.json"
        subprocess.run(["hyperfine", "--warmup", "3", "--runs", str(runs), "-N", "--export-json", str(export),
                        shlex.join(HELP), shlex.join(PEER)], check=True, stdout=subprocess.DEVNULL)
        results = json.loads(export.read_text())["results"]
    return results[0]["median"], results[1]["median"]


def medians_by_subprocess(runs: int) -> tuple[float, float]:
    times: dict[int, list[float]] = {0: [], 1: []}
    for _ in range(runs):
        for which, command in enumerate((HELP, PEER)):
            clock = time.perf_counter()
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
            times[which].append(time.perf_counter() - clock)
    return statistics.median(times[0]), statistics.median(times[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    runs = parser.parse_args().runs
    tool = "hyperfine" if shutil.which("hyperfine") else "subprocess timing"
    ours, peer = medians_by_hyperfine(runs) if tool == "hyperfine" else medians_by_subprocess(runs)
    probe = subprocess.run([sys.executable, "-c", PROBE], check=True, capture_output=True, text=True).stdout
    heavy = next(line for line in probe.splitlines() if line.startswith("IMPORTED:")).removeprefix("IMPORTED:")
    ratio = ours / peer
    verdict = "PASS" if ratio <= TARGET and not ({"onnxruntime", "torch"} & set(heavy.split(","))) else "MISS"
    print(f"medians of {runs} ({tool}): dmlconform --help {ours * 1000:.0f} ms, python -c 'import numpy' "
          f"{peer * 1000:.0f} ms, ratio {ratio:.2f} {verdict} (target <= {TARGET:g}); "
          f"heavy modules imported by --help: {heavy or 'none'}")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
