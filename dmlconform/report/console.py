"""The console report: operators × feature levels, a verdict per level, behaviours, then the failures.

Every string that comes from a result (a backend's name, a case id, a message: a result document may hold
anything) is escaped or given as Text: rich would read `[/]` in it as markup, and raise."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from dmlconform.case_result import CaseResult, Status
from dmlconform.feature_levels import FeatureLevel
from dmlconform.run_result import RunResult, summary
from dmlconform.verdicts import (
    by_path,
    coverage_line,
    effective_status,
    fingerprint,
    introduced_levels,
    known_issue_cases,
    level_verdicts,
    target_verdict,
)

FAILURES_SHOWN = 25


def render(run: RunResult, console: Console, failures_shown: int = FAILURES_SHOWN) -> None:
    info = run.backend
    console.print(f"[bold]dmlconform[/] backend [bold]{escape(info.name)}[/] ({escape(info.version)}) on "
                  f"{escape(info.device)}")
    console.print(f"claimed feature level {info.feature_level}: {escape(info.feature_level_source)}")
    console.print(f"judged at feature level [bold]{run.target_level}[/]; {len(run.results)} cases "
                  f"in {run.duration_s:.2f} s")
    _run_lines(run, console)
    if not run.results:
        console.print("[yellow]no cases selected[/]")
        return
    levels = introduced_levels(run.results)
    console.print(_level_table(run.results, levels, run.target_level))
    _verdict_lines(run, levels, console)
    _path_lines(run, console)
    _fingerprint(run.results, console)
    _failures(run.results, console, failures_shown)
    _ci_overlay(run.results, console, failures_shown)
    _known_issues(run, console, failures_shown)
    _moved(run, console, failures_shown)
    counts = ", ".join(f"{count} {status}" for status, count in sorted(summary(run.results).items()))
    if run.interrupted:
        verdict, style = f"INTERRUPTED ({run.interrupted})", "bold red"
    else:
        verdict, style = ("PASSED", "bold green") if run.passed else ("FAILED", "bold red")
    console.print(Text(f"{verdict}: {counts}", style=style))


def _run_lines(run: RunResult, console: Console) -> None:
    if run.shard is not None and run.suite is not None:
        console.print(f"shard {run.shard} of a selection of {run.suite.cases} cases")
    if run.shards:
        console.print(f"merged from {len(run.shards)} shard(s): " + ", ".join(str(s.get("file")) for s in run.shards),
                      markup=False)
    if run.missing_shards:
        console.print(f"[bold red]missing shards: {', '.join(map(str, run.missing_shards))}[/] (their cases are "
                      "not in this result)")
    if run.resumed:
        console.print(f"resumed: {run.resumed} cases taken from the journal")
    for file in run.expectations:
        console.print(f"{file.kind}: {file.path} (sha256 {file.sha256[:12]}…)", markup=False, highlight=False)
    if run.known_issues is not None:
        console.print(f"known issues: {run.known_issues.note}", markup=False, highlight=False)


def _level_table(results: list[CaseResult], levels: list[FeatureLevel], target: FeatureLevel) -> Table:
    table = Table(title="matched/required cases, by the feature level that requires them", title_justify="left",
                  min_width=64)
    table.add_column("operator")
    for level in levels:
        table.add_column(level.label + ("" if level <= target else " *"), justify="right")
    table.add_column("all", justify="right")
    for op in sorted({r.op for r in results}):
        row: list[Text | str] = [Text(op)]
        mine = [r for r in results if r.op == op]
        for level in levels:
            row.append(_cell([r for r in mine if r.required_level == level]))
        row.append(_cell(mine))
        table.add_row(*row)
    if any(level > target for level in levels):
        table.caption = f"* above the judged level {target}: run, but not required"
    return table


def _cell(results: list[CaseResult]) -> Text:
    if not results:
        return Text("·", style="dim")
    matched = sum(1 for r in results if effective_status(r).matched)
    failing = len(results) - matched
    text = Text(f"{matched}/{len(results)}", style="green" if failing == 0 else "")
    if failing:
        text.append(f" ✗{failing}", style="bold red")
    return text


def _verdict_lines(run: RunResult, levels: list[FeatureLevel], console: Console) -> None:
    shown = set(levels) | {run.target_level}
    for verdict in level_verdicts(run.results, run.target_level):
        if verdict.level not in shown:
            continue
        answer = "[bold green]yes[/]" if verdict.conformant else "[bold red]no[/]"
        if verdict.only_known_issues:
            # DirectML's own bugs are not the device's: say both, and keep the contract's answer (not every case
            # matched).
            releases = ", ".join(sorted({r.known_issue.release for r in run.results if r.known_issue is not None}))
            answer = (f"[bold yellow]no, only DirectML {escape(releases)}'s {verdict.known_issues} known "
                      "issue(s)[/] — [bold green]the device: yes[/]")
        elif verdict.known_failures and verdict.known_failures == verdict.failing:
            # A baseline makes a run green, never a level conformant.
            answer = f"[bold yellow]no, only with {verdict.known_failures} known failure(s)[/]"
        elif verdict.waived and verdict.waived == verdict.failing:
            # A waiver is granted for a certification; the case still did not match.
            answer = f"[bold yellow]no, only with {verdict.waived} waived case(s)[/]"
        detail = f"{verdict.matched}/{verdict.required} required cases matched"
        if verdict.failing:
            detail += f", {verdict.failing} not"
        if verdict.known_failures:
            detail += f", {verdict.known_failures} of them EXPECTED_FAIL"
        if verdict.waived:
            detail += f", {verdict.waived} of them WAIVED"
        if verdict.known_issues:
            detail += f", {verdict.known_issues} of them DirectML's known issues"
        prefix = "" if verdict.claimed else "[dim](not claimed)[/] "
        console.print(f"{prefix}conformant at {verdict.level}: {answer} ({detail})")
        if verdict.level == run.target_level:
            console.print(coverage_line(verdict), markup=False, highlight=False)



def path_counts(results: list[CaseResult]) -> str:
    """One path's cases in a few words: `120 passed`, `118 passed, 2 failed`."""
    good = sum(1 for r in results if r.acceptable)
    return f"{good} passed" + (f", {len(results) - good} failed" if len(results) > good else "")


