"""Real result documents, journals and baselines for the seed corpora: the bundled seed examples run on the
reference with two goldens broken (so that the documents hold failures, worst elements, histograms, artifacts),
recorded once per process through the command line, as a user's run records them."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import yaml

from dmlconform.backend_info import BackendInfo
from dmlconform.case_result import CaseResult, Status
from dmlconform.cli.common import bundled_suites
from dmlconform.feature_levels import FeatureLevel
from dmlconform.run_result import RunResult, SuiteInfo
from fuzz.contract import scratch

BROKEN = {"relu-grad-formula": [[0, 0, 3], [4, 0, 7]], "max-pooling-grad-2x2": [[[[0, 0, 0], [0, 3, 0], [0, 4, 6]]]]}


@dataclass(frozen=True)
class Recorded:
    result: Path
    journal: Path
    baseline: Path
    shards: tuple[Path, ...]


_recorded: Recorded | None = None


def recorded() -> Recorded:
    global _recorded
    if _recorded is None:
        folder = scratch() / "recorded"
        folder.mkdir(exist_ok=True)
        document = yaml.safe_load((bundled_suites() / "seed" / "seed_examples.yaml").read_text())
        document["suite"] = "seed.broken"
        for case in document["cases"]:
            if case["id"] in BROKEN:
                case["outputs"]["OutputGradientTensor"]["data"] = BROKEN[case["id"]]
        suite = folder / "broken.yaml"
        suite.write_text(yaml.safe_dump(document))
        result, baseline = folder / "run.json", folder / "next-baseline.csv"
        run(suite, "--json", result, "--failures", baseline, "--repeat", "2", "--artifacts", folder / "artifacts",
            "--feature-level", "5_0")
        shards = []
        for index in (1, 2):
            shards.append(folder / f"shard{index}.json")
            run(suite, "--json", shards[-1], "--shard", f"{index}/2")
        _recorded = Recorded(result, folder / "run.journal.jsonl", baseline, tuple(shards))
    return _recorded


def run(*args: object) -> None:
    """`dmlconform run ARGS` in a process of its own (its worker pool would fork this fuzzing process)."""
    process = subprocess.run([sys.executable, "-m", "dmlconform", "run", *map(str, args)], capture_output=True,
                             text=True, check=False)
    if process.returncode not in (0, 1):
        raise RuntimeError(f"recording a run failed: {process.stderr[-2000:]}")


def synthetic_run() -> RunResult:
    """A small run in memory (no process started): results of every status, for harnesses that apply what they
    parse to results (expectations) or compare it with a run (journals)."""
    info = BackendInfo("native", "1.0", "Contoso GPU", FeatureLevel.L6_4, "handshake", {"driver_version": "31.0"})
    results = [CaseResult(f"seed.broken/case-{status.value.lower()}", "ACTIVATION_RELU_GRAD", "FLOAT32", 2,
                          FeatureLevel.L3_0, status, index=number, message=status.value.lower(), attempts=(status,))
               for number, status in enumerate(Status)]
    results += [replace(results[0], id="seed.broken/relu-grad-formula", status=Status.FAIL, attempts=(Status.FAIL,)),
                replace(results[0], id="seed.broken/max-pooling-grad-2x2", status=Status.CRASH, required=False)]
    return RunResult(info, FeatureLevel.L6_4, datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC), 1.5, results,
                     suite=SuiteInfo("f" * 64, len(results), {"seed.broken": "0" * 64}),
                     settings={"expression": None, "repeat": 1, "retries": 1})
