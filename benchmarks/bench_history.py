"""The results history at driver-CI scale: 1,000 runs of the full tier (about 5.9 million case rows) in SQLite, and
what a CI job and its owner wait for.

    python benchmarks/bench_history.py [--runs 1000] [--stacks 4] [--db PATH|postgresql://...] [--keep]

The runs are made from a kept full-tier result (DirectML 1.15.4 on the H100, 5,899 cases): each stack runs builds in
turn, its driver version changes every 25 builds, 40 cases are flaky (each fails a run with probability 0.15), 12
regress at a random build and keep failing, 20 drift towards their allowance, and DirectML's own 20 known failures
fail throughout. They go in 20 runs to a transaction (how they are made is not what is measured).

Then, on that database:
* `add` of one standard-tier result (1,772 cases; the kept H100 one, its start time changed so that it is new): in
  this process (open, read, check, digest, write) and as the command `dmlconform history add` (a new Python
  included);
* `flaky` and `first-failure --all`, in this process and as commands (tables printed to a pipe);
* `drift`, `compare --by driver_version` and `timeline` of one case, in this process;
* the database's size on disk.
Targets (issue 32): add <= 1 s, flaky and first-failure --all <= 2 s, the database <= 1 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tree's dmlconform, not an installed one

from dmlconform.case_result import Status  # noqa: E402
from dmlconform.history.database import Database, open_database  # noqa: E402
from dmlconform.history.ingest import RunRecord, add_records, canonical_digest, read_record  # noqa: E402
from dmlconform.history.queries import compare, drift, first_failures, flaky, timeline  # noqa: E402

RESULTS = ROOT / "examples" / "dml_harness" / "results"
FULL = RESULTS / "directml-1.15.4-h100-full.json.xz"
STANDARD = RESULTS / "directml-1.15.4-h100-standard.json"
BATCH = 20
FLAKY, REGRESSING, DRIFTING = 40, 12, 20


def chosen_cases(base: RunRecord, seed: int = 32) -> list[int]:
    """The cases made flaky, regressing and drifting, in that order."""
    passing = [index for index, case in enumerate(base.cases) if case.passed == 1 and case.closeness is not None]
    return random.Random(seed).sample(passing, FLAKY + REGRESSING + DRIFTING)


def synthetic_runs(base: RunRecord, runs: int, stacks: int, seed: int = 32) -> Iterator[RunRecord]:
    """`runs` runs over `stacks` stacks, in the order a CI would add them."""
    chance = random.Random(seed + 1)
    chosen = chosen_cases(base, seed)
    flaky_cases = chosen[:FLAKY]
    regressing = {index: chance.randrange(runs // stacks) for index in chosen[FLAKY:FLAKY + REGRESSING]}
    drifting = chosen[FLAKY + REGRESSING:]
    fail = {index: replace(base.cases[index], status=Status.FAIL, outcome=Status.FAIL, passed=0, closeness=4.0)
            for index in (*flaky_cases, *regressing)}
    for number in range(runs):
        stack, build = number % stacks, number // stacks
        cases = list(base.cases)
        for index in flaky_cases:
            if chance.random() < 0.15:
                cases[index] = fail[index]
        for index, start in regressing.items():
            if build >= start:
                cases[index] = fail[index]
        for index in drifting:
            cases[index] = replace(cases[index], closeness=min(1.0, 0.2 + 0.8 * build / (runs // stacks)))
        meta = {**base.meta, "stack": f"directml on bench GPU {stack}", "driver_version": f"32.0.{build // 25}",
                "build": str(build), "commit": f"{chance.getrandbits(40):010x}", "branch": "main"}
        yield replace(base, digest=canonical_digest([base.digest, number]), source=f"bench run {number}",
                      stack=meta["stack"], configuration=canonical_digest([stack, build // 25]),
                      started=base.started + timedelta(minutes=10 * number), meta=meta, cases=tuple(cases))


def build_database(url: str, runs: int, stacks: int) -> tuple[float, RunRecord]:
    base = read_record(FULL)
    clock = time.perf_counter()
    with open_database(url, create=True) as database:
        batch: list[RunRecord] = []
        for done, record in enumerate(synthetic_runs(base, runs, stacks), 1):
            batch.append(record)
            if len(batch) == BATCH or done == runs:
                add_records(database, batch)
                batch = []
                if done % 100 == 0 or done == runs:
                    print(f"  {done} runs ({time.perf_counter() - clock:.0f} s)", flush=True)
    return time.perf_counter() - clock, base


def timed(function: Callable[[], object], repeats: int = 3) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        clock = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - clock)
    return statistics.median(times), result


def command(url: str, *args: str) -> float:
    clock = time.perf_counter()
    subprocess.run([sys.executable, "-m", "dmlconform", "history", *args, "--db", url], check=True,
                   stdout=subprocess.DEVNULL, env={**os.environ, "CI": "true"}, cwd=ROOT)
    return time.perf_counter() - clock


def median_command(url: str, *args: str, repeats: int = 3) -> float:
    return statistics.median(command(url, *args) for _ in range(repeats))


def new_standard_result(folder: Path, number: int) -> Path:
    """The kept standard-tier result with another start time: a run the history does not hold yet."""
    document = json.loads(STANDARD.read_text())
    document["started"] = f"2027-01-{number + 1:02d}T00:00:00+00:00"
    path = folder / f"standard-{number}.json"
    path.write_text(json.dumps(document))
    return path


def size_of(database: Database, url: str) -> int:
    if database.kind == "sqlite":
        database.query("PRAGMA wal_checkpoint(TRUNCATE)")
        return sum(Path(url + suffix).stat().st_size for suffix in ("", "-wal") if Path(url + suffix).exists())
    return int(database.query("SELECT pg_database_size(current_database())")[0][0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000, help="full-tier runs to build (default 1000)")
    parser.add_argument("--stacks", type=int, default=4, help="stacks they are spread over (default 4)")
    parser.add_argument("--db", help="a database URL to build into (default: a new SQLite file in a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the SQLite file it made (and the folder it is in)")
    options = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-history-"))
    url = options.db or str(folder / "history.sqlite")
    print(f"building {options.runs} full-tier runs on {options.stacks} stacks in {url}", flush=True)
    seconds, base = build_database(url, options.runs, options.stacks)
    rows = options.runs * len(base.cases)
    print(f"built: {rows:,} case rows in {seconds:.0f} s ({rows / seconds:,.0f} rows/s)")
    standard = [new_standard_result(folder, number) for number in range(6)]
    with open_database(url) as database:
        size = size_of(database, url)
        add_in_process = []
        for path in standard[:3]:
            clock = time.perf_counter()
            with open_database(url) as writer:
                add_records(writer, [read_record(path, {"build": "bench"})])
            add_in_process.append(time.perf_counter() - clock)
        flaky_s, flakes = timed(lambda: flaky(database))
        first_s, failures = timed(lambda: first_failures(database))
        drift_s, drifting = timed(lambda: drift(database), repeats=1)
        compare_s, _ = timed(lambda: compare(database, "driver_version"), repeats=1)
        case = base.cases[0].name
        timeline_s, _ = timed(lambda: timeline(database, case), repeats=1)
    add_command = statistics.median(command(url, "add", str(path), "--meta", "build=bench-cli")
                                    for path in standard[3:])
    flaky_command = median_command(url, "flaky")
    first_command = median_command(url, "first-failure", "--all")
    made = chosen_cases(base)
    names = [base.cases[index].name for index in made]
    found_flaky = {flake.case.name for flake in flakes.flakes}
    found_drift = {d.case.name for d in drifting}
    made_drift = set(names[FLAKY + REGRESSING:])
    print(f"\n{options.runs} runs x {len(base.cases)} cases = {rows:,} case rows (+ 6 standard-tier runs); medians of "
          "3 (drift, compare, timeline: 1)")
    print(f"flaky: {len(flakes.flakes)} (case, stack) pairs; of the {FLAKY} cases made flaky "
          f"{len(found_flaky & set(names[:FLAKY]))} found, {len(found_flaky - set(names[:FLAKY]))} other case(s)")
    failing = [f for f in failures if f.failing]  # not the cases that left the stack's suite
    print(f"failing now: {len(failing)} (case, stack) pairs; of the {REGRESSING} regressing cases "
          f"{len({f.case.name for f in failing} & set(names[FLAKY:FLAKY + REGRESSING]))} found")
    print(f"drift: {len(drifting)} (case, stack) pairs; of the {DRIFTING} drifting cases "
          f"{len(found_drift & made_drift)} found, {len(found_drift - made_drift)} other case(s)")
    figures = [
        ("add one standard-tier run, in process (read + check + write)", statistics.median(add_in_process), 1.0),
        ("add one standard-tier run, the command (new Python included)", add_command, 1.0),
        ("flaky, in process", flaky_s, 2.0), ("flaky, the command", flaky_command, 2.0),
        ("first-failure --all, in process", first_s, 2.0), ("first-failure --all, the command", first_command, 2.0),
        ("drift, in process", drift_s, None), ("compare --by driver_version, in process", compare_s, None),
        ("timeline of one case, in process", timeline_s, None),
    ]
    for label, value, target in figures:
        verdict = "" if target is None else f"  (target <= {target:g} s: {'met' if value <= target else 'MISSED'})"
        print(f"{label:<64} {value:7.3f} s{verdict}")
    print(f"{'database size':<64} {size / 1e6:7.0f} MB  (target <= 1000 MB: {'met' if size <= 1e9 else 'MISSED'})")
    if options.keep and not options.db:
        print(f"kept: {folder}")
    else:
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
