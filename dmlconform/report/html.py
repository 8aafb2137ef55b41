"""The HTML report: one self-contained file (inline CSS and SVG, no script, nothing fetched) that a browser
shows offline: the verdict per feature level, operators × levels, the failing cases with their worst elements
and ULP histograms, the passing cases nearest their threshold, the behaviour fingerprint, and, given an older
run, what changed since it."""

from __future__ import annotations

import math
from html import escape

from dmlconform import __version__
from dmlconform.case_result import CaseResult, Status
from dmlconform.report.console import path_counts
from dmlconform.report.diff import SEVERITY, format_closeness, path_lines, summary_line
from dmlconform.report.histogram import histogram_bars
from dmlconform.results.diff import CaseDiff, Change, Drift, RunDiff
from dmlconform.run_result import RunResult, summary
from dmlconform.ulp_histogram import UlpBucket
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

#: Failing cases drawn in full; the rest are listed by id.
FAILURES_DRAWN = 200
NEAREST_SHOWN = 15
DRIFT_SHOWN = 100

#: The page frame both HTML reports share (the run report here, the history's in history_html.py): colours, type,
#: header, headings, tables, footer; each adds its own rules.
PAGE_CSS = """
:root { --ok: #1a7f37; --bad: #cf222e; --warn: #9a6700; --dim: #6e7781; --line: #d0d7de; --bg: #f6f8fa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 -apple-system, "Segoe UI", "DejaVu Sans", Helvetica, Arial, sans-serif; color: #1f2328;
       margin: 0; padding: 0 2rem 3rem; max-width: 1280px; }
header { padding: 1.2rem 0 0.6rem; border-bottom: 1px solid var(--line); }
h2 { font-size: 1.15rem; margin: 1.8rem 0 0.6rem; padding-bottom: 0.25rem; border-bottom: 1px solid var(--line); }
.meta dt { color: var(--dim); } .meta dd { margin: 0; }
table { border-collapse: collapse; margin: 0.3rem 0 0.8rem; }
th { background: var(--bg); font-weight: 600; }
.dim { color: var(--dim); } .bad-text { color: var(--bad); font-weight: 600; } .ok-text { color: var(--ok); }
footer { margin-top: 2.5rem; color: var(--dim); font-size: 0.8rem; }
"""

_CSS = PAGE_CSS + """
h1 { font-size: 1.5rem; margin: 0 0 0.4rem; display: flex; gap: 0.8rem; align-items: center; }
h3 { font-size: 1rem; margin: 1rem 0 0.4rem; }
code, .mono, td.mono { font-family: "DejaVu Sans Mono", Consolas, Menlo, monospace; font-size: 12.5px; }
td.mono { white-space: nowrap; }
.badge { display: inline-block; padding: 0.1rem 0.55rem; border-radius: 1rem; font-size: 0.8rem; font-weight: 600;
         color: #fff; background: var(--dim); white-space: nowrap; }
.badge.ok { background: var(--ok); } .badge.bad { background: var(--bad); } .badge.warn { background: var(--warn); }
.meta { display: grid; grid-template-columns: max-content 1fr max-content 1fr; gap: 0.15rem 1rem; margin: 0.5rem 0; }
nav { margin: 0.7rem 0; display: flex; gap: 1rem; flex-wrap: wrap; }
nav a { color: #0969da; text-decoration: none; }
.levels { display: flex; flex-wrap: wrap; gap: 0.5rem; }
.level { border: 1px solid var(--line); border-left: 5px solid var(--ok); border-radius: 6px; padding: 0.35rem 0.7rem;
         min-width: 9.5rem; background: #fff; }
.level.bad { border-left-color: var(--bad); } .level.known { border-left-color: var(--warn); }
.level.unclaimed { opacity: 0.6; }
.level b { font-size: 1.05rem; } .level small { color: var(--dim); display: block; }
th, td { border: 1px solid var(--line); padding: 0.25rem 0.55rem; text-align: left; vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.good { color: var(--ok); } td.bad { color: var(--bad); font-weight: 600; } td.none { color: var(--dim); }
.counts { display: flex; flex-wrap: wrap; gap: 0.4rem; margin: 0.4rem 0; }
details.case { border: 1px solid var(--line); border-radius: 6px; margin: 0.5rem 0; background: #fff; }
details.case > summary { padding: 0.45rem 0.7rem; cursor: pointer; background: var(--bg); border-radius: 6px; }
details.case[open] > summary { border-bottom: 1px solid var(--line); border-radius: 6px 6px 0 0; }
details.case .body { padding: 0.5rem 0.8rem; display: grid; grid-template-columns: minmax(0, 1fr) 440px; gap: 1rem; }
.message { white-space: pre-wrap; font-family: "DejaVu Sans Mono", Consolas, monospace; font-size: 12.5px;
           background: var(--bg); padding: 0.35rem 0.5rem; border-radius: 4px; margin: 0 0 0.5rem; }
.warn-text { color: var(--warn); font-weight: 600; }
figure { margin: 0; } figcaption { color: var(--dim); font-size: 0.8rem; }
"""


