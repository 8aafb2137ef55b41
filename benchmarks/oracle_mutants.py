"""The oracle's mutation figure: simulated drivers (tests/oracle/drivers.py) through the real runner.

    python benchmarks/oracle_mutants.py [SUITE_PATH ...] [--tier smoke|standard] [--max-cost N] [--markdown]
                                        [--path operator,graph,in-place|all]
    python benchmarks/oracle_mutants.py --catalogue      # the table of real bugs and their sources (runs nothing)

Prints, for every simulated bug, how many cases it fails, for every legitimate variant how many it is
(wrongly) failed on, and the two rates: bugs killed / bugs that must die on the tier, and legitimate variants
falsely failed / variants. Each bug names the tier that must kill it (`must_die_on`: smoke, the tier CI runs on
every commit, for a bug that breaks a rule the pages state outright; standard, the tier `certify` runs, for every
bug); on the smoke tier the bugs that must die only on the standard tier are reported but not counted. Real bugs
carry their source (an issue, a pull request, DECISIONS.md). Default suites: the bundled suites of `--tier`
(standard unless told). Each driver runs on the cases of the operators its knobs or its bug touch
(tests/oracle/drivers.py, in_scope: a buffer bug or variant only where the case has whole buffers), and only on
cases of cost at most N (tests/oracle/conftest.py, case_cost; default ORACLE_COST as in CI; 0 runs every case,
which takes the better part of an hour), each case on every path that applies to it (`--path`, default all:
operator, graph, in place; contract §9). Exit status 1 when a bug that must die on the tier survives or a
legitimate variant is failed. The tests (tests/oracle/test_mutants.py) assert the same in CI.
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
from dmlconform.suite.tiers import Tier  # noqa: E402
from dmlconform.surface.paths import ExecutionPath, parse_paths  # noqa: E402
from tests.oracle.conftest import ORACLE_COST, oracle_share  # noqa: E402
from tests.oracle.drivers import (  # noqa: E402
    BUFFER_BUGS,
    BUG_ENTRIES,
    BUGGY,
    BUGS,
    INSIDE_THE_BOUND,
    LEGITIMATE,
    UNCATCHABLE,
    Bug,
    Knobs,
    SimulatedDriver,
    in_scope,
)


def on_paths(cases: list, paths: tuple[ExecutionPath, ...]) -> list:
    """Each case on each of `paths` that applies to it."""
    return [derived for case in cases for path in paths if (derived := case.on_path(path)) is not None]


def failures(cases: list, knobs: Knobs) -> tuple[int, list]:
    scoped = [case for case in cases if in_scope(knobs, case)]
    results = run_cases(scoped, SimulatedDriver(knobs)).results
    return len(scoped), [r for r in results if r.status not in (Status.PASS, Status.INVALID_OK)]


def must_die(bug: Bug, tier: Tier) -> bool:
    """Whether a run of `tier` must kill the bug (a bug that must die on smoke must die on standard too)."""
    return Tier(bug.must_die_on).rank <= tier.rank


def source_link(bug: Bug) -> str:
    """The bug's source as a markdown link from docs/ (a repository path is made relative to docs/)."""
    if bug.source is None:
        return "—"
    if bug.source.startswith("https://github.com/"):
        owner, repo, kind, number = bug.source.removeprefix("https://github.com/").split("/")[:4]
        return f"[{owner}/{repo}#{number}]({bug.source})" if kind in ("issues", "pull") else f"<{bug.source}>"
    return f"[{Path(bug.source).name}](../{bug.source})"


