"""The console report: operators × feature levels, a verdict per level, behaviours, then the failures."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from dmlconform.case_result import CaseResult
from dmlconform.feature_levels import FeatureLevel
from dmlconform.run_result import RunResult, summary
from dmlconform.verdicts import effective_status, fingerprint, introduced_levels, level_verdicts

FAILURES_SHOWN = 25


def render(run: RunResult, console: Console, failures_shown: int = FAILURES_SHOWN) -> None:
    info = run.backend
    console.print(f"[bold]dmlconform[/] backend [bold]{info.name}[/] ({info.version}) on {info.device}")
    console.print(f"claimed feature level {info.feature_level}: {info.feature_level_source}")
    console.print(f"judged at feature level [bold]{run.target_level}[/]; {len(run.results)} cases "
                  f"in {run.duration_s:.2f} s")
    if not run.results:
        console.print("[yellow]no cases selected[/]")
        return
    levels = introduced_levels(run.results)
    console.print(_level_table(run.results, levels, run.target_level))
    _verdict_lines(run, levels, console)
    _fingerprint(run.results, console)
    _failures(run.results, console, failures_shown)
    counts = ", ".join(f"{count} {status}" for status, count in sorted(summary(run.results).items()))
    style = "bold green" if run.passed else "bold red"
    console.print(Text(f"{'PASSED' if run.passed else 'FAILED'}: {counts}", style=style))


def _level_table(results: list[CaseResult], levels: list[FeatureLevel], target: FeatureLevel) -> Table:
    table = Table(title="matched/required cases, by the feature level that requires them", title_justify="left",
                  min_width=64)
    table.add_column("operator")
    for level in levels:
        table.add_column(level.label + ("" if level <= target else " *"), justify="right")
    table.add_column("all", justify="right")
    for op in sorted({r.op for r in results}):
        row: list[Text | str] = [op]
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
        detail = f"{verdict.matched}/{verdict.required} required cases matched"
        if verdict.failing:
            detail += f", {verdict.failing} not"
        prefix = "" if verdict.claimed else "[dim](not claimed)[/] "
        console.print(f"{prefix}conformant at {verdict.level}: {answer} ({detail})")


def _fingerprint(results: list[CaseResult], console: Console) -> None:
    verdicts = fingerprint(results)
    if not verdicts:
        return
    table = Table(title="behaviour fingerprint: the candidate each undocumented behaviour followed",
                  title_justify="left", min_width=60)
    table.add_column("behaviour")
    table.add_column("followed")
    for name in sorted(verdicts):
        table.add_row(name, verdicts[name])
    console.print(table)


def _failures(results: list[CaseResult], console: Console, limit: int) -> None:
    bad = [r for r in results if not r.status.acceptable]
    if not bad:
        return
    console.print(f"[bold red]{len(bad)} case(s) did not match[/]")
    for result in bad[:limit]:
        console.print(f"[bold red]{result.status.value}[/] {result.id} [dim]({result.op} {result.dtype} "
                      f"rank {result.rank}, required from {result.required_level}; {result.file})[/]")
        console.print(f"  {result.message}", markup=False, highlight=False)
        if result.worst:
            table = Table(show_edge=False, pad_edge=False, box=None)
            for column in ("index", "expected", "actual", "ULP", "allowed"):
                table.add_column(column)
            for element in result.worst:
                table.add_row(str(list(element.index)), element.expected, element.actual,
                              "-" if element.ulp is None else str(element.ulp), element.allowed)
            console.print(table)
    if len(bad) > limit:
        console.print(f"... and {len(bad) - limit} more; see the JSON result for all of them")