def render_html(run: RunResult, diff: RunDiff | None = None) -> str:
    verdict, style = _verdict(run)
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>dmlconform: {escape(run.backend.name)} — {escape(verdict)}</title>",
        f"<style>{_CSS}</style></head><body>",
        _header(run, verdict, style, diff is not None),
        _levels(run),
        _paths(run),
        _level_table(run),
    ]
    if diff is not None:
        parts.append(_diff_section(diff))
    parts += [_failures(run), _nearest(run), _fingerprint(run), _overlay(run),
              f"<footer>dmlconform {escape(__version__)} · result format dmlconform-result/v1 · "
              "this page needs no network and no script</footer>", "</body></html>"]
    return "\n".join(part for part in parts if part)


def _verdict(run: RunResult) -> tuple[str, str]:
    if run.interrupted:
        return f"INTERRUPTED ({run.interrupted})", "bad"
    return ("PASSED", "ok") if run.passed else ("FAILED", "bad")


def _header(run: RunResult, verdict: str, style: str, with_diff: bool) -> str:
    info = run.backend
    facts = [("backend", f"{info.name} ({info.version})"), ("device", info.device),
             ("claimed level", f"{info.feature_level} — {info.feature_level_source}"),
             ("judged at", run.target_level.label), ("cases", f"{len(run.results)} in {run.duration_s:.2f} s"),
             ("started", run.started.isoformat(timespec="seconds")), ("tool", run.tool_version)]
    # The driver stays in view; the rest of what the backend reports (its capabilities) folds away.
    facts += [(key, value) for key, value in sorted(info.extra.items()) if key.startswith("driver")]
    more = [(key, value) for key, value in sorted(info.extra.items()) if not key.startswith("driver")]
    if run.suite is not None:
        facts.append(("suite fingerprint", run.suite.fingerprint[:16] + "…"))
    if run.shard is not None:
        facts.append(("shard", str(run.shard)))
    for file in run.expectations:
        facts.append((file.kind, f"{file.path} (sha256 {file.sha256[:12]}…)"))
    meta = "".join(f"<dt>{escape(k)}</dt><dd>{escape(str(v))}</dd>" for k, v in facts)
    if more:
        rows = "".join(f"<dt>{escape(k)}</dt><dd>{escape(str(v))}</dd>" for k, v in more)
        meta += (f'<dt>backend reports</dt><dd><details><summary>{len(more)} more field(s)</summary>'
                 f'<dl class="meta">{rows}</dl></details></dd>')
    counts = "".join(f'<span class="badge {_status_style(Status(s))}">{count} {escape(s)}</span>'
                     for s, count in sorted(summary(run.results).items()))
    links = [("levels", "verdicts")]
    if len(by_path(run.results, run.paths)) > 1:
        links.append(("paths", "paths"))
    links.append(("table", "operators × levels"))
    if with_diff:
        links.append(("diff", "changes"))
    links += [("failures", "failing cases"), ("nearest", "nearest to threshold"), ("fingerprint", "fingerprint")]
    nav = "".join(f'<a href="#{anchor}">{label}</a>' for anchor, label in links)
    return (f'<header><h1>dmlconform report <span class="badge {style}">{escape(verdict)}</span></h1>'
            f'<dl class="meta">{meta}</dl><div class="counts">{counts}</div><nav>{nav}</nav></header>')


