"""Render a DirectML version matrix (results/matrix.py): a table per release, on a terminal with rich and as plain
text elsewhere (a log, a pipe), and as markdown for the docs; then the cases that differ from the reference."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from dmlconform.results.matrix import COUNTED, SHOWN_CASES, Matrix, MatrixRow, RowState

HEADERS = ("onnxruntime-directml", "DirectML.dll", "sha256", "feature level",
           *(status.value for status in COUNTED), "other", "status ≠ ref", "outputs ≠ ref", "run s", "note")
#: Columns of numbers (right-aligned in plain text and markdown).
_NUMERIC = frozenset(range(4, 13))
SHORT_SHA = 12


def cells(row: MatrixRow, reference: str | None) -> list[str]:
    """One row of the table as text: counts "-" where the release did not run; differences "ref" on the
    reference's row and "-" where nothing was compared."""
    counts = row.counts() if row.run is not None else None
    numbers = [str(value) for value in counts.values()] if counts else ["-"] * (len(COUNTED) + 1)
    comparison = row.comparison
    if row.run is not None and row.package_version == reference:
        differences = ["ref", "ref"]
    elif comparison is None:
        differences = ["-", "-"]
    else:
        differences = [str(len(comparison.status_changed)), str(len(comparison.output_changed))]
    seconds = f"{row.run.duration_s:.0f}" if row.run is not None and row.state is RowState.RAN else "-"
    return [row.package_version, row.directml_version or "-", (row.dll_sha256 or "-")[:SHORT_SHA],
            row.feature_level or "-", *numbers, *differences, seconds, row.note()]


def difference_lines(matrix: Matrix) -> list[str]:
    """Per release that differs from the reference: how many cases and the first few ids."""
    lines = []
    for row in matrix.rows:
        comparison = row.comparison
        if comparison is None or row.state is RowState.SAME_DLL:  # its DLL's own row lists them
            continue
        for what, ids in (("status", comparison.status_changed), ("outputs", comparison.output_changed)):
            if ids:
                shown = ", ".join(ids[:SHOWN_CASES]) + (f", … ({len(ids) - SHOWN_CASES} more)"
                                                        if len(ids) > SHOWN_CASES else "")
                lines.append(f"{row.package_version}: {what} differ in {len(ids)} case(s): {shown}")
    return lines


def other_lines(matrix: Matrix) -> list[str]:
    """What the "other" column counts, per release that ran and has any."""
    lines = []
    for row in matrix.rows:
        if row.run is None or row.state is RowState.SAME_DLL:
            continue
        counts: dict[str, int] = {}
        for result in row.run.results:
            if result.status not in COUNTED:
                counts[result.status.value] = counts.get(result.status.value, 0) + 1
        if counts:
            lines.append(f"{row.package_version}: other = " + ", ".join(f"{count} {status}" for status, count in
                                                                          sorted(counts.items())))
    return lines


def summary_line(matrix: Matrix) -> str:
    ran = sum(1 for row in matrix.rows if row.state is RowState.RAN)
    same = sum(1 for row in matrix.rows if row.state is RowState.SAME_DLL)
    failed = len(matrix.rows) - ran - same
    reused = sum(1 for row in matrix.rows if row.reused)
    line = (f"{len(matrix.rows)} release(s): {ran} distinct DirectML.dll run"
            + (f" ({reused} of them taken from results kept by an earlier matrix)" if reused else "")
            + f", {same} sharing a DLL already run, {failed} could not run")
    return line + (f"; reference: onnxruntime-directml {matrix.reference}" if matrix.reference else "; no reference")


def render_matrix(matrix: Matrix, console: Console) -> None:
    """A rich table on a terminal; aligned plain text otherwise (no box characters or colour in a log)."""
    rows = [cells(row, matrix.reference) for row in matrix.rows]
    if console.is_terminal:
        table = Table(*HEADERS, title=f"DirectML version matrix ({matrix.settings.get('tier')} tier)",
                      title_justify="left")
        for row, text in zip(matrix.rows, rows, strict=True):
            style = "red" if not row.state.has_run else "dim" if row.state is RowState.SAME_DLL else ""
            table.add_row(*(Text(cell) for cell in text), style=style)
        console.print(table)
    else:
        for line in plain_table(rows):
            console.print(line, markup=False, highlight=False, soft_wrap=True)
    for line in [*other_lines(matrix), *difference_lines(matrix), summary_line(matrix)]:
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def plain_table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(text[column]) for text in [list(HEADERS), *rows]) for column in range(len(HEADERS))]

    def line(text: list[str]) -> str:
        return "  ".join(cell.rjust(width) if column in _NUMERIC else cell.ljust(width)
                         for column, (cell, width) in enumerate(zip(text, widths, strict=True))).rstrip()

    return [line(list(HEADERS)), *(line(text) for text in rows)]


def settings_line(settings: dict[str, object]) -> str:
    """How the releases were run, as words: what a reader needs to run it again."""
    words = [f"dmlconform {settings.get('tool_version')}", f"tier {settings.get('tier')}"]
    if settings.get("expression"):
        words.append(f"-k {settings['expression']!r}")
    words += [f"adapter {settings.get('adapter') or 'default'}", f"{settings.get('jobs')} job(s)",
              f"timeout {settings.get('timeout_s')} s", f"same DLL by {settings.get('same_dll')}"]
    baselines = settings.get("baseline")
    for entry in baselines if isinstance(baselines, list) else []:
        if isinstance(entry, dict):
            words.append(f"baseline {entry.get('path')} (sha256 {str(entry.get('sha256'))[:SHORT_SHA]})")
    return ", ".join(words)


def matrix_markdown(matrix: Matrix) -> str:
    """matrix.md: how it was run, the table, and the cases that differ from the reference."""
    settings = matrix.settings
    out = [f"# DirectML version matrix: {settings.get('tier')} tier", "",
           f"{summary_line(matrix)}.", "", f"Run with {settings_line(settings)}. This matrix started {matrix.started} "
           f"and took {matrix.duration_s:.0f} s; \"run s\" is the seconds each distinct DLL's run took.", "",
           "| " + " | ".join(HEADERS) + " |",
           "|" + "|".join("---:" if column in _NUMERIC else "---" for column in range(len(HEADERS))) + "|"]
    for row in matrix.rows:
        text = [cell.replace("|", "\\|") for cell in cells(row, matrix.reference)]
        text[2] = f"`{text[2]}`" if text[2] != "-" else text[2]
        out.append("| " + " | ".join(text) + " |")
    others = other_lines(matrix)
    if others:
        out += ["", "The other statuses:", "", *(f"* {line}" for line in others)]
    differences = difference_lines(matrix)
    out += ["", "Against the reference" + (f" (onnxruntime-directml {matrix.reference})" if matrix.reference else "")
            + ":", ""]
    out += [f"* {line}" for line in differences] or ["* no case differs in status or outputs."]
    return "\n".join(out) + "\n"
