"""The oracle's mutation figure: simulated drivers (tests/oracle/drivers.py) through the real runner.

    python benchmarks/oracle_mutants.py [SUITE_PATH ...] [--max-cost N] [--markdown]

Prints, for every simulated bug, how many cases it fails, for every legitimate variant how many it is
(wrongly) failed on, and the two rates: bugs killed / bugs and legitimate variants falsely failed /
variants. Default suites: the bundled standard tier. Each driver runs on the cases of the operators its
knobs or its bug touch (tests/oracle/drivers.py, operators_affected), and only on cases of cost at most
N (tests/oracle/conftest.py, case_cost; default ORACLE_COST as in CI; 0 runs every case, which takes the
better part of an hour). Exit status 1 when a bug survives or a legitimate variant is failed. The tests
(tests/oracle/test_mutants.py) assert the same in CI.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dmlconform.case_result import Status  # noqa: E402
from dmlconform.runner import run_cases  # noqa: E402
from dmlconform.suite.loader import load_paths  # noqa: E402
from dmlconform.suite.tiers import DEFAULT  # noqa: E402
from tests.oracle.conftest import ORACLE_COST, oracle_share  # noqa: E402
from tests.oracle.drivers import (  # noqa: E402
    BUGGY,
    INSIDE_THE_BOUND,
    LEGITIMATE,
    UNCATCHABLE,
    Knobs,
    SimulatedDriver,
    operators_affected,
)


def failures(cases: list, knobs: Knobs) -> tuple[int, list]:
    scoped = [case for case in cases if case.op.name in operators_affected(knobs)]
    results = run_cases(scoped, SimulatedDriver(knobs)).results
    return len(scoped), [r for r in results if r.status not in (Status.PASS, Status.INVALID_OK)]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--max-cost", type=int, default=ORACLE_COST)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    loaded = load_paths(args.paths, None) if args.paths else load_paths([REPO / "test_vectors"], DEFAULT)
    cases = oracle_share(loaded, args.max_cost)
    clock = time.perf_counter()
    rows = []
    for kind, catalogue in (("bug", BUGGY), ("inside the bound", UNCATCHABLE), ("legitimate", LEGITIMATE)):
        for knobs in catalogue:
            ran, failed = failures(cases, knobs)
            rows.append((kind, knobs, ran, failed))
    seconds = time.perf_counter() - clock

    line = "| {} | {} | {} | {} | {} |" if args.markdown else "{:<16} {:<44} {:>6} {:>6}  {}"
    print(line.format("kind", "driver", "ran", "failed", "first failing case (or what it does)"))
    if args.markdown:
        print("|---|---|---|---|---|")
    for kind, knobs, ran, failed in rows:
        where = f"`{failed[0].id}`" if failed and args.markdown else (failed[0].id if failed else knobs.summary)
        print(line.format(kind, f"`{knobs.name}`" if args.markdown else knobs.name, ran, len(failed), where))

    bugs = [failed for kind, _, _, failed in rows if kind == "bug"]
    legit = [failed for kind, _, _, failed in rows if kind == "legitimate"]
    killed = sum(1 for failed in bugs if failed)
    false_alarms = sum(1 for failed in legit if failed)
    limit = f"cost <= {args.max_cost}" if args.max_cost else "every case"
    print()
    print(f"{len(cases)} of {len(loaded)} cases ({limit}), {len(rows)} simulated drivers, {seconds:.1f} s")
    print(f"bugs killed: {killed}/{len(bugs)} = {100 * killed / len(bugs):.0f} %")
    print(f"legitimate variants falsely failed: {false_alarms}/{len(legit)} = {100 * false_alarms / len(legit):.0f} %")
    print(f"not counted as bugs (no rule that passes the legitimate variants can catch them): "
          f"{', '.join(name for name, _, _ in INSIDE_THE_BOUND)}")
    return 0 if killed == len(bugs) and false_alarms == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
