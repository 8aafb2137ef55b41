"""The history's answers for people and for programs: rich tables on a terminal, aligned plain text in CI (no box
characters or colour in a log), and one JSON document per question (`format: dmlconform-history/v1`, `query`
naming the question)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from dmlconform.history.ingest import DERIVED_KEYS, STACK_KEY, Added
from dmlconform.history.queries import (
    CaseInfo,
    Comparison,
    Drift,
    FirstFailure,
    FlakyResult,
    PathCounts,
    Pruned,
    RunInfo,
    Timeline,
)
from dmlconform.report.progress import wants_plain_lines

FORMAT = "dmlconform-history/v1"
#: Metadata that says which build a run tested, shown beside its id where a run has it.
VERSION_KEYS = ("directml_version", "driver_version")
_NOT_USER = {*DERIVED_KEYS, STACK_KEY}


# -- words --------------------------------------------------------------------------------------------------------
def closeness_text(value: float | None) -> str:
    if value is None:
        return "-"
    return "∞" if math.isinf(value) else f"{value:.3g}"


def rate_text(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def suite_text(run: RunInfo) -> str:
    """A run's suite fingerprint, short: where it changes, a case under one id may be another test."""
    return run.meta.get("suite_fingerprint", "-")[:8]


NEVER_PASSED = "none: failing since its first run here"


def user_meta(run: RunInfo) -> dict[str, str]:
    """What the CI job said about the run (--meta), beyond what the document said."""
    return {key: value for key, value in sorted(run.meta.items()) if key not in _NOT_USER}


def run_words(run: RunInfo | None) -> str:
    """A run as one cell: its id, when it started, the build the CI job named, and the versions under test."""
    if run is None:
        return "-"
    words = [f"#{run.id}", run.started[:16].replace("T", " ")]
    words += [f"{key}={value}" for key, value in user_meta(run).items()]
    words += [f"{key.split('_')[0]} {run.meta[key]}" for key in VERSION_KEYS if key in run.meta]
    return " ".join(words)


