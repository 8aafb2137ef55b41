"""Render a RunDiff: a console report grouped by operator × data type × feature level, and a JSON document."""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from dmlconform.results.diff import SEVERITY, CaseDiff, Change, Drift, Numbers, RunDiff

FORMAT = "dmlconform-diff/v1"
_STYLE = {Change.REGRESSION: "bold red", Change.CHANGED_FAILURE: "bold red", Change.FLAKY: "yellow",
          Change.NOT_COMPARED: "yellow", Change.VANISHED: "yellow", Change.NEW: "cyan", Change.BEHAVIOUR: "cyan",
          Change.FIX: "green"}


def format_closeness(value: float | None) -> str:
    if value is None:
        return "?"
    if math.isinf(value):
        return "∞"
    return f"{value:.3g}"


def _moved(old: object, new: object) -> str:
    return f"{old}" if old == new else f"{old} → {new}"


def _ulp(numbers: Numbers | None) -> str:
    return "-" if numbers is None or numbers.max_ulp is None else str(numbers.max_ulp)


def _error(numbers: Numbers | None) -> str:
    return "-" if numbers is None or numbers.max_abs_error is None else f"{numbers.max_abs_error:.3g}"


_PLURALS = {Change.REGRESSION: "regressions", Change.CHANGED_FAILURE: "changed failures", Change.FIX: "fixes",
            Change.FLAKY: "flaky", Change.BEHAVIOUR: "behaviour changes", Change.NEW: "new",
            Change.VANISHED: "vanished", Change.NOT_COMPARED: "not compared"}


def _plural(change: Change, count: int) -> str:
    return _PLURALS[change] if count != 1 else ("behaviour change" if change is Change.BEHAVIOUR else change.value)


def summary_line(diff: RunDiff) -> str:
    counts = [f"{diff.count(change)} {_plural(change, diff.count(change))}" for change in SEVERITY
              if diff.count(change)]
    drift = (f"{len(diff.drift)} case(s) drifted, {len(diff.closer)} of them closer to their threshold"
             if diff.drift else "no numeric drift")
    return f"{', '.join(counts) or 'no status changes'}; {drift}; {diff.unchanged} unchanged"


def path_lines(diff: RunDiff) -> list[str]:
    """The execution paths (contract §9): where the runs asked for other paths, which each ran and what that makes of
    the cases of a path one run lacks; where more than one path ran, each path's changes on one line."""
    lines = []
    if diff.paths_differ:
        only_new = [p for p in diff.new_paths if p not in diff.old_paths]
        only_old = [p for p in diff.old_paths if p not in diff.new_paths]
        line = (f"paths differ: the old run ran {', '.join(diff.old_paths)}; the new run ran "
                f"{', '.join(diff.new_paths)}")
        if only_new:
            line += f"; cases on {', '.join(only_new)} are in the new run only (new, not compared)"
        if only_old:
            line += f"; cases on {', '.join(only_old)} are in the old run only (vanished, not compared)"
        lines.append(line)
    if diff.several_paths:
        parts = []
        for path, counts in diff.path_changes().items():
            words = [f"{count} {_word(name, count)}" for name, count in counts.items() if name != "closer"]
            if "closer" in counts:
                words[-1] += f" ({counts['closer']} closer)"
            parts.append(f"{path} {', '.join(words) or 'no changes'}")
        lines.append("per path: " + " · ".join(parts))
    return lines


def _word(name: str, count: int) -> str:
    return name if name == "drifted" else _plural(Change(name), count)


def render_diff(diff: RunDiff, console: Console, old_label: str, new_label: str, limit: int = 25) -> None:
    console.print(f"[bold]dmlconform diff[/]  old: {escape(old_label)}  new: {escape(new_label)}", highlight=False)
    console.print(f"  old run: {diff.old_name}", markup=False, highlight=False)
    console.print(f"  new run: {diff.new_name}", markup=False, highlight=False)
    if diff.run_changes:
        table = Table("what differs", "old", "new", title="the runs", title_justify="left")
        for change in diff.run_changes:
            table.add_row(Text(change.name), Text(change.old), Text(change.new))
        console.print(table)
    if diff.behaviours:
        table = Table("behaviour", "old", "new", title="behaviour fingerprint: the readings that differ",
                      title_justify="left")
        for change in diff.behaviours:
            table.add_row(change.name, change.old, change.new)
        console.print(table)
    for level in diff.levels:
        if (level.old_conformant, level.old_matched, level.old_required) == \
                (level.new_conformant, level.new_matched, level.new_required):
            continue
        was, now = ("yes" if level.old_conformant else "no"), ("yes" if level.new_conformant else "no")
        style = "red" if level.old_conformant and not level.new_conformant else "green" if now == "yes" else ""
        console.print(Text(f"conformant at {level.level}: {was} → {now} ({level.old_matched}/{level.old_required} "
                           f"→ {level.new_matched}/{level.new_required} required cases matched)", style=style))
    console.print(summary_line(diff), highlight=False)
    for line in path_lines(diff):
        console.print(line, markup=False, highlight=False)
    if diff.count(Change.NEW) or diff.count(Change.VANISHED):
        console.print("[dim]new: in the new run only; vanished: in the old run only (by case id, path included)[/]")
    if diff.drift:
        console.print("[dim]closeness: the largest error/allowance ratio over a case's elements (0 bit-exact, 1 at the "
                      "limit of its rule)[/]")
    shown = 0
    for group in diff.groups:
        if shown >= limit:
            console.print("... and more groups; see --json for everything")
            break
        parts = [f"{group.count(c)} {c.value}" for c in SEVERITY if group.count(c)]
        if group.drift:
            parts.append(f"{len(group.drift)} drifted ({sum(1 for d in group.drift if d.closer)} closer)")
        console.print(Text(f"\n{group.op} {group.dtype}, required from {group.level}: {', '.join(parts)}",
                           style="bold"))
        if group.changes:
            console.print(_changes_table(group.changes[:limit], diff.several_paths))
            shown += min(len(group.changes), limit)
        if group.drift:
            console.print(_drift_table(group.drift[:limit], diff.several_paths))
            shown += min(len(group.drift), limit)
    verdict = (Text(f"REGRESSED: {diff.count(Change.REGRESSION)} regression(s), "
                    f"{diff.count(Change.CHANGED_FAILURE)} changed failure(s)", style="bold red")
               if diff.regressed else Text("no regressions", style="bold green"))
    console.print(verdict)