def _status_style(status: Status) -> str:
    if status.matched:
        return "ok"
    if status.acceptable:
        return "warn" if status in (Status.EXPECTED_FAIL, Status.FLAKE, Status.WAIVED) else ""
    return "bad"


def _levels(run: RunResult) -> str:
    shown = set(introduced_levels(run.results)) | {run.target_level}
    cards = []
    for verdict in level_verdicts(run.results, run.target_level):
        if verdict.level not in shown:
            continue
        known = verdict.failing and verdict.failing in (verdict.known_failures, verdict.waived, verdict.known_issues)
        kind = "" if verdict.conformant else "known" if known else "bad"
        answer = "conformant" if verdict.conformant else "not conformant"
        if kind == "known" and verdict.only_known_issues:
            answer += f", only DirectML's {verdict.known_issues} known issue(s): the device is"
        elif kind == "known":
            answer += (f", {verdict.known_failures} known failure(s)" if verdict.known_failures
                       else f", {verdict.waived} waived case(s)")
        claimed = "" if verdict.claimed else " unclaimed"
        note = "" if verdict.claimed else " · not claimed"
        cards.append(f'<div class="level {kind}{claimed}"><b>{escape(verdict.level.label)}</b> {escape(answer)}'
                     f"<small>{verdict.matched}/{verdict.required} required cases matched{note}</small></div>")
    target = target_verdict(level_verdicts(run.results, run.target_level), run.target_level)
    coverage = f"<p>{escape(coverage_line(target).strip())}</p>" if target is not None else ""
    return (f'<section id="levels"><h2>Verdict per feature level</h2><div class="levels">{"".join(cards)}</div>'
            f"{coverage}</section>")


def _paths(run: RunResult) -> str:
    """Where more than one execution path ran (contract §9): each path's counts and its verdict at the judged level."""
    groups = by_path(run.results, run.paths)
    if len(groups) < 2:
        return ""
    rows = []
    for name, group in groups.items():
        verdict = target_verdict(level_verdicts(group, run.target_level), run.target_level)
        if verdict is None or not verdict.required:
            css, answer, detail = "none", "—", "no case required"
        else:
            css = "good" if verdict.conformant else "bad"
            answer = "conformant" if verdict.conformant else "not conformant"
            detail = f"{verdict.matched}/{verdict.required} required cases matched" + (
                f", {verdict.failing} not" if verdict.failing else "")
        counts = "".join(f'<span class="badge {_status_style(Status(s))}">{count} {escape(s)}</span>'
                         for s, count in sorted(summary(group).items()))
        rows.append(f'<tr><td class="mono">{escape(name)}</td><td>{len(group)}</td><td>{escape(path_counts(group))}'
                    f'<div class="counts">{counts}</div></td><td class="{css}">{escape(answer)}</td>'
                    f"<td>{escape(detail)}</td></tr>")
    return (f'<section id="paths"><h2>Execution paths</h2><p class="dim">each path\'s cases on their own, judged at '
            f"{escape(run.target_level.label)}: a device may be conformant on one path and not on another</p>"
            "<table><tr><th>path</th><th>cases</th><th>came out</th><th>verdict at "
            f"{escape(run.target_level.label)}</th><th>detail</th></tr>{''.join(rows)}</table></section>")


