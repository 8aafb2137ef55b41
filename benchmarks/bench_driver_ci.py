"""Driver-CI figures: `--jobs` speed-up on the bundled suites and interrupt latency. Prints ratios; asserts nothing.

    python benchmarks/bench_driver_ci.py [--repeats 3]

* `--jobs N` on `native` with the Python harness: as is (about 1 ms of work per case, so process start and
  suite loading weigh in), and with `--delay 0.01` (a device that takes 10 ms a case).
* Interrupt latency: SIGINT to a running `--jobs 2` native run, until the process has exited with its reports
  written, and until the harnesses are gone.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HARNESS = "python -m dmlconform.harness --backend numpy"


def dmlconform(*args: str) -> list[str]:
    return [sys.executable, "-m", "dmlconform", *args]


def wall(args: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        clock = time.perf_counter()
        subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                       env={**os.environ, "CI": "true"})
        times.append(time.perf_counter() - clock)
    return statistics.median(times)


def interrupt_latency(folder: Path) -> tuple[float, float]:
    log = folder / "served.log"
    journal = folder / "r.journal.jsonl"
    process = subprocess.Popen(dmlconform("run", "--backend", "native", "--harness",
                                          f"{HARNESS} --delay 0.05 --log-served {log}", "--jobs", "2", "--json",
                                          str(folder / "r.json"), "--junit", str(folder / "r.xml")),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "CI": "true"})
    while not journal.exists() or journal.read_text().count('{"case"') < 10:
        time.sleep(0.01)
    clock = time.perf_counter()
    process.send_signal(signal.SIGINT)
    process.wait()
    exited = time.perf_counter() - clock
    assert process.returncode == 130 and (folder / "r.json").exists()
    pids = {int(line.split()[1]) for line in log.read_text().splitlines()}
    while any(_running(pid) for pid in pids):
        time.sleep(0.005)
    return exited, time.perf_counter() - clock


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    repeats = parser.parse_args().repeats
    print(f"{os.cpu_count()} CPUs; medians of {repeats}")
    harnesses = (("native, Python harness", HARNESS), ("native, harness --delay 0.01", f"{HARNESS} --delay 0.01"))
    for label, harness in harnesses:
        times = {jobs: wall(dmlconform("run", "--backend", "native", "--harness", harness, "--jobs", str(jobs)),
                            repeats)
                 for jobs in (1, 2, 4)}
        print(f"{label}: 317 cases, --jobs 1 {times[1]:.2f} s, --jobs 2 {times[2]:.2f} s "
              f"(speed-up {times[1] / times[2]:.2f}), --jobs 4 {times[4]:.2f} s (speed-up {times[1] / times[4]:.2f})")
    numpy = {jobs: wall(dmlconform("run", "--jobs", str(jobs)), repeats) for jobs in (1, 2)}
    print(f"numpy: --jobs 1 {numpy[1]:.2f} s, --jobs 2 {numpy[2]:.2f} s (speed-up {numpy[1] / numpy[2]:.2f})")
    latencies = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as folder:
            latencies.append(interrupt_latency(Path(folder)))
    exited = statistics.median(a for a, _ in latencies)
    gone = statistics.median(b for _, b in latencies)
    print(f"SIGINT to exit with reports written: {exited * 1000:.0f} ms; "
          f"to the last harness gone: {gone * 1000:.0f} ms")


if __name__ == "__main__":
    main()
