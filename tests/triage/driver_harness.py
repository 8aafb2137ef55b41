"""A simulated driver (tests/oracle/drivers.py) served over the harness protocol, so that a real
`dmlconform run --backend native --harness "python -m tests.triage.driver_harness ..."` runs it.

`--driver NAME` picks a legitimate variant or a bug; `--bug NAME --bug-on REGEX` runs that bug on the cases
whose id the regex finds and the driver everywhere else: a driver update that breaks one thing.
"""

from __future__ import annotations

import argparse
import re
import sys

from dmlconform.backends.base import BackendInfo, Outcome
from dmlconform.case import Case
from dmlconform.feature_levels import HIGHEST
from dmlconform.harness.server import HarnessServer
from tests.oracle.drivers import BUGGY, LEGITIMATE, SimulatedDriver

KNOBS = {knobs.name: knobs for knobs in (*LEGITIMATE, *BUGGY)}


class UpdatedDriver:
    """One driver, with a bug on the cases a pattern finds."""

    name = "simulated"

    def __init__(self, driver: str, bug: str | None, bug_on: re.Pattern[str] | None) -> None:
        self.driver, self.label = SimulatedDriver(KNOBS[driver]), driver + (f"+{bug}" if bug else "")
        self.bug = SimulatedDriver(KNOBS[bug]) if bug else None
        self.bug_on = bug_on

    def info(self) -> BackendInfo:
        return BackendInfo(self.name, f"simulated driver {self.label}", "simulated GPU", HIGHEST, "claims every level",
                           {"driver_version": self.label})

    def run(self, case: Case) -> Outcome:
        if self.bug is not None and self.bug_on is not None and self.bug_on.search(case.full_id):
            return self.bug.run(case)
        return self.driver.run(case)

    def close(self) -> None:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.triage.driver_harness")
    parser.add_argument("--driver", default="straight", choices=sorted(KNOBS))
    parser.add_argument("--bug", choices=sorted(KNOBS))
    parser.add_argument("--bug-on", type=re.compile)
    args = parser.parse_args()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # stdout carries frames only
    backend = UpdatedDriver(args.driver, args.bug, args.bug_on)
    return HarnessServer(backend, "simulated", stdin, stdout).serve()


if __name__ == "__main__":
    sys.exit(main())