def _level_table(run: RunResult) -> str:
    if not run.results:
        return '<section id="table"><h2>Operators × feature levels</h2><p>No cases selected.</p></section>'
    levels = introduced_levels(run.results)
    head = "".join(f'<th class="num">{escape(level.label)}{"" if level <= run.target_level else " *"}</th>'
                   for level in levels)
    rows = []
    for op in sorted({r.op for r in run.results}):
        mine = [r for r in run.results if r.op == op]
        cells = [_cell([r for r in mine if r.required_level == level]) for level in levels] + [_cell(mine)]
        rows.append(f"<tr><td>{escape(op)}</td>{''.join(cells)}</tr>")
    caption = ""
    if any(level > run.target_level for level in levels):
        caption = f'<p class="dim">* above the judged level {escape(run.target_level.label)}: run, but not required</p>'
    return (f'<section id="table"><h2>Operators × feature levels</h2><p class="dim">matched/required cases, by the '
            f'feature level that requires them</p><table><tr><th>operator</th>{head}<th class="num">all</th></tr>'
            f"{''.join(rows)}</table>{caption}</section>")


def _cell(results: list[CaseResult]) -> str:
    if not results:
        return '<td class="num none">·</td>'
    matched = sum(1 for r in results if effective_status(r).matched)
    failing = len(results) - matched
    if failing:
        return f'<td class="num bad">{matched}/{len(results)} ✗{failing}</td>'
    return f'<td class="num good">{matched}/{len(results)}</td>'


# -- failing cases --------------------------------------------------------------------------------------------
def histogram_svg(buckets: list[UlpBucket], width: int = 420) -> str:
    """Horizontal bars, one per bucket, on a log scale (one far element must stay visible beside thousands)."""
    bars = histogram_bars(buckets, 100)
    if not bars:
        return ""
    row, label_w, count_w = 18, 92, 70
    span = width - label_w - count_w
    height = row * len(bars) + 6
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
           f'aria-label="ULP histogram">']
    for i, (bucket, length) in enumerate(bars):
        y = 3 + i * row
        color = "#cf222e" if bucket.nonfinite else "#1a7f37" if bucket.low == 0 else "#d4a72c"
        out.append(f'<text x="{label_w - 6}" y="{y + 12}" text-anchor="end" font-size="11" '
                   f'font-family="DejaVu Sans Mono, monospace">{escape(bucket.short_label)}</text>')
        out.append(f'<rect x="{label_w}" y="{y + 2}" width="{max(1.0, span * length / 100):.1f}" height="{row - 5}" '
                   f'fill="{color}"/>')
        out.append(f'<text x="{label_w + span * length / 100 + 5:.1f}" y="{y + 12}" font-size="11">'
                   f"{bucket.count}</text>")
    out.append("</svg>")
    return "".join(out)


def _elements_table(result: CaseResult) -> str:
    if not result.worst:
        return ""
    rows = "".join(
        f'<tr><td class="mono">{escape(str(list(e.index)))}</td><td class="mono">{escape(e.expected)}</td>'
        f'<td class="mono">{escape(e.actual)}</td><td class="num">{"-" if e.ulp is None else e.ulp}</td>'
        f"<td>{escape(e.allowed)}</td></tr>" for e in result.worst)
    return ("<table><tr><th>index</th><th>expected</th><th>actual</th><th class=\"num\">ULP</th><th>allowed</th></tr>"
            f"{rows}</table>")


