"""The history as one self-contained page (inline CSS and SVG, no script, nothing fetched): per stack the pass rate
of each run and of each operator over its last runs, the flaky cases with their pass/fail strips, the cases failing
now with the range to bisect, and the cases whose closeness creeps towards their allowance, each with a small plot."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from html import escape

from dmlconform import __version__
from dmlconform.history.queries import Drift, FirstFailure, FlakyResult, HistoryReport, StackSeries
from dmlconform.report.history import NEVER_PASSED, closeness_text, rate_text, run_words, user_meta
from dmlconform.report.html import PAGE_CSS

#: One colour per operator line (the run's own pass rate is drawn black).
PALETTE = ("#0969da", "#bf3989", "#1a7f37", "#9a6700", "#8250df", "#cf222e", "#57606a")
ROWS_SHOWN = 200

_CSS = PAGE_CSS + """
h1 { font-size: 1.5rem; margin: 0 0 0.4rem; }
h3 { font-size: 1rem; margin: 1.2rem 0 0.4rem; }
.meta { display: grid; grid-template-columns: max-content 1fr; gap: 0.15rem 1rem; margin: 0.5rem 0; }
nav { margin: 0.7rem 0; display: flex; gap: 1rem; flex-wrap: wrap; } nav a { color: #0969da; text-decoration: none; }
th, td { border: 1px solid var(--line); padding: 0.25rem 0.55rem; text-align: left; vertical-align: middle; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.mono, .mono { font-family: "DejaVu Sans Mono", Consolas, Menlo, monospace; font-size: 12.5px; }
.legend { display: flex; flex-wrap: wrap; gap: 0.8rem; font-size: 0.85rem; margin: 0.2rem 0 0.6rem; }
.legend i { display: inline-block; width: 1.4rem; height: 3px; vertical-align: middle; margin-right: 0.3rem; }
.strip { display: inline-flex; gap: 1px; } .strip b { display: inline-block; width: 7px; height: 14px; }
.strip .P { background: var(--ok); } .strip .F { background: var(--bad); } .strip .n { background: #d8dee4; }
.strip .p { background: var(--ok); outline: 2px solid var(--warn); } .strip .cut { width: 5px; }
.strip .f { background: var(--bad); outline: 2px solid var(--warn); }
"""


def render_history_html(report: HistoryReport) -> str:
    stacks = [_stack_section(series, number) for number, series in enumerate(report.stacks)]
    links = [(f"stack-{number}", series.stack) for number, series in enumerate(report.stacks)]
    links += [("flaky", "flaky cases"), ("first-failures", "first failures"), ("drift", "closeness trends")]
    nav = "".join(f'<a href="#{anchor}">{escape(label)}</a>' for anchor, label in links)
    generated = datetime.now(UTC).isoformat(timespec="seconds")
    facts = [("database", report.database), ("runs", f"{report.runs} on {len(report.stacks)} stack(s); each stack's "
                                                       f"last {report.last} drawn"), ("generated", generated)]
    meta = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in facts)
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             "<title>dmlconform history</title>", f"<style>{_CSS}</style></head><body>",
             f'<header><h1>dmlconform history</h1><dl class="meta">{meta}</dl><nav>{nav}</nav></header>',
             '<section id="stacks"><h2>Pass rate over time</h2>'
             '<p class="dim">per run (black) and per operator; the last runs of each stack, oldest on the left</p>',
             *stacks, "</section>" if stacks else "<p>No runs.</p></section>",
             _flaky_section(report.flaky), _first_failure_section(report.first_failures),
             _drift_section(report.drift),
             f"<footer>dmlconform {escape(__version__)} · this page needs no network and no script</footer>",
             "</body></html>"]
    return "\n".join(parts)


# -- pass rate ------------------------------------------------------------------------------------------------------
def rate_chart(lines: Sequence[tuple[str, Sequence[float | None], str, float]], labels: Sequence[str],
               width: int = 760, height: int = 230) -> str:
    """Lines of rates in [0, 1] over runs; the y axis from just below the lowest rate to 100 %."""
    values = [v for _, series, _, _ in lines for v in series if v is not None]
    if not values:
        return '<p class="dim">no case judged in these runs</p>'
    low = min(0.9, int(min(values) * 20) / 20)
    left, right, top, bottom = 52, 12, 10, 28
    span_x, span_y = width - left - right, height - top - bottom
    count = max(len(series) for _, series, _, _ in lines)

    def x(index: int) -> float:
        return left + (span_x * index / (count - 1) if count > 1 else span_x / 2)

    def y(rate: float) -> float:
        return top + span_y * (1 - (rate - low) / (1 - low))

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
           f'aria-label="pass rate per run">']
    for step in range(5):
        rate = low + (1 - low) * step / 4
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{y(rate):.1f}" y2="{y(rate):.1f}" stroke="#d0d7de"/>')
        out.append(f'<text x="{left - 6}" y="{y(rate) + 4:.1f}" text-anchor="end" font-size="11">'
                   f"{100 * rate:.1f}%</text>")
    for index in sorted({0, count - 1, count // 2}):
        if index < len(labels):
            anchor = "start" if index == 0 else "end" if index == count - 1 else "middle"
            out.append(f'<text x="{x(index):.1f}" y="{height - 8}" text-anchor="{anchor}" font-size="11">'
                       f"{escape(labels[index])}</text>")
    for name, series, colour, thickness in lines:
        segment: list[str] = []
        for index, value in enumerate([*series, None]):
            if value is not None:
                segment.append(f"{x(index):.1f},{y(value):.1f}")
                continue
            if len(segment) > 1:
                out.append(f'<polyline points="{" ".join(segment)}" fill="none" stroke="{colour}" '
                           f'stroke-width="{thickness}"><title>{escape(name)}</title></polyline>')
            elif segment:
                px, py = segment[0].split(",")
                out.append(f'<circle cx="{px}" cy="{py}" r="3" fill="{colour}"><title>{escape(name)}</title></circle>')
            segment = []
    out.append("</svg>")
    return "".join(out)


def _stack_section(series: StackSeries, number: int) -> str:
    lines = [("run", tuple(run.pass_rate for run in series.runs), "#1f2328", 2.5)]
    lines += [(op, rates, PALETTE[index % len(PALETTE)], 1.3)
              for index, (op, rates) in enumerate(series.operators.items())]
    labels = [f"#{run.id} {run.started[:10]}" for run in series.runs]
    legend = "".join(f'<span><i style="background:{colour}"></i>{escape(name)}</span>'
                     for name, _, colour, _ in lines)
    rows = "".join(
        f'<tr><td class="mono">#{run.id}</td><td>{escape(run.started[:19].replace("T", " "))}</td>'
        f'<td class="mono">{escape(" ".join(f"{k}={v}" for k, v in user_meta(run).items()) or "-")}</td>'
        f'<td>{escape(run.meta.get("directml_version", "-"))}</td>'
        f'<td>{escape(run.meta.get("driver_version", "-"))}</td><td class="num">{run.cases}</td>'
        f'<td class="num">{run.failed}</td><td class="num">{rate_text(run.pass_rate)}</td></tr>'
        for run in reversed(series.runs))
    table = ('<details><summary>the runs, newest first</summary><table><tr><th>run</th><th>started</th><th>meta</th>'
             '<th>DirectML</th><th>driver</th><th>cases</th><th>failed</th><th>pass rate</th></tr>'
             f"{rows}</table></details>")
    return (f'<div id="stack-{number}"><h3>{escape(series.stack)}</h3><div class="legend">{legend}</div>'
            f"{rate_chart(lines, labels)}{table}</div>")


# -- flakes, first failures, drift ----------------------------------------------------------------------------------
def strip(history: str) -> str:
    """A run per square, oldest first; a gap where the inputs changed."""
    words = {"P": "passed", "F": "failed", "p": "passed (FLAKE)", "f": "failed (FLAKE)", "-": "not judged",
             ".": "not in this run"}
    return '<span class="strip">' + "".join(
        '<i class="cut" title="the inputs changed"></i>' if letter == "|" else
        f'<b class="{letter if letter in "PFpf" else "n"}" title="{words.get(letter, "not judged")}"></b>'
        for letter in history) + "</span>"


def _flaky_section(result: FlakyResult) -> str:
    head = (f'<section id="flaky"><h2>Flaky cases ({len(result.flakes)})</h2><p class="dim">status flips between runs '
            f"of one stack with the same inputs, over the last {result.last} runs of each of {result.stacks} stack(s); "
            "green passed, red failed, grey not judged or not in the run, outlined: the run's retries disagreed "
            "(FLAKE); a gap: the inputs changed there (a driver, DirectML or suite update)</p>")
    if not result.flakes:
        return head + "<p>None.</p></section>"
    rows = "".join(
        f'<tr><td class="mono">{escape(f.case.name)}</td><td>{escape(f.stack)}</td>'
        f'<td class="num">{f.flip_rate:.2f}</td><td class="num">{f.flips}/{f.pairs}</td>'
        f'<td class="num">{f.failures}/{f.runs}</td>'
        f"<td>{strip(f.history)}</td><td>{escape(run_words(f.last_failure))}</td></tr>"
        for f in result.flakes[:ROWS_SHOWN])
    return (head + "<table><tr><th>case</th><th>stack</th><th>flip rate</th><th>flips</th><th>failed/judged</th>"
            f"<th>runs, oldest first</th><th>last failure</th></tr>{rows}</table>{_more(len(result.flakes))}</section>")


def _first_failure_section(found: Sequence[FirstFailure]) -> str:
    failing = [f for f in found if f.failing]
    left = sum(1 for f in found if f.left is not None)
    head = (f'<section id="first-failures"><h2>First failures ({len(failing)} failing now)</h2><p class="dim">the last '
            "run that passed each case failing now and the first that failed it: the builds to bisect between; "
            "(suite changed): the two runs come from different suites, so the case may have changed too</p>")
    if left:
        head += (f'<p class="dim">{left} case(s) whose last verdict was a failure are no longer in their stack’s '
                 "suite (a newer suite of the same tier does not hold them): not failing now</p>")
    if not failing:
        return head + "<p>No case is failing now.</p></section>"
    rows = "".join(
        f'<tr><td class="mono">{escape(f.case.name)}</td><td>{escape(f.stack)}</td>'
        f'<td class="bad-text">{escape(f.status)}</td>'
        f'<td>{escape(run_words(f.last_pass) if f.last_pass else NEVER_PASSED)}</td>'
        f"<td>{escape(run_words(f.first_failure))}{' (suite changed)' if f.suite_changed else ''}</td>"
        f'<td class="num">{f.failing_runs}</td><td class="num">{f.flips}</td></tr>' for f in failing[:ROWS_SHOWN])
    return (head + "<table><tr><th>case</th><th>stack</th><th>now</th><th>last pass</th><th>first failure</th>"
            f"<th>failing runs</th><th>flips</th></tr>{rows}</table>{_more(len(failing))}</section>")


def sparkline(values: Sequence[float | None], width: int = 220, height: int = 44) -> str:
    """Closeness over runs, with the limit (1) dashed in red where the values come near it."""
    known = [v for v in values if v is not None]
    if not known:
        return ""
    top_value = max(1.0, max(known)) if max(known) > 0.5 else max(known) * 1.1 or 1.0
    count = len(values)

    def point(index: int, value: float) -> str:
        x = 3 + (width - 6) * (index / (count - 1) if count > 1 else 0.5)
        return f"{x:.1f},{height - 3 - (height - 6) * value / top_value:.1f}"

    points = " ".join(point(i, v) for i, v in enumerate(values) if v is not None)
    limit = ""
    if top_value >= 1.0:
        y = height - 3 - (height - 6) / top_value
        limit = f'<line x1="0" x2="{width}" y1="{y:.1f}" y2="{y:.1f}" stroke="#cf222e" stroke-dasharray="4 3"/>'
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
            f'aria-label="closeness over runs">{limit}<polyline points="{points}" fill="none" stroke="#9a6700" '
            'stroke-width="1.6"/></svg>')


def _drift_section(found: Sequence[Drift]) -> str:
    head = (f'<section id="drift"><h2>Closeness trends ({len(found)} rising)</h2><p class="dim">closeness is a case\'s '
            "largest error over what its rule allows (1: at the limit, dashed red); a least-squares line through its "
            "last runs rises</p>")
    if not found:
        return head + "<p>No case's closeness is rising.</p></section>"
    rows = "".join(
        f'<tr><td class="mono">{escape(d.case.name)}</td><td>{escape(d.stack)}</td>'
        f'<td class="num">{closeness_text(d.first)}</td><td class="num">{closeness_text(d.last)}</td>'
        f'<td class="num">{d.rise:+.3f}</td>'
        f'<td class="num">{"reached" if d.runs_to_limit is None else f"{d.runs_to_limit:.0f}"}</td>'
        f"<td>{sparkline(d.values)}</td></tr>" for d in found[:ROWS_SHOWN])
    return (head + "<table><tr><th>case</th><th>stack</th><th>first</th><th>last</th><th>rise</th><th>runs to 1</th>"
            f"<th>over the runs</th></tr>{rows}</table>{_more(len(found))}</section>")


def _more(count: int) -> str:
    return f'<p class="dim">… and {count - ROWS_SHOWN} more (`--json` of the query has them all)</p>' \
        if count > ROWS_SHOWN else ""
