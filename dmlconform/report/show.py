"""`dmlconform show` on a terminal: one case, its tensors, the rule, a ULP histogram and its worst elements."""

from __future__ import annotations

import math

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from dmlconform.case_result import CaseResult, Status
from dmlconform.report.console import path_lines
from dmlconform.report.diff import format_closeness
from dmlconform.report.histogram import histogram_bars
from dmlconform.run_result import RunResult, summary
from dmlconform.triage.dml import describe
from dmlconform.triage.inspection import ElementDetail, Inspection
from dmlconform.ulp_histogram import UlpBucket


def histogram_table(buckets: list[UlpBucket], title: str) -> Table:
    table = Table("ULP", "elements", "", title=title, title_justify="left", box=None, pad_edge=False)
    for bucket, length in histogram_bars(buckets):
        style = "red" if bucket.nonfinite else "green" if bucket.low == 0 else "yellow"
        table.add_row(bucket.short_label, str(bucket.count), Text("█" * length, style=style))
    return table


def render_inspection(inspection: Inspection, console: Console, recorded: CaseResult | None = None,
                      run: RunResult | None = None, source: str = "", notes: list[str] | None = None) -> None:
    case = inspection.case
    kind = ("negative case (expect: invalid)" if case.expect_invalid else
            f"candidates: {', '.join(case.candidates)}" if case.candidates else "single answer")
    console.print(Text(case.full_id, style="bold"), Text(f"({case.file})", style="dim"))
    console.print(f"{case.op.name} {case.dtype.name} rank {case.rank}, required from feature level "
                  f"{case.required_level}; {kind}" + (f"; behaviour {case.behaviour}" if case.behaviour else "") +
                  (f"; tags {', '.join(case.tags)}" if case.tags else ""), highlight=False)
    console.print(f"path: {case.path.value}" + (f" (output bound over {case.aliased_input})"
                                                 if case.aliased_input else ""), highlight=False)
    console.print("\n".join(describe(case)), markup=False, highlight=False)
    console.print(_tensor_table(inspection))
    if recorded is not None and run is not None:
        outcome = f" (outcome {recorded.outcome.value})" if recorded.outcome else ""
        console.print(f"[bold]recorded[/]: {recorded.status.value}{outcome} on {escape(run.backend.name)} "
                      f"({escape(run.backend.version)}, {escape(run.backend.device)}) judged at {run.target_level}; "
                      f"max ULP "
                      f"{recorded.max_ulp if recorded.max_ulp is not None else '-'}, closeness "
                      f"{format_closeness(recorded.closeness)}", highlight=False)
        console.print(f"  {recorded.message}", markup=False, highlight=False)
        for line in stray_write_lines(recorded):
            console.print(f"  {line}", markup=False, highlight=False)
        if recorded.known_issue is not None:
            issue = recorded.known_issue
            console.print(f"  DirectML {issue.release}'s known issue {issue.id}: {issue.title} ({issue.reference}); "
                          "docs/known-issues.md", markup=False, highlight=False)
    for note in notes or []:
        console.print(Text(f"note: {note}", style="yellow"))
    if source:
        console.print(f"[bold]actual outputs[/]: {escape(source)}", highlight=False)
    if inspection.status is not None:
        answer = f" against '{inspection.answer}'" if inspection.answer and inspection.answer != "expected" else ""
        console.print(f"[bold]now[/]: {inspection.status.value}{escape(answer)}: {escape(inspection.message)}"
                      + (f"; closeness {format_closeness(inspection.closeness)} (1 = at the limit)"
                         if inspection.closeness is not None else ""), highlight=False)
    if inspection.rule_lines:
        console.print("[bold]rule[/]:", "\n".join(inspection.rule_lines), markup=True, highlight=False)
    if inspection.histogram:
        total = sum(b.count for b in inspection.histogram)
        console.print(histogram_table(inspection.histogram, f"ULP distance of all {total} output elements "
                                      "(bars on a log scale)"))
    if inspection.status is not None and not inspection.elements and inspection.answer is not None:
        console.print(Text("every element is bit-identical to the answer", style="green"))
    if inspection.elements:
        console.print(_elements_table(inspection))
        for element in inspection.elements:
            _accumulation(element, console)
    for note in inspection.notes:
        console.print(Text(f"note: {note}", style="yellow"))