def _case_block(result: CaseResult, open_: bool) -> str:
    status = result.status.value + (f" ({result.outcome.value})" if result.outcome else "")
    closeness = f" · closeness {format_closeness(result.closeness)}" if result.closeness is not None else ""
    rule = f" · {result.tolerance}" if result.tolerance else ""
    head = (f'<summary><span class="badge {_status_style(result.status)}">{escape(status)}</span> '
            f'<b class="mono">{escape(result.id)}</b> <span class="dim">{escape(result.op)} {escape(result.dtype)} '
            f"rank {result.rank}, required from {escape(result.required_level.label)}{escape(rule)}"
            f"{escape(closeness)} · path {escape(result.path)}</span></summary>")
    histogram = ""
    if result.ulp_histogram:
        total = sum(b.count for b in result.ulp_histogram)
        histogram = (f"<figure>{histogram_svg(result.ulp_histogram)}<figcaption>ULP distance of all {total} output "
                     "elements from the answer (log scale)</figcaption></figure>")
    where = f'<p class="dim">{escape(result.file)}</p>' if result.file else ""
    return (f'<details class="case"{" open" if open_ else ""}>{head}<div class="body"><div>'
            f'<p class="message">{escape(result.message)}</p>{_stray_writes(result)}{_elements_table(result)}{where}'
            f"</div><div>{histogram}</div></div></details>")


def _stray_writes(result: CaseResult) -> str:
    """Every byte the case wrote outside its tensors (contract §9), as the result recorded them."""
    if not result.stray_writes:
        return ""
    items = "".join(f'<li class="mono">{escape(write)}</li>' for write in result.stray_writes)
    return (f'<p class="bad-text">wrote outside its tensors ({len(result.stray_writes)}): the bytes around its '
            f'elements came back changed</p><ul class="stray">{items}</ul>')


def _failures(run: RunResult) -> str:
    bad = [r for r in run.results if not r.acceptable and r.status is not Status.NOT_RUN]
    not_run = sum(1 for r in run.results if r.status is Status.NOT_RUN)
    parts = [f'<section id="failures"><h2>Failing cases ({len(bad)})</h2>']
    if not_run:
        parts.append(f'<p class="warn-text">{not_run} case(s) not run (NOT_RUN; <code>--resume</code> runs them)</p>')
    if not bad:
        parts.append('<p class="ok-text">Every case came out as expected.</p>')
    for number, result in enumerate(bad[:FAILURES_DRAWN]):
        parts.append(_case_block(result, number < 20))
    if len(bad) > FAILURES_DRAWN:
        rest = ", ".join(escape(r.id) for r in bad[FAILURES_DRAWN:])
        parts.append(f'<p class="dim">… and {len(bad) - FAILURES_DRAWN} more: <span class="mono">{rest}</span></p>')
    parts.append("</section>")
    return "".join(parts)


def _nearest(run: RunResult) -> str:
    passing = [r for r in run.results if effective_status(r) is Status.PASS and r.closeness]
    passing.sort(key=lambda r: -(r.closeness or 0.0))
    if not passing:
        return ('<section id="nearest"><h2>Passing cases nearest their threshold</h2><p class="dim">Every passing case '
                "is bit-exact (or the result predates closeness).</p></section>")
    rows = "".join(f'<tr><td class="mono">{escape(r.id)}</td><td>{escape(str(r.tolerance or "-"))}</td>'
                   f'<td class="num">{r.max_ulp if r.max_ulp is not None else "-"}</td>'
                   f'<td>{_closeness_svg(None, r.closeness)} {escape(format_closeness(r.closeness))}</td></tr>'
                   for r in passing[:NEAREST_SHOWN])
    return ('<section id="nearest"><h2>Passing cases nearest their threshold</h2><p class="dim">closeness: the largest '
            "error/allowance ratio over the elements; 0 is bit-exact, 1 is at the limit of the rule</p>"
            '<table><tr><th>case</th><th>rule</th><th class="num">max ULP</th><th>closeness</th></tr>'
            f"{rows}</table></section>")