def catalogue() -> str:
    lines = ["| driver | what the simulated driver does | seen in | source | must die on |", "|---|---|---|---|---|"]
    for bug in BUGS:
        if bug.source is not None:
            lines.append(f"| `{bug.name}` | {bug.summary} | {bug.seen_in} | {source_link(bug)} | {bug.must_die_on} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--tier", choices=("smoke", "standard"), default="standard",
                        help="the tier whose bundled suites run, and whose bugs must die (default: standard)")
    parser.add_argument("--max-cost", type=int, default=ORACLE_COST)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--path", type=parse_paths, default=tuple(ExecutionPath),
                        help="the paths each case runs on: operator, graph, in-place, a comma-separated list, or all "
                             "(default)")
    parser.add_argument("--catalogue", action="store_true", help="print the table of real bugs and exit")
    args = parser.parse_args(argv)
    if args.catalogue:
        print(catalogue())
        return 0
    tier = Tier(args.tier)
    loaded = load_paths(args.paths, None) if args.paths else load_paths([REPO / "test_vectors"], tier)
    share = oracle_share(loaded, args.max_cost)
    cases = on_paths(share, args.path)
    clock = time.perf_counter()
    rows = []
    for kind, catalogue_ in (("bug", BUGGY), ("inside the bound", UNCATCHABLE), ("legitimate", LEGITIMATE)):
        for knobs in catalogue_:
            ran, failed = failures(cases, knobs)
            rows.append((kind, knobs, ran, failed))
    seconds = time.perf_counter() - clock

    line = "| {} | {} | {} | {} | {} | {} | {} |" if args.markdown else "{:<16} {:<42} {:>8} {:>6} {:>6}  {:<44} {}"
    print(line.format("kind", "driver", "must die", "ran", "failed", "first failing case (or what it does)",
                      "source"))
    if args.markdown:
        print("|---|---|---|---|---|---|---|")
    for kind, knobs, ran, failed in rows:
        entry = BUG_ENTRIES.get(knobs.name) if kind == "bug" else None
        where = (f"`{failed[0].id}`" if args.markdown else failed[0].id) if failed else knobs.summary
        source = (source_link(entry) if args.markdown else entry.source or "") if entry and entry.source else ""
        name = f"`{knobs.name}`" if args.markdown else knobs.name
        print(line.format(kind, name, entry.must_die_on if entry else "", ran, len(failed), where, source))

    bugs = [(BUG_ENTRIES[knobs.name], failed) for kind, knobs, _, failed in rows if kind == "bug"]
    counted = [(bug, failed) for bug, failed in bugs if must_die(bug, tier)]
    survivors = [bug.name for bug, failed in counted if not failed]
    legit = [failed for kind, _, _, failed in rows if kind == "legitimate"]
    killed = len(counted) - len(survivors)
    false_alarms = sum(1 for failed in legit if failed)
    real = [(bug, failed) for bug, failed in counted if bug.source is not None]
    real_killed = sum(1 for _, failed in real if failed)
    buffer = [(bug, failed) for bug, failed in counted if bug.name in BUFFER_BUGS]
    buffer_killed = sum(1 for _, failed in buffer if failed)
    limit = f"cost <= {args.max_cost}" if args.max_cost else "every case"
    suites = "given suites" if args.paths else f"{tier.value} tier"
    print()
    counts = ", ".join(f"{sum(1 for case in cases if case.path is path)} {path.value}" for path in args.path)
    layouts = sum(1 for case in share if case.description.has_layouts)
    print(f"{suites}: {len(share)} of {len(loaded)} cases ({limit}; {layouts} with layouts), on the paths: {counts}; "
          f"{len(rows)} simulated drivers, {seconds:.1f} s")
    print(f"bugs that must die on the {tier.value} tier killed: {killed}/{len(counted)} = "
          f"{100 * killed / len(counted):.0f} % (real bugs among them: {real_killed}/{len(real)}; buffer bugs: "
          f"{buffer_killed}/{len(buffer)})")
    if tier is Tier.SMOKE:
        extra = [bug.name for bug, failed in bugs if not must_die(bug, tier) and failed]
        print(f"bugs that must die on the standard tier only, killed here as well: {len(extra)}/"
              f"{len(bugs) - len(counted)}")
    if survivors:
        print(f"surviving: {', '.join(survivors)}")
    print(f"legitimate variants falsely failed: {false_alarms}/{len(legit)} = {100 * false_alarms / len(legit):.0f} %")
    print(f"not counted as bugs (no rule that passes the legitimate variants can catch them): "
          f"{', '.join(name for name, _, _ in INSIDE_THE_BOUND)}")
    return 0 if not survivors and false_alarms == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
