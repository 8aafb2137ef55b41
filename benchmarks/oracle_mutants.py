"""The oracle's mutation figure: simulated drivers (tests/oracle/drivers.py) through the real runner.

    python benchmarks/oracle_mutants.py [SUITE_PATH ...] [--markdown]

Prints, for every simulated bug, how many cases it fails, for every legitimate variant how many it is
(wrongly) failed on, and the two rates: bugs killed / bugs and legitimate variants falsely failed /
variants. Point it at your own suite files to see whether they kill the same bugs. Exit status 1 when
a bug survives or a legitimate variant is failed. The tests (tests/oracle/test_mutants.py) assert the
same on the bundled suites in CI.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dmlconform.case_result import Status  # noqa: E402
from dmlconform.runner import run_cases  # noqa: E402
from dmlconform.suite.loader import load_paths  # noqa: E402
from tests.oracle.drivers import BUGGY, INSIDE_THE_BOUND, LEGITIMATE, UNCATCHABLE, Knobs, SimulatedDriver  # noqa: E402


def failures(cases: list, knobs: Knobs) -> list:
    results = run_cases(cases, SimulatedDriver(knobs)).results
    return [r for r in results if r.status not in (Status.PASS, Status.INVALID_OK)]


def main(argv: list[str]) -> int:
    markdown = "--markdown" in argv
    paths = [Path(a) for a in argv if a != "--markdown"] or [REPO / "test_vectors"]
    cases = load_paths(paths)
    clock = time.perf_counter()
    rows = []
    for knobs in BUGGY:
        failed = failures(cases, knobs)
        rows.append(("bug", knobs, failed))
    for knobs in UNCATCHABLE:
        rows.append(("inside the bound", knobs, failures(cases, knobs)))
    for knobs in LEGITIMATE:
        rows.append(("legitimate", knobs, failures(cases, knobs)))
    seconds = time.perf_counter() - clock

    line = "| {} | {} | {} | {} |" if markdown else "{:<16} {:<44} {:>6}  {}"
    print(line.format("kind", "driver", "failed", "first failing case (or what it does)"))
    if markdown:
        print("|---|---|---|---|")
    for kind, knobs, failed in rows:
        where = failed[0].id if failed else knobs.summary
        print(line.format(kind, knobs.name, len(failed), where))

    bugs = [failed for kind, _, failed in rows if kind == "bug"]
    legit = [failed for kind, _, failed in rows if kind == "legitimate"]
    killed = sum(1 for failed in bugs if failed)
    false_alarms = sum(1 for failed in legit if failed)
    print()
    print(f"{len(cases)} cases, {len(rows)} simulated drivers, {seconds:.1f} s")
    print(f"bugs killed: {killed}/{len(bugs)} = {100 * killed / len(bugs):.0f} %")
    print(f"legitimate variants falsely failed: {false_alarms}/{len(legit)} = {100 * false_alarms / len(legit):.0f} %")
    print(f"not counted as bugs (no rule that passes the legitimate variants can catch them): "
          f"{', '.join(name for name, _, _ in INSIDE_THE_BOUND)}")
    return 0 if killed == len(bugs) and false_alarms == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