def _closeness_svg(old: float | None, new: float | None, width: int = 160) -> str:
    """A bar for the new closeness, a tick for the old one, and the limit (1) as a line."""
    finite = [v for v in (old, new, 1.0) if v is not None and math.isfinite(v)]
    top = max(finite) * 1.1
    scale = (width - 4) / top

    def x(value: float) -> float:
        return 2 + (min(value, top) if math.isfinite(value) else top) * scale

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="14" role="img" aria-label="closeness">',
           f'<rect x="2" y="3" width="{width - 4}" height="8" fill="#eaeef2"/>']
    if new is not None:
        color = "#cf222e" if new > 1 else "#d4a72c" if new > 0.5 else "#1a7f37"
        out.append(f'<rect x="2" y="3" width="{max(1.0, x(new) - 2):.1f}" height="8" fill="{color}"/>')
    if old is not None:
        out.append(f'<rect x="{x(old) - 1:.1f}" y="0" width="2" height="14" fill="#57606a"/>')
    out.append(f'<rect x="{x(1.0) - 0.5:.1f}" y="0" width="1" height="14" fill="#cf222e"/></svg>')
    return "".join(out)


def _fingerprint(run: RunResult) -> str:
    verdicts = fingerprint(run.results)
    if not verdicts:
        return ""
    rows = "".join(f"<tr><td>{escape(name)}</td><td>{escape(verdicts[name])}</td></tr>" for name in sorted(verdicts))
    return ('<section id="fingerprint"><h2>Behaviour fingerprint</h2><p class="dim">the candidate each undocumented '
            "behaviour followed (docs/reference/operators.md)</p>"
            f"<table><tr><th>behaviour</th><th>followed</th></tr>{rows}</table>"
            "</section>")


def _overlay(run: RunResult) -> str:
    parts = []
    for status, title in ((Status.FLAKE, "flaky (does not fail the run)"),
                          (Status.EXPECTED_FAIL, "known failures from the baseline"),
                          (Status.WAIVED, "failures covered by a certification waiver"),
                          (Status.SKIPPED, "skipped by a skip list")):
        hits = [r for r in run.results if r.status is status and r.known_issue is None]
        if hits:
            items = "".join(f'<li><span class="mono">{escape(r.id)}</span> <span class="dim">'
                            f"{escape(_overlay_note(r))}</span></li>" for r in hits[:FAILURES_DRAWN])
            parts.append(f"<h3>{len(hits)} {status.value}: {escape(title)}</h3><ul>{items}</ul>")
    parts += _known_issues(run)
    return f'<section id="overlay"><h2>Expectations</h2>{"".join(parts)}</section>' if parts else ""


def _known_issues(run: RunResult) -> list[str]:
    """The cases that hit the DirectML release's known issues, by issue; and those that did not reproduce."""
    parts = []
    if run.known_issues is not None:
        parts.append(f'<p class="dim">known issues: {escape(run.known_issues.note)}</p>')
    by_issue, passes = known_issue_cases(run.results)
    if by_issue:
        items = []
        for issue_id, cases in by_issue.items():
            issue = cases[0].known_issue
            assert issue is not None
            listed = "".join(f'<li><span class="mono">{escape(r.id)}</span> <span class="dim">'
                             f"{escape(r.outcome.value if r.outcome else '?')}</span></li>"
                             for r in cases[:FAILURES_DRAWN])
            items.append(f'<li><span class="mono">{escape(issue_id)}</span> (DirectML {escape(issue.release)}): '
                         f'{escape(issue.title)} <span class="dim">{escape(issue.reference)}</span><ul>{listed}</ul>'
                         "</li>")
        hits = sum(len(cases) for cases in by_issue.values())
        parts.append(f"<h3>{hits} case(s) hit DirectML's known issues, not the device's</h3>"
                     f"<ul>{''.join(items)}</ul>")
    if passes:
        items = "".join(f'<li><span class="mono">{escape(r.id)}</span> <span class="dim">'
                        f"{escape(r.known_issue.id if r.known_issue else '')}</span></li>" for r in passes)
        parts.append(f"<h3>{len(passes)} UNEXPECTED_PASS: known issues that did not reproduce</h3><ul>{items}</ul>")
    return parts


def _overlay_note(result: CaseResult) -> str:
    if result.waiver is not None:
        return (f"{result.outcome.value if result.outcome else '?'}; waiver {result.waiver.id}: {result.waiver.reason} "
                f"(granted by {result.waiver.granted_by}, {result.waiver.date})")
    return result.expectation or result.message