def path_lines(run: RunResult) -> list[str]:
    """Where more than one execution path ran (contract §9): each path's counts on one line, then each path's verdict
    at the judged level (plain text, for the console and the certification's statement)."""
    groups = by_path(run.results, run.paths)
    if len(groups) < 2:
        return []
    lines = ["paths: " + " · ".join(f"{name} {path_counts(group)}" for name, group in groups.items())]
    answers = []
    for name, group in groups.items():
        verdict = target_verdict(level_verdicts(group, run.target_level), run.target_level)
        if verdict is None or not verdict.required:
            answers.append(f"{name} - (no case required)")
            continue
        answer = "yes" if verdict.conformant else "no"
        if verdict.only_known_issues:
            answer = "no, only DirectML's known issues — the device: yes"
        not_matched = ""
        if verdict.failing:
            not_matched = f", {verdict.failing} not" + (f", {verdict.known_issues} of them DirectML's known issues"
                                                        if verdict.known_issues else "")
        answers.append(f"{name} {answer} ({verdict.matched}/{verdict.required}{not_matched})")
    lines.append(f"conformant at {run.target_level} per path: " + " · ".join(answers))
    return lines


def _path_lines(run: RunResult, console: Console) -> None:
    for line in path_lines(run):
        console.print(line, markup=False, highlight=False)


def _fingerprint(results: list[CaseResult], console: Console) -> None:
    verdicts = fingerprint(results)
    if not verdicts:
        return
    table = Table(title="behaviour fingerprint: the candidate each undocumented behaviour followed",
                  title_justify="left", min_width=60)
    table.add_column("behaviour")
    table.add_column("followed")
    for name in sorted(verdicts):
        table.add_row(Text(name), Text(str(verdicts[name])))
    console.print(table)


def _failures(results: list[CaseResult], console: Console, limit: int) -> None:
    bad = [r for r in results if not r.acceptable and r.status is not Status.NOT_RUN]
    not_run = sum(1 for r in results if r.status is Status.NOT_RUN)
    if not_run:
        console.print(f"[bold yellow]{not_run} case(s) not run[/] (status NOT_RUN; `--resume` runs them)")
    if not bad:
        return
    console.print(f"[bold red]{len(bad)} case(s) did not come out as expected[/]")
    for result in bad[:limit]:
        console.print(f"[bold red]{result.status.value}[/] {escape(result.id)} [dim]({escape(result.op)} "
                      f"{escape(result.dtype)} rank {result.rank}, required from {result.required_level}; "
                      f"{escape(result.file)})[/]")
        console.print(f"  {result.message}", markup=False, highlight=False)
        if result.worst:
            table = Table(show_edge=False, pad_edge=False, box=None)
            for column in ("index", "expected", "actual", "ULP", "allowed"):
                table.add_column(column)
            for element in result.worst:
                table.add_row(Text(str(list(element.index))), Text(element.expected), Text(element.actual),
                              "-" if element.ulp is None else str(element.ulp), Text(element.allowed))
            console.print(table)
    if len(bad) > limit:
        console.print(f"... and {len(bad) - limit} more; see the JSON result for all of them")


