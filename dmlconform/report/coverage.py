"""Render coverage (results/coverage.py): per operator, a data type × rank matrix for each level of its table,
the level boundaries, negative cases by rule, and every empty cell; and the same as JSON."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from dmlconform.results.coverage import Cell, Coverage, OperatorCoverage

FORMAT = "dmlconform-coverage/v1"
NOT_ADMITTED = "·"


def _cell_text(cell: Cell | None, level: Any, with_result: bool) -> Text:
    if cell is None or not cell.admitted_at(level):
        return Text(NOT_ADMITTED, style="dim")
    if cell.cases == 0:
        return Text("0", style="bold red")
    if not with_result:
        return Text(str(cell.cases), style="bold" if cell.level is level else "")
    style = "green" if cell.matched == cell.cases else ("red" if cell.failed else "yellow")
    return Text(f"{cell.matched}/{cell.cases}", style=style)


def _matrix(op: OperatorCoverage, level: Any, with_result: bool) -> Table:
    what = "matched/cases" if with_result else "cases, bold where admitted from this level on"
    table = Table(title=f"{op.op.name} at {level} ({what}; {NOT_ADMITTED} not admitted)", title_justify="left")
    table.add_column("data type")
    for rank in op.ranks:
        table.add_column(f"rank {rank}", justify="right")
    for dtype in op.dtypes:
        table.add_row(dtype.name, *(_cell_text(op.cell(dtype, rank), level, with_result) for rank in op.ranks))
    return table


def _boundaries(op: OperatorCoverage) -> str:
    parts = []
    for level in op.levels:
        new = op.new_at(level)
        covered = sum(1 for cell in new if cell.cases)
        parts.append(f"{level} admits {len(new)} new cell(s), {covered} covered" if new else
                     f"{level} admits nothing new")
    return "; ".join(parts)


def render_coverage(coverage: Coverage, console: Console) -> None:
    for op in coverage.operators:
        for level in op.levels:
            console.print(_matrix(op, level, coverage.with_result))
        console.print(f"boundaries: {_boundaries(op)}", highlight=False)
        valid = sum(cell.cases for cell in op.cells)
        console.print(f"{valid} valid case(s) ({op.candidate_cases} with candidates), "
                      f"{sum(op.refusals.values())} negative:", highlight=False)
        refusals = ", ".join(f"{rule} {count}" for rule, count in sorted(op.refusals.items()))
        console.print(f"  refused rules: {refusals or 'none'}", highlight=False)
        console.print()
    if coverage.unknown_results:
        console.print(f"[yellow]{coverage.unknown_results} case(s) of the result are not in these suites[/]")
    empty = coverage.empty
    if empty:
        console.print(Text(f"{len(empty)} empty cell(s):", style="bold red"))
        for op, cell in empty:
            console.print(f"  {op.op.name} {cell.dtype.name} rank {cell.rank} (admitted from {cell.level})",
                          highlight=False)
    else:
        total = sum(len(op.cells) for op in coverage.operators)
        console.print(Text(f"no empty cell: all {total} cells of the five support tables hold cases "
                           f"({coverage.cases} cases)", style="bold green"))


def coverage_json(coverage: Coverage, tier: str | None) -> dict[str, Any]:
    operators = {}
    for op in coverage.operators:
        cells = []
        for cell in op.cells:
            entry: dict[str, Any] = {"dtype": cell.dtype.name, "rank": cell.rank, "level": cell.level.label,
                                     "cases": cell.cases}
            if coverage.with_result:
                entry |= {"matched": cell.matched, "failed": cell.failed, "not_run": cell.not_run}
            cells.append(entry)
        operators[op.op.name] = {
            "levels": [level.label for level in op.levels],
            "cells": cells,
            "empty": [{"dtype": c.dtype.name, "rank": c.rank, "level": c.level.label} for c in op.empty],
            "candidate_cases": op.candidate_cases,
            "negative": dict(sorted(op.refusals.items())),
        }
    return {"format": FORMAT, "tier": tier, "cases": coverage.cases, "with_result": coverage.with_result,
            "unknown_results": coverage.unknown_results, "empty_cells": len(coverage.empty),
            "operators": operators}