# -- diff -----------------------------------------------------------------------------------------------------
def _diff_section(diff: RunDiff) -> str:
    style = "bad" if diff.regressed else "ok"
    verdict = "regressed" if diff.regressed else "no regressions"
    parts = [f'<section id="diff"><h2>Changes since the older run <span class="badge {style}">{verdict}</span></h2>',
             f'<p>old: <span class="mono">{escape(diff.old_name)}</span><br>new: <span class="mono">'
             f"{escape(diff.new_name)}</span></p><p>{escape(summary_line(diff))}</p>",
             *(f"<p>{escape(line)}</p>" for line in path_lines(diff))]
    if diff.run_changes:
        rows = "".join(f"<tr><td>{escape(c.name)}</td><td>{escape(c.old)}</td><td>{escape(c.new)}</td></tr>"
                       for c in diff.run_changes)
        parts.append(f"<table><tr><th>what differs</th><th>old</th><th>new</th></tr>{rows}</table>")
    moved_levels = [level for level in diff.levels if (level.old_conformant, level.old_matched) !=
                    (level.new_conformant, level.new_matched)]
    for level in moved_levels:
        was, now = ("yes" if level.old_conformant else "no"), ("yes" if level.new_conformant else "no")
        css = "bad-text" if level.old_conformant and not level.new_conformant else ""
        parts.append(f'<p class="{css}">conformant at {escape(level.level)}: {was} → {now} ({level.old_matched}/'
                     f"{level.old_required} → {level.new_matched}/{level.new_required})</p>")
    if diff.changes:
        parts.append("<h3>Status changes, worst first</h3>" + _changes_table(diff.changes))
    if diff.drift:
        parts.append(f"<h3>Numeric drift ({len(diff.drift)} cases, {len(diff.closer)} closer to their threshold)"
                     "</h3>" + _drift_table(diff.drift[:DRIFT_SHOWN]))
    parts.append("</section>")
    return "".join(parts)


def _changes_table(changes: list[CaseDiff]) -> str:
    rows = []
    for c in sorted(changes, key=lambda c: (SEVERITY.index(c.change), c.op, c.dtype, c.level, c.id)):
        css = "bad" if c.change.fails_diff else "good" if c.change is Change.FIX else ""
        status = f"{c.old_status or '—'} → {c.new_status or '—'}"
        if c.change is Change.BEHAVIOUR:
            status = f"{c.old_matched} → {c.new_matched}"
        rows.append(f'<tr><td class="{css}">{escape(c.change.value)}</td><td class="mono">{escape(c.id)}</td>'
                    f"<td>{escape(c.op)} {escape(c.dtype)} {escape(c.level)}</td><td>{escape(status)}</td>"
                    f"<td>{escape(c.message[:200])}</td></tr>")
    return ("<table><tr><th>change</th><th>case</th><th>operator, type, level</th><th>status</th><th>detail</th></tr>"
            f"{''.join(rows)}</table>")


def _drift_table(drift: list[Drift]) -> str:
    rows = []
    for d in drift:
        arrow = '<span class="warn-text">▲ closer</span>' if d.closer else '<span class="ok-text">▼</span>'
        ulps = f"{d.old.max_ulp} → {d.new.max_ulp}" if d.old.max_ulp != d.new.max_ulp else str(d.new.max_ulp)
        rows.append(f'<tr><td>{arrow}</td><td class="mono">{escape(d.id)}</td><td>{escape(d.new.rule or "-")}</td>'
                    f'<td class="num">{escape(ulps)}</td><td>{_closeness_svg(d.old.closeness, d.new.closeness)} '
                    f"{escape(format_closeness(d.old.closeness))} → {escape(format_closeness(d.new.closeness))}"
                    "</td></tr>")
    return ('<table><tr><th></th><th>case</th><th>rule</th><th class="num">max ULP</th><th>closeness (tick: old; '
            f"red line: the limit)</th></tr>{''.join(rows)}</table>")