def _changes_table(changes: list[CaseDiff], with_path: bool = False) -> Table:
    # The case id goes last, so that an id folded over two lines reads on when the lines are joined.
    table = Table("change", "status", "max ULP", "closeness", box=None, pad_edge=False)
    if with_path:
        table.add_column("path", no_wrap=True)
    table.add_column("detail", overflow="fold", max_width=60)
    table.add_column("case", overflow="fold")
    for c in changes:
        status = f"{c.old_status or '—'} → {c.new_status or '—'}"
        if c.change is Change.BEHAVIOUR:
            status = f"{c.new_status}: {c.old_matched} → {c.new_matched}"
        closeness = _moved(format_closeness(c.old.closeness if c.old else None),
                           format_closeness(c.new.closeness if c.new else None))
        detail = c.message if c.required else f"(not required) {c.message}"
        cells: list[Text | str] = [Text(c.change.value, style=_STYLE[c.change]), Text(status),
                                   _moved(_ulp(c.old), _ulp(c.new)), closeness]
        if with_path:
            cells.append(Text(c.path))
        table.add_row(*cells, Text(detail[:160]), Text(c.id))
    return table


def _drift_table(drift: list[Drift], with_path: bool = False) -> Table:
    table = Table("", box=None, pad_edge=False)
    for column in ("status", "rule", "max ULP", "max |error|", "closeness") + (("path",) if with_path else ()):
        table.add_column(column, no_wrap=True)
    table.add_column("case", overflow="fold")
    for d in drift:
        arrow = Text("▲ closer", style="yellow") if d.closer else Text("▼", style="green")
        cells: list[Text | str] = [
            arrow, Text(str(d.status)), Text(d.new.rule or "-"), _moved(_ulp(d.old), _ulp(d.new)),
            _moved(_error(d.old), _error(d.new)),
            f"{format_closeness(d.old.closeness)} → {format_closeness(d.new.closeness)}"]
        if with_path:
            cells.append(Text(d.path))
        table.add_row(*cells, Text(d.id))
    return table


# -- JSON ------------------------------------------------------------------------------------------------------
def _plain(value: Any) -> Any:
    """JSON-ready: enums by value; infinity as "inf" (as in the result document), NaN as null."""
    if isinstance(value, Change):
        return value.value
    if isinstance(value, float) and not math.isfinite(value):
        return "inf" if value == math.inf else None
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def diff_document(diff: RunDiff, old_label: str, new_label: str) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "old": {"file": old_label, "run": diff.old_name},
        "new": {"file": new_label, "run": diff.new_name},
        "regressed": diff.regressed,
        "summary": {**{change.value: diff.count(change) for change in SEVERITY}, "drifted": len(diff.drift),
                    "closer": len(diff.closer), "unchanged": diff.unchanged, "compared": diff.compared},
        "paths": {"old": list(diff.old_paths), "new": list(diff.new_paths)},
        "path_changes": diff.path_changes(),
        "run_changes": [asdict(c) for c in diff.run_changes],
        "behaviour_changes": [asdict(c) for c in diff.behaviours],
        "feature_levels": [asdict(level) for level in diff.levels],
        "groups": [{"op": g.op, "dtype": g.dtype, "level": g.level,
                    **{change.value: g.count(change) for change in SEVERITY if g.count(change)},
                    "drifted": len(g.drift), "closer": sum(1 for d in g.drift if d.closer)} for g in diff.groups],
        "changes": [_plain(asdict(c)) for c in diff.changes],
        "drift": [{**_plain(asdict(d)), "closer": d.closer} for d in diff.drift],
    }
