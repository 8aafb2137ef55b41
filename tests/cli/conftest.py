"""Suites and helpers for the end-to-end command-line tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from dmlconform.cli import bundled_suites

SEED = bundled_suites() / "seed" / "seed_examples.yaml"
HARNESS = "python -m dmlconform.harness --backend numpy"
#: Two wrong goldens, so that a run on the reference fails exactly these two cases.
BROKEN = ("seed.broken/relu-grad-formula", "seed.broken/max-pooling-grad-2x2")


def write_broken_suite(path: Path) -> Path:
    """The seed examples as suite seed.broken, with the two goldens of BROKEN wrong."""
    document = yaml.safe_load(SEED.read_text())
    document["suite"] = "seed.broken"
    cases = {c["id"]: c for c in document["cases"]}
    cases["relu-grad-formula"]["outputs"]["OutputGradientTensor"]["data"] = [[0, 0, 3], [4, 0, 7]]
    cases["max-pooling-grad-2x2"]["outputs"]["OutputGradientTensor"]["data"] = [[[[0, 0, 0], [0, 3, 0], [0, 4, 6]]]]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document))
    return path


@pytest.fixture
def broken_suite(tmp_path: Path) -> Path:
    return write_broken_suite(tmp_path / "suites" / "broken.yaml")


def cases_without_timing(document: dict) -> list[dict]:
    return [{k: v for k, v in case.items() if k != "duration_s"} for case in document["cases"]]


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def start(args: list[str], **kwargs) -> subprocess.Popen:
    """`dmlconform ARGS` in a process of its own, as CI would run it."""
    env = {**os.environ, "CI": "true"}
    return subprocess.Popen([sys.executable, "-m", "dmlconform", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, **kwargs)


def wait_for_lines(path: Path, count: int, process: subprocess.Popen, limit_s: float = 60.0) -> int:
    """Wait until the journal holds `count` case lines; the number it holds."""
    give_up = time.monotonic() + limit_s
    while time.monotonic() < give_up:
        if path.exists():
            lines = [line for line in path.read_text().splitlines() if line.startswith('{"case"')]
            if len(lines) >= count:
                return len(lines)
        assert process.poll() is None, process.communicate()
        time.sleep(0.02)
    raise AssertionError(f"the journal did not reach {count} cases in {limit_s} s")