def _ci_overlay(results: list[CaseResult], console: Console, limit: int) -> None:
    """Flakes and known failures: listed, because they do not fail the run and must not go unseen."""
    for status, title in ((Status.FLAKE, "flaky (listed, does not fail the run)"),
                          (Status.EXPECTED_FAIL, "known failures from the baseline"),
                          (Status.WAIVED, "failures covered by a certification waiver"),
                          (Status.SKIPPED, "skipped by a skip list, or a layout or path the backend cannot express")):
        hits = [r for r in results if r.status is status and r.known_issue is None]
        if not hits:
            continue
        console.print(f"[bold yellow]{len(hits)} {status.value}[/]: {title}")
        for result in hits[:limit]:
            runs = ", ".join(s.value for s in result.attempts)
            waiver = result.waiver
            console.print(f"  {escape(result.id)}" + (f" [dim](runs: {runs})[/]" if status is Status.FLAKE else "")
                          + (f" [dim]({escape(result.expectation)})[/]" if result.expectation else "")
                          + (f" [dim]({result.outcome.value if result.outcome else '?'}; waiver {escape(waiver.id)}: "
                             f"{escape(waiver.reason)})[/]" if waiver else ""))
        if len(hits) > limit:
            console.print(f"  ... and {len(hits) - limit} more")


def _known_issues(run: RunResult, console: Console, limit: int) -> None:
    """The cases that hit the DirectML release's known issues: one summary line, then each issue with its cases;
    known issues that did not reproduce after it."""
    by_issue, passes = known_issue_cases(run.results)
    if by_issue:
        hits = [r for cases in by_issue.values() for r in cases]
        releases = ", ".join(sorted({r.known_issue.release for r in hits if r.known_issue}))
        listed = ", ".join(f"{issue_id} ×{len(cases)}" for issue_id, cases in by_issue.items())
        console.print(f"[bold yellow]{len(hits)} case(s) hit DirectML {escape(releases)}'s known issues, not this "
                      f"device's[/]: {escape(listed)}")
        for issue_id, cases in by_issue.items():
            issue = cases[0].known_issue
            assert issue is not None
            console.print(f"  {escape(issue_id)}: {escape(issue.title)} [dim]({escape(issue.reference)})[/]")
            for result in cases[:limit]:
                raw = result.outcome.value if result.outcome else "?"
                console.print(f"    {escape(result.id)} [dim]({raw})[/]")
            if len(cases) > limit:
                console.print(f"    ... and {len(cases) - limit} more")
    if passes:
        strict = any(r.known_issue is not None and r.known_issue.mode == "strict" for r in passes)
        effect = "fails the run (--known-issues strict)" if strict else \
            "listed; fails the run only with --known-issues strict"
        console.print(f"[bold yellow]{len(passes)} UNEXPECTED_PASS[/]: known issues that did not reproduce "
                      f"(the release may not have them here, or the case changed; {effect})")
        for result in passes[:limit]:
            assert result.known_issue is not None
            console.print(f"  {escape(result.id)} [dim]({escape(result.known_issue.id)})[/]")
        if len(passes) > limit:
            console.print(f"  ... and {len(passes) - limit} more")


def _moved(run: RunResult, console: Console, limit: int) -> None:
    moved = [r for r in run.results if r.moved_count]
    repeat = run.settings.get("repeat", 1)
    if repeat <= 1:
        return
    if not moved:
        console.print(f"[green]every output was bit-identical across {repeat} repeats[/]")
        return
    console.print(f"[bold yellow]{len(moved)} case(s) not bit-identical across {repeat} repeats[/]")
    for result in moved[:limit]:
        console.print(f"  {result.id}: {result.moved_count} element(s) moved", markup=False)
        for element in result.moved:
            console.print(f"    {element.output}{list(element.index)}: {' | '.join(element.values)}",
                          markup=False, highlight=False)

