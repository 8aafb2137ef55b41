"""Two real runs of a simulated driver update, for the triage tests: the old driver sums exactly; the new one
accumulates in the data type (legitimate, but its fp16 sums drift towards the bound) and has a ReLU bug on
exactly one case (a regression)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

from dmlconform.cli import main

SELECTION = "relu_grad.edge or resample_grad1.standard/grid-linear"
REGRESSED = "relu_grad.edge/signed-zero-x"
OLD_HARNESS = "python -m tests.triage.driver_harness --driver straight"
NEW_HARNESS = ("python -m tests.triage.driver_harness --driver accumulate-in-data-type --bug relu-ge "
               f"--bug-on {REGRESSED}$")


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@dataclass
class DriverUpdate:
    old: Path
    new: Path
    artifacts: Path

    def case(self, which: str, case_id: str) -> dict:
        document = json.loads((self.old if which == "old" else self.new).read_text())
        return next(c for c in document["cases"] if c["id"] == case_id)


def driver_update(folder: Path) -> DriverUpdate:
    old, new, artifacts = folder / "old.json", folder / "new.json", folder / "artifacts"
    first = invoke("run", "-k", SELECTION, "--backend", "native", "--harness", OLD_HARNESS, "--json", str(old))
    assert first.exit_code == 0, first.output
    second = invoke("run", "-k", SELECTION, "--backend", "native", "--harness", NEW_HARNESS, "--json", str(new),
                    "--artifacts", str(artifacts), "--html", str(folder / "run.html"))
    assert second.exit_code == 1, second.output
    return DriverUpdate(old, new, artifacts)
