"""The figures the docs state about the suites, the tiers, the statuses and the oracle, from one source.

`docs/figures.json` holds every figure; a doc states one as `<!-- fig:KEY -->VALUE` (the comment is invisible in the
rendered page), and tests/docs/test_figures.py checks that VALUE is figures.json's, that figures.json is what the
bundled suites give now (suite_figures, fast: the test command) and what a run gives now (run_figures and oracle_figures: the
reference's statuses on the standard tier, crosscheck's agreement, the oracle's share: .ci/run's last step), and that every case id a doc cites is a
case of the smoke, standard or full tier. After a change to the suites:

    python -m tests.docs.figures --write      # rewrite docs/figures.json (the suites' figures; --run: all)

then correct every doc the test names.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ROOT / "docs" / "figures.json"
VECTORS = ROOT / "test_vectors"
GENERATED = ("smoke", "standard")  # the generated tiers' folders under test_vectors/
MARKER = re.compile(r"<!--\s*fig:([\w.-]+)\s*-->\s*([0-9][0-9,]*)")
CASE_ID = re.compile(r"\b(?:relu_grad|clip_grad1|slice_grad|max_pooling_grad|resample_grad1|seed)\.[a-z0-9_]+/"
                     r"[][A-Za-z0-9_.+*-]*[A-Za-z0-9_*\]+]")

#: Case ids the docs cite that are not cases of the bundled suites on purpose: id -> why.
ILLUSTRATIVE_IDS = {
    "seed.broken/max-pooling-grad-2x2": "a deliberately broken package in verify's example output",
    "slice_grad.core/seed-example": "the frame protocol's example request",
    "clip_grad1.layouts/padded": "the example of a request with buffers (docs/native-harness.md section 10)",
}


@functools.cache
def _cases(tier: str) -> list:
    from dmlconform.suite.loader import load_paths
    from dmlconform.suite.tiers import Tier

    return load_paths([VECTORS], Tier(tier))


@functools.cache
def _full_plan_ids() -> tuple[str, ...]:
    from dmlconform.generation.build import load_descriptions, plans
    from dmlconform.suite.tiers import Tier

    return tuple(f"{description.suite}.full/{plan.id}" for description in load_descriptions()
                 for family in description.families for plan in plans(family, Tier.FULL))


def suite_figures() -> dict[str, int]:
    """What the bundled suites give now: a second or two."""
    figures: dict[str, int] = {}
    for tier in GENERATED:
        cases = _cases(tier)
        figures[f"{tier}.cases"] = len(cases)
        figures[f"{tier}.invalid"] = sum(1 for case in cases if case.expect_invalid)
        figures[f"{tier}.valid"] = sum(1 for case in cases if not case.expect_invalid)
    relative = [Path(case.file).resolve().relative_to(VECTORS.resolve()) for case in cases]
    hand = [case for case, path in zip(cases, relative, strict=True) if path.parts[0] not in GENERATED]
    figures["handwritten.cases"] = len(hand)
    figures["handwritten.invalid"] = sum(1 for case in hand if case.expect_invalid)
    figures["generated.standard.invalid"] = figures["standard.invalid"] - figures["handwritten.invalid"]
    figures["full.cases"] = figures["standard.cases"] + len(_full_plan_ids())
    return figures


def case_ids() -> set[str]:
    """Every case id of the smoke, standard and full tiers (the full tier's from its generators' plans)."""
    return {case.full_id for case in _cases("standard")} | set(_full_plan_ids())


def run_figures(dmlconform: str = "dmlconform", folder: Path | None = None,
                reference: Path | None = None) -> dict[str, int]:
    """What runs give now (seconds to tens of seconds): the reference's statuses on the standard tier (`reference`, a
    `dmlconform run --json` result of it, else run now) and crosscheck's."""
    with tempfile.TemporaryDirectory() as scratch:
        where = Path(folder or scratch)
        if reference is None:
            reference = where / "reference.json"
            subprocess.run([dmlconform, "run", "--json", str(reference)], check=True, stdout=subprocess.DEVNULL,
                           cwd=where)
        subprocess.run([dmlconform, "crosscheck", "--json", str(where / "crosscheck.json")], check=False,
                       stdout=subprocess.DEVNULL, cwd=where)
        result = json.loads(reference.read_text())
        crosscheck = json.loads((where / "crosscheck.json").read_text())
    figures = {f"standard.reference.{status}": count
               for status, count in Counter(case["status"] for case in result["cases"]).items()}
    figures.update(crosscheck_figures(crosscheck))
    return figures


def oracle_figures() -> dict[str, int]:
    """The simulated drivers' share of each tier in CI: cases of cost up to ORACLE_COST (a few seconds: the cost
    counts the reference's summed terms)."""
    from tests.oracle.conftest import ORACLE_COST, case_cost

    return {f"oracle.{tier}.share": sum(1 for case in _cases(tier) if case_cost(case) <= ORACLE_COST)
            for tier in GENERATED}


def crosscheck_figures(document: dict) -> dict[str, int]:
    """Cases crosscheck ran, how many all agree, and the cases where the backends follow different candidates, in
    all and per behaviour."""
    figures = {"standard.crosscheck.cases": len(document["cases"]),
               "standard.crosscheck.agree": document["summary"]["all agree"]}
    # A backend that could not express a case (torch's avg_pool and asymmetric padding: NOT_SUPPORTED) follows no
    # candidate: it is counted apart, not as a split.
    splits = Counter(case["behaviour"] for case in document["cases"]
                     if len({backend["matched"] for backend in case["backends"].values() if backend["matched"]}) > 1)
    figures["standard.crosscheck.splits"] = sum(splits.values())
    figures["standard.crosscheck.not-expressed"] = sum(
        1 for case in document["cases"] if any(not backend["ran"] for backend in case["backends"].values()))
    figures.update({f"standard.crosscheck.splits.{behaviour}": count for behaviour, count in splits.items()})
    return figures


def markers() -> list[tuple[str, int, str, str]]:
    """(doc, line, key, value as written) of every marked figure of README.md and docs/*.md."""
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        for match in MARKER.finditer(text):
            found.append((path.relative_to(ROOT).as_posix(), text.count("\n", 0, match.start()) + 1, match[1],
                          match[2]))
    return found


def cited_ids() -> list[tuple[str, int, str]]:
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            found.extend((path.relative_to(ROOT).as_posix(), number, match[0]) for match in CASE_ID.finditer(line))
    return found


def load() -> dict[str, int]:
    return json.loads(FIGURES.read_text())


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.docs.figures", description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="rewrite docs/figures.json")
    parser.add_argument("--run", action="store_true", help="also the figures of runs (dmlconform on PATH)")
    options = parser.parse_args()
    figures = load() if FIGURES.exists() else {}
    figures.update(suite_figures())
    if options.run:
        figures.update(run_figures())
        figures.update(oracle_figures())
    text = json.dumps(dict(sorted(figures.items())), indent=1) + "\n"
    if options.write:
        FIGURES.write_text(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
