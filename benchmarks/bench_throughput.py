"""Throughput of `dmlconform run`: cases per second, how it scales, and where a case's time goes.

    python benchmarks/bench_throughput.py [--copies 2 6] [--repeats 3] [--backends numpy onnxruntime ...]

The workload is what `dmlconform run` runs by default: the bundled suites of the standard tier (the
hand-written suites, the smoke and the standard generated suites; 1,732 cases) copied N times into a
temporary folder, each copy's suites renamed. Each run is a whole
CI-style command, `CI=true dmlconform run DIR --backend B --json R.json --junit R.xml` (so with the
journal), timed from the shell's side: interpreter start, loading, workers, reports. Backends: `numpy`,
`onnxruntime --ep cpu`, `native` with the Python harness, and `native` with the example C harness (built
with the system compiler, skipped without one).

Printed per backend: wall time and cases/s at each size, medians of the repeats; the marginal rate between the
two sizes (the cost of one more case); and t/t, the larger run's time over the smaller's, which must stay
within 15 % of the ratio of their case counts (linear, or better: the fixed start-up cost is paid once).
Then, for the smaller size, the per-case time broken down, measured in this process over the same cases:
loading (with the command's parallel parser), reference, backend, comparison and reporting; `rest` is the
command's wall time per case beyond these (interpreter start, worker start, round trips to the worker,
journal, progress). Targets: numpy >= 1000 cases/s, ORT CPU >= 300 cases/s, end to end at the larger
size. Exit status 1 on a MISS.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from dmlconform.backends import create_backend
from dmlconform.backends.base import BackendOptions
from dmlconform.cli.common import bundled_suites
from dmlconform.compare import comparator
from dmlconform.report.console import render
from dmlconform.report.json_report import write_json
from dmlconform.report.junit import write_junit
from dmlconform.run_result import RunResult
from dmlconform.runner import judge as judge_module
from dmlconform.runner import run_case
from dmlconform.runner.loading import default_helpers, parallel_parser
from dmlconform.suite.loader import load_paths

TARGETS = {"numpy": 1000.0, "onnxruntime": 300.0}
C_HARNESS = Path(__file__).resolve().parents[1] / "examples" / "c_harness" / "dmlc_harness.c"


@dataclass
class Backend:
    label: str
    args: list[str]
    name: str
    options: BackendOptions = field(default_factory=BackendOptions)


def replicate(folder: Path, copies: int) -> int:
    """`copies` copies of the bundled suites under `folder`, suites renamed; returns the number of suite files."""
    files = 0
    for copy in range(copies):
        target = folder / f"copy{copy:03d}"
        shutil.copytree(bundled_suites(), target, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
        for suite in target.rglob("*.yaml"):
            text = suite.read_text()
            suite.write_text(re.sub(r"^suite: *(\S+)", rf"suite: \1.copy{copy}", text, count=1, flags=re.MULTILINE))
            files += 1
    return files


def wall(command: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as reports:
            clock = time.perf_counter()
            done = subprocess.run([*command, "--json", f"{reports}/r.json", "--junit", f"{reports}/r.xml"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, "CI": "true"})
            times.append(time.perf_counter() - clock)
        if done.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(command)} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return statistics.median(times)


def breakdown(folder: Path, backend: Backend) -> dict[str, float]:
    """Seconds per case spent loading, in the reference, in the backend, comparing and reporting."""
    spent = {"reference": 0.0, "comparison": 0.0}

    def timed(key: str, function):
        def wrapper(*args, **kwargs):
            clock = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[key] += time.perf_counter() - clock
        return wrapper

    clock = time.perf_counter()
    cases = load_paths([folder], parse=parallel_parser(default_helpers()))  # as the command loads
    loading = time.perf_counter() - clock
    instance = create_backend(backend.name, backend.options)
    info = instance.info()
    original_judge, original_references = judge_module.judge, {}
    judge_module.judge = timed("comparison", comparator.judge)
    for case in cases:
        operator = type(case.op)
        if operator not in original_references:
            original_references[operator] = operator.reference
            operator.reference = timed("reference", operator.reference)
    try:
        clock = time.perf_counter()
        results = [run_case(case, instance, info.feature_level) for case in cases]
        running = time.perf_counter() - clock
    finally:
        judge_module.judge = original_judge
        for operator, reference in original_references.items():
            operator.reference = reference
        instance.close()
    run = RunResult(info, info.feature_level, __import__("datetime").datetime.now(), running, results)
    clock = time.perf_counter()
    with open(os.devnull, "w") as sink, tempfile.TemporaryDirectory() as reports:
        from rich.console import Console

        render(run, Console(file=sink, width=120), 25)
        write_json(run, Path(reports) / "r.json")
        write_junit(run, Path(reports) / "r.xml")
    reporting = time.perf_counter() - clock
    n = len(cases)
    backend_only = running - spent["comparison"] - (spent["reference"] if backend.name != "numpy" else 0.0)
    return {"cases": n, "loading": loading / n, "reference": spent["reference"] / n,
            "backend": backend_only / n, "comparison": spent["comparison"] / n, "reporting": reporting / n}


def backends(selected: list[str], build: Path) -> list[Backend]:
    harness = f"{sys.executable} -m dmlconform.harness --backend numpy"
    known = [Backend("numpy", [], "numpy"),
             Backend("onnxruntime --ep cpu", ["--backend", "onnxruntime", "--ep", "cpu"], "onnxruntime",
                     BackendOptions(ep="cpu")),
             Backend("native, Python harness", ["--backend", "native", "--harness", harness], "native",
                     BackendOptions(harness=harness))]
    compiler = next((c for c in ("cc", "gcc", "clang") if shutil.which(c)), None)
    if compiler is not None:
        binary = build / "dmlc_harness"
        subprocess.run([compiler, "-std=c99", "-O2", "-o", str(binary), str(C_HARNESS)], check=True)
        known.append(Backend("native, C harness", ["--backend", "native", "--harness", str(binary)], "native",
                             BackendOptions(harness=str(binary))))
    keys = {"numpy": "numpy", "onnxruntime": "onnxruntime", "native-python": "Python", "native-c": "C harness"}
    return [b for b in known if any(keys[s] in b.label for s in selected)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, nargs=2, default=[2, 6], metavar=("SMALL", "LARGE"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--backends", nargs="+", default=["numpy", "onnxruntime", "native-python", "native-c"],
                        choices=["numpy", "onnxruntime", "native-python", "native-c"])
    args = parser.parse_args()
    small, large = args.copies
    missed = False
    with tempfile.TemporaryDirectory() as root:
        folders = {copies: Path(root) / f"x{copies}" for copies in (small, large)}
        for copies, folder in folders.items():
            replicate(folder, copies)
        counts = {copies: len(load_paths([folder])) for copies, folder in folders.items()}
        print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; the bundled suites copied {small}x "
              f"({counts[small]} cases) and {large}x ({counts[large]} cases); medians of {args.repeats}")
        print(f"{'backend':24} {'cases':>6} {'wall (s)':>8} {'cases/s':>8} {'marginal/s':>10} {'t/t':>5}  verdict")
        rows = []
        for backend in backends(args.backends, Path(root)):
            command = [sys.executable, "-m", "dmlconform", "run", *backend.args]
            times = {copies: wall([*command, str(folders[copies])], args.repeats) for copies in (small, large)}
            # Linear (or better): the larger run takes at most its share of cases times the smaller run's time.
            growth = times[large] / times[small]
            linear = growth <= counts[large] / counts[small] * 1.15
            marginal = (counts[large] - counts[small]) / (times[large] - times[small])
            rate = counts[large] / times[large]
            target = TARGETS.get(backend.name if backend.name != "native" else "")
            verdict = "" if target is None else ("PASS" if rate >= target else "MISS") + f" (target >= {target:g})"
            missed |= verdict.startswith("MISS")
            for copies in (small, large):
                last = copies == large
                print(f"{backend.label if not last else '':24} {counts[copies]:6d} {times[copies]:8.2f} "
                      f"{counts[copies] / times[copies]:8.0f} "
                      f"{f'{marginal:10.0f}' if last else '':>10} "
                      f"{(f'{growth:.2f}' + (' linear' if linear else ' NOT linear')) if last else '':>5}  "
                      f"{verdict if last else ''}")
            rows.append((backend, times[small]))
        print(f"\nper case, ms, over the {counts[small]} cases (measured in this process; the rest of the command's "
              "wall time per case is start-up, workers and their round trips, journal, progress)")
        print(f"{'backend':24} {'loading':>8} {'reference':>9} {'backend':>8} {'compare':>8} {'reports':>8} "
              f"{'rest':>8}")
        for backend, seconds in rows:
            parts = breakdown(folders[small], backend)
            n = parts.pop("cases")
            rest = seconds / n - sum(parts.values())
            print(f"{backend.label:24} " + " ".join(f"{parts[k] * 1000:8.3f}" for k in
                                                     ("loading", "reference", "backend", "comparison", "reporting"))
                  + f" {rest * 1000:8.3f}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
