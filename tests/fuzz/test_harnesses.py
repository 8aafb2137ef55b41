"""The fuzz harnesses, without a fuzzer: every input a campaign found that broke the contract (fuzz/regressions/,
kept once fixed) and a sample of each harness's seeds go through its `one_input`, which raises on a broken
contract. Seconds in all; `python -m fuzz.run --replay` replays every seed, `python -m fuzz.run` fuzzes."""

from __future__ import annotations

import importlib
import itertools
from pathlib import Path

import pytest

from fuzz.run import HARNESSES

REGRESSIONS = Path(__file__).resolve().parents[2] / "fuzz" / "regressions"
#: Harnesses whose seeds come from recorded runs (processes of their own, seconds each): regressions only here.
RECORDED_SEEDS = {"result_document", "journal", "expectations"}
SEEDS_PER_HARNESS = 25


def regressions() -> list[tuple[str, Path]]:
    return [(name, path) for name in HARNESSES for path in sorted((REGRESSIONS / name).glob("*"))]


@pytest.mark.parametrize("name,path", regressions(), ids=lambda v: v.name if isinstance(v, Path) else v)
def test_every_kept_crash_now_keeps_the_contract(name: str, path: Path) -> None:
    importlib.import_module(f"fuzz.fuzz_{name}").one_input(path.read_bytes())


@pytest.mark.parametrize("name", [n for n in HARNESSES if n not in RECORDED_SEEDS])
def test_seeds_keep_the_contract(name: str) -> None:
    harness = importlib.import_module(f"fuzz.fuzz_{name}")
    seeds = list(itertools.islice(harness.seeds(), 400))
    assert seeds
    for seed in seeds[:: max(len(seeds) // SEEDS_PER_HARNESS, 1)]:
        harness.one_input(seed)


def test_every_harness_has_regressions_folder_or_none_found_yet() -> None:
    """A folder under fuzz/regressions/ is named after a harness (a typo would silently replay nothing)."""
    folders = {p.name for p in REGRESSIONS.iterdir() if p.is_dir()} if REGRESSIONS.is_dir() else set()
    assert folders <= set(HARNESSES)