def show_table(console: Console, title: str, headers: Sequence[str], rows: Sequence[Sequence[str]],
               numeric: frozenset[int] = frozenset(), styles: Sequence[str] | None = None) -> None:
    """A rich table on a terminal, aligned plain text in CI or a pipe."""
    if not rows:
        return
    if not wants_plain_lines(console):
        table = Table(*headers, title=title, title_justify="left")
        for column in numeric:
            table.columns[column].justify = "right"
        for number, row in enumerate(rows):
            table.add_row(*(Text(cell) for cell in row), style=styles[number] if styles else "")
        console.print(table)
        return
    widths = [max(len(str(text[column])) for text in [headers, *rows]) for column in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(cell.rjust(width) if column in numeric else cell.ljust(width)
                         for column, (cell, width) in enumerate(zip(cells, widths, strict=True))).rstrip()

    for text in (title, line(headers), *(line(row) for row in rows)):
        console.print(text, markup=False, highlight=False, soft_wrap=True)


def say(console: Console, line: str) -> None:
    console.print(line, markup=False, highlight=False, soft_wrap=True)


# -- console --------------------------------------------------------------------------------------------------------
def render_added(added: Sequence[Added], console: Console, database: str) -> None:
    for entry in added:
        what = "added" if entry.new else "already held (nothing written)"
        say(console, f"{entry.source}: run #{entry.run_id} of {entry.stack}, {entry.cases} cases: {what}")
    new = sum(1 for entry in added if entry.new)
    say(console, f"{new} run(s) added, {len(added) - new} already held, in {database}")


def paths_text(paths: Mapping[str, PathCounts]) -> str:
    """A run's cases per execution path: `operator 120/2 · graph 118/4` (passed/failed)."""
    return " · ".join(f"{name} {counts.passed}/{counts.failed}" for name, counts in paths.items())


def render_runs(runs: Sequence[RunInfo], console: Console,
                paths: Mapping[int, Mapping[str, PathCounts]] | None = None) -> None:
    """The runs; where any ran on more than one execution path (contract §9), a column of each path's passed/failed."""
    paths = paths or {}
    several = any(len(paths.get(run.id, {})) > 1 or set(paths.get(run.id, {})) - {"operator"} for run in runs)
    rows = [[f"#{run.id}", run.started[:19].replace("T", " "), run.stack, str(run.cases), str(run.passed),
             str(run.failed), rate_text(run.pass_rate)] + ([paths_text(paths.get(run.id, {}))] if several else []) +
            [" ".join(f"{k}={v}" for k, v in user_meta(run).items()),
             " ".join(run.meta.get(key, "-") for key in VERSION_KEYS), run.source] for run in runs]
    headers = ["run", "started", "stack", "cases", "passed", "failed", "pass rate"] + (
        ["paths (passed/failed)"] if several else []) + ["meta", "directml driver", "source"]
    show_table(console, f"runs ({len(runs)}, oldest first)", headers, rows, frozenset({3, 4, 5, 6}))
    if not runs:
        say(console, "no runs")


def render_timeline(result: Timeline, console: Console) -> None:
    say(console, f"{result.case.name} ({result.case.op}, {result.case.dtype}) on the {result.case.path} path")
    if result.other_paths:
        say(console, f"  on other paths, cases of their own: {', '.join(result.other_paths)}")
    for stack in result.stacks:
        rows = [[run_words(row.run), suite_text(row.run),
                 (row.status if row.status == row.outcome else f"{row.status} ({row.outcome})")
                 + (f"; DirectML known issue {row.known_issue}" if row.known_issue else ""),
                 row.matched or "-", closeness_text(row.closeness), "-" if row.max_ulp is None else str(row.max_ulp)]
                for row in stack.rows]
        styles = ["green" if row.passed == 1 else "red" if row.passed == 0 else "dim" for row in stack.rows]
        show_table(console, stack.stack, ["run", "suite", "status", "matched", "closeness", "max ULP"], rows,
                   frozenset({4, 5}), styles)
        if stack.runs_without:
            say(console, f"  ({stack.runs_without} run(s) of this stack in that span did not hold the case)")
    if not result.stacks:
        say(console, "no run the filter admits holds this case")


def render_first_failures(found: Sequence[FirstFailure], console: Console, one_case: bool) -> None:
    failing = [f for f in found if f.failing]
    rows = [[f.case.name, f.stack, f.status, run_words(f.last_pass) if f.last_pass else NEVER_PASSED,
             run_words(f.first_failure), "changed" if f.suite_changed else "", str(f.runs_between),
             str(f.failing_runs), str(f.flips)] for f in failing]
    show_table(console, "failing now: the last run that passed and the first that failed (the range to bisect)",
               ["case", "stack", "status now", "last pass", "first failure", "suite", "between", "failing runs",
                "flips"], rows, frozenset({6, 7, 8}))
    left = [f for f in found if f.left is not None]
    if one_case:
        for f in found:
            if f.left is not None:
                verdict = "failed" if f.first_failure else "passed"
                say(console, f"{f.case.name} on {f.stack}: left the stack's suite in run {run_words(f.left)}; it "
                             f"{verdict} in its last run there {run_words(f.latest)}")
            elif not f.failing:
                say(console, f"{f.case.name} on {f.stack}: passing in its latest run {run_words(f.latest)} "
                             f"({f.flips} flip(s) over {f.judged} runs)")
    elif left:
        say(console, f"{len(left)} case(s) whose last verdict was a failure are no longer in their stack's suite (a "
                     "newer suite of the same tier does not hold them): not failing now; --json lists them")
    noisy = sum(1 for f in failing if f.flips > 1)
    changed = sum(1 for f in failing if f.suite_changed)
    say(console, f"{len(failing)} case(s) failing now on {len({f.stack for f in failing})} stack(s)"
                 + (f"; {noisy} of them flipped more than once (see `dmlconform history flaky`)" if noisy else "")
                 + (f"; for {changed} the suite changed between the last pass and the first failure (the case "
                    "may have changed too)" if changed else ""))


def render_flaky(result: FlakyResult, console: Console, limit: int) -> None:
    rows = [[f.case.name, f.stack, f"{f.flip_rate:.2f}", f"{f.flips}/{f.pairs}", f"{f.runs}/{f.window}",
             str(f.failures), str(f.flake_statuses), f.history[-40:], run_words(f.last_failure)]
            for f in result.flakes[:limit]]
    same = "".join(f", {key}" for key in result.same)
    show_table(console, f"flaky: status flips between runs of one stack with the same inputs{same} (last "
                        f"{result.last} runs of each stack)",
               ["case", "stack", "flip rate", "flips", "judged", "failed", "FLAKE", "history (old→new)",
                "last failure"], rows, frozenset({2, 3, 4, 5, 6}))
    if len(result.flakes) > limit:
        say(console, f"... and {len(result.flakes) - limit} more; --json has them all")
    say(console, f"{len(result.flakes)} flaky case(s) over {result.runs} run(s) of {result.stacks} stack(s); history: "
                 "P passed, F failed, - not judged, . not in the run, lower case: retries disagreed (FLAKE), | the "
                 "inputs changed (driver, DirectML, suite, settings)")


def render_drift(found: Sequence[Drift], console: Console, limit: int) -> None:
    rows = [[d.case.name, d.stack, str(d.runs), closeness_text(d.first), closeness_text(d.last),
             closeness_text(d.highest), f"{d.rise:+.3f}",
             "reached" if d.runs_to_limit is None else f"{d.runs_to_limit:.0f}"] for d in found[:limit]]
    show_table(console, "closeness rising (error over allowance; 1 is the limit of the case's rule)",
               ["case", "stack", "runs", "first", "last", "highest", "rise", "runs to 1"], rows,
               frozenset({2, 3, 4, 5, 6, 7}))
    if len(found) > limit:
        say(console, f"... and {len(found) - limit} more; --json has them all")
    say(console, f"{len(found)} case(s) drifting towards their allowance")


def render_compare(result: Comparison, console: Console, limit: int) -> None:
    rows = [[value.value, str(value.runs), str(len(value.stacks)), str(value.passed), str(value.failed),
             rate_text(value.pass_rate)] for value in result.values]
    show_table(console, f"by {result.key}", [result.key, "runs", "stacks", "passed", "failed", "pass rate"], rows,
               frozenset({1, 2, 3, 4, 5}))
    behaviours = sorted({b for value in result.values for b in value.fingerprint})
    differing = [b for b in behaviours if len({value.fingerprint.get(b) for value in result.values}) > 1]
    if differing:
        show_table(console, "behaviour fingerprint: the readings that differ between values",
                   ["behaviour", *(value.value for value in result.values)],
                   [[b, *(" | ".join(value.fingerprint.get(b, ("-",))) for value in result.values)] for b in differing])
    elif result.values:
        say(console, f"behaviour fingerprint: the same for every {result.key}")
    rows = [[change.case.name, change.stack, " → ".join(f"{value}: {outcome}" for value, outcome in
                                                        change.outcomes.items())
             + (" (suites differ)" if change.suites_differ else "")] for change in result.changes[:limit]]
    show_table(console, f"cases whose outcome differs between values of {result.key} on one stack (each value's latest "
                        "run there)", ["case", "stack", "outcomes"], rows)
    if len(result.changes) > limit:
        say(console, f"... and {len(result.changes) - limit} more; --json has them all")
    for stack in result.stacks:
        if stack.suites > 1 or stack.held_by_some or stack.held_by_one:
            say(console, f"{stack.stack}: the runs compared come from {stack.suites} suite(s); "
                         f"{stack.held_by_all} case(s) in every one of them, {stack.held_by_some} in some (compared "
                         f"between those), {stack.held_by_one} in one only (not compared)")
    say(console, f"{len(result.values)} value(s) of {result.key}; {len(result.changes)} case(s) differ"
                 + (f"; {result.runs_without} run(s) have no {result.key}" if result.runs_without else ""))


def render_pruned(result: Pruned, console: Console) -> None:
    rows = [[stack, str(kept), str(removed)] for stack, (kept, removed) in result.stacks.items()]
    show_table(console, "prune", ["stack", "kept", "removed"], rows, frozenset({1, 2}))
    verb = "would remove" if result.dry_run else "removed"
    say(console, f"{verb} {result.runs_removed} run(s) and {result.case_rows_removed} case row(s)")


# -- JSON -----------------------------------------------------------------------------------------------------------
def number(value: float | None) -> float | str | None:
    """As the result document writes closeness: "inf" for infinity, null for NaN."""
    if value is None or math.isnan(value):
        return None
    return "inf" if math.isinf(value) else value


def run_json(run: RunInfo | None) -> dict[str, Any] | None:
    if run is None:
        return None
    return {"id": run.id, "digest": run.digest, "stack": run.stack, "configuration": run.configuration,
            "started": run.started, "source": run.source, "cases": run.cases, "passed": run.passed,
            "failed": run.failed, "meta": run.meta}


def case_json(case: CaseInfo) -> dict[str, str]:
    return {"id": case.name, "op": case.op, "dtype": case.dtype, "path": case.path}


def document(query: str, database: str, **fields: Any) -> dict[str, Any]:
    return {"format": FORMAT, "query": query, "database": database, **fields}


def added_document(added: Sequence[Added], database: str) -> dict[str, Any]:
    return document("add", database, runs=[{"run": entry.run_id, "digest": entry.digest, "stack": entry.stack,
                                            "source": entry.source, "cases": entry.cases, "new": entry.new}
                                           for entry in added])


def runs_document(runs: Sequence[RunInfo], database: str,
                  paths: Mapping[int, Mapping[str, PathCounts]] | None = None) -> dict[str, Any]:
    paths = paths or {}
    return document("runs", database, runs=[
        {**run_json(run), "summary": run.summary, "fingerprint": run.fingerprint,
         "paths": {name: {"cases": c.cases, "passed": c.passed, "failed": c.failed}
                   for name, c in paths.get(run.id, {}).items()}} for run in runs])


def timeline_document(result: Timeline, database: str) -> dict[str, Any]:
    return document("timeline", database, case=case_json(result.case), other_paths=list(result.other_paths), stacks=[
        {"stack": stack.stack, "runs_without": stack.runs_without,
         "runs": [{"run": run_json(row.run), "status": row.status, "outcome": row.outcome, "passed": row.passed,
                   "matched": row.matched, "closeness": number(row.closeness), "max_ulp": row.max_ulp,
                   "known_issue": row.known_issue}
                  for row in stack.rows]} for stack in result.stacks])


def first_failure_document(found: Sequence[FirstFailure], database: str) -> dict[str, Any]:
    return document("first-failure", database, cases=[
        {"case": case_json(f.case), "stack": f.stack, "failing": f.failing, "status": f.status,
         "latest": run_json(f.latest), "last_pass": run_json(f.last_pass), "first_failure": run_json(f.first_failure),
         "failing_runs": f.failing_runs, "runs_between": f.runs_between, "flips": f.flips, "judged": f.judged,
         "suite_changed": f.suite_changed, "left": run_json(f.left)}
        for f in found])


def flaky_document(result: FlakyResult, database: str) -> dict[str, Any]:
    return document("flaky", database, last=result.last, same=list(result.same), stacks=result.stacks,
                    runs=result.runs, cases=[
        {"case": case_json(f.case), "stack": f.stack, "window": f.window, "judged": f.runs, "flips": f.flips,
         "pairs": f.pairs, "flip_rate": f.flip_rate, "passes": f.passes,
         "failures": f.failures, "flake_statuses": f.flake_statuses, "history": f.history,
         "first_run": run_json(f.first_run), "last_run": run_json(f.last_run), "last_failure": run_json(f.last_failure)}
        for f in result.flakes])


def drift_document(found: Sequence[Drift], database: str) -> dict[str, Any]:
    return document("drift", database, cases=[
        {"case": case_json(d.case), "stack": d.stack, "runs": d.runs, "first": d.first, "last": d.last,
         "highest": d.highest, "slope": d.slope, "rise": d.rise, "runs_to_limit": d.runs_to_limit,
         "values": [number(value) for value in d.values], "first_run": run_json(d.first_run),
         "last_run": run_json(d.last_run), "suite": d.suite} for d in found])


def compare_document(result: Comparison, database: str) -> dict[str, Any]:
    return document("compare", database, key=result.key, runs_without=result.runs_without, values=[
        {"value": value.value, "runs": value.runs, "stacks": list(value.stacks), "passed": value.passed,
         "failed": value.failed, "pass_rate": value.pass_rate,
         "fingerprint": {b: list(readings) for b, readings in value.fingerprint.items()}} for value in result.values],
        changes=[{"case": case_json(change.case), "stack": change.stack, "outcomes": change.outcomes,
                  "suites_differ": change.suites_differ} for change in result.changes],
        stacks=[{"stack": stack.stack, "runs": {value: run_json(run) for value, run in stack.runs.items()},
                 "held_by_all": stack.held_by_all, "held_by_some": stack.held_by_some,
                 "held_by_one": stack.held_by_one, "suites": stack.suites} for stack in result.stacks])


def pruned_document(result: Pruned, database: str) -> dict[str, Any]:
    return document("prune", database, dry_run=result.dry_run, runs_removed=result.runs_removed,
                    case_rows_removed=result.case_rows_removed,
                    stacks={stack: {"kept": kept, "removed": removed} for stack, (kept, removed) in
                            result.stacks.items()})