def stray_write_lines(result: CaseResult) -> list[str]:
    """Every write outside a tensor's elements the result recorded (contract §9), one a line."""
    if not result.stray_writes:
        return []
    return [f"wrote outside its tensors ({len(result.stray_writes)}):",
            *(f"  {write}" for write in result.stray_writes)]


def render_run(run: RunResult, console: Console, source: str, limit: int = 20) -> None:
    """`show RUN.json`: the run in a few lines — its backend, the level it was judged at, its statuses, the paths it
    ran with each path's counts and verdict, and the cases that did not come out right."""
    console.print(Text(source, style="bold"))
    console.print(f"{run.backend.name} {run.backend.version} on {run.backend.device}, judged at {run.target_level}, "
                  f"{len(run.results)} case(s), started {run.started:%Y-%m-%d %H:%M:%S %Z}", markup=False,
                  highlight=False)
    counts = summary(run.results)
    console.print("statuses: " + (", ".join(f"{count} {name}" for name, count in counts.items()) or "none"),
                  highlight=False)
    console.print(f"paths: {', '.join(run.paths)}", highlight=False)
    for line in path_lines(run):
        console.print(line, markup=False, highlight=False)
    bad = [r for r in run.results if not r.acceptable and r.status is not Status.NOT_RUN]
    if not bad:
        return
    table = Table("status", "path", "stray writes", title=f"not as required: {len(bad)} case(s)"
                  + (f", the first {limit}" if len(bad) > limit else ""), title_justify="left")
    table.add_column("case", overflow="fold")
    for result in bad[:limit]:
        table.add_row(result.status.value, result.path, str(len(result.stray_writes)) if result.stray_writes else "-",
                      Text(result.id))
    console.print(table)
    console.print(f"one case: dmlconform show {escape(source)} CASE_ID", highlight=False)


def _tensor_table(inspection: Inspection) -> Table:
    table = Table(title="tensors (min, max and mean over finite elements)", title_justify="left")
    for column in ("role", "tensor", "dtype", "shape"):
        table.add_column(column, no_wrap=True)
    for column in ("min", "max", "mean", "zeros", "NaN", "±inf", "subnormal"):
        table.add_column(column, justify="right")
    for t in inspection.tensors:
        role = t.role if t.role in ("input", "actual", "expected") else f"candidate {t.role}"
        table.add_row(role, t.name, t.dtype, str(list(t.shape)), t.minimum, t.maximum, t.mean, str(t.zeros),
                      str(t.nans), str(t.infinities), str(t.subnormals))
    return table


def _ratio(value: float) -> Text:
    text = "∞" if math.isinf(value) else f"{value:.3g}"
    return Text(text, style="bold red" if value > 1 else "yellow" if value > 0.5 else "")


def _elements_table(inspection: Inspection) -> Table:
    table = Table(title=f"worst elements: {len(inspection.elements)} of the {inspection.differing} whose bits differ, "
                  "by error over allowance", title_justify="left")
    for column in ("output[index]", "expected", "actual", "ULP", "|error|"):
        table.add_column(column, no_wrap=True)
    table.add_column("allowed")
    table.add_column("error/allowed", no_wrap=True)
    for e in inspection.elements:
        table.add_row(f"{e.output}{list(e.index)}", e.expected, e.actual, "-" if e.ulp is None else str(e.ulp),
                      "-" if e.abs_error is None else f"{e.abs_error:.6g}", e.allowed_text, _ratio(e.ratio))
    return table


def _accumulation(element: ElementDetail, console: Console) -> None:
    data = element.accumulated
    if data is None:
        return
    sources = f" from {data.terms_total} gradient element(s)" if data.terms is not None else ""
    console.print(f"  {element.output}{list(element.index)}: n = {data.count} term(s){sources}, M = Σ|t| = "
                  f"{data.abs_sum:.9g}, v = Σt = {data.value!r} (float64; the golden is v rounded once), "
                  f"f = {data.weight_factors}, D = Σ|dy| = {data.abs_gradient_sum:.9g}", highlight=False)
    for term in data.terms or []:
        console.print(f"      dY{list(term.source)} = {term.gradient!r} × weight {term.weight!r} = {term.value!r}",
                      highlight=False)
    if data.terms is not None and data.terms_total > len(data.terms):
        console.print(f"      ... and {data.terms_total - len(data.terms)} more", highlight=False)
