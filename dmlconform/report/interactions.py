"""Render interaction coverage (dmlconform/interactions): per operator, the share of feature values, pairs and
declared higher-order interactions that some valid case exercises, the tier's goal, and what is missing; and the
same as JSON."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from dmlconform.interactions.coverage import ORDER_NAMES, ORDERS, OperatorCoverage

FORMAT = "dmlconform-interactions/v1"


def unmet(found: list[OperatorCoverage], goal: tuple[int, ...]) -> list[tuple[str, int, int]]:
    """(operator, order, missing combinations) for every goal order left incomplete."""
    return [(op.op, order, len(op.missing(order))) for op in found for order in goal if op.missing(order)]


def render_interactions(found: list[OperatorCoverage], goal: tuple[int, ...], console: Console,
                        shown: int = 6) -> None:
    table = Table(title="Interaction coverage (covered/possible; a goal order marked *)", title_justify="left")
    table.add_column("operator")
    table.add_column("valid cases", justify="right")
    for order in ORDERS:
        table.add_column(ORDER_NAMES[order] + (" *" if order in goal else ""), justify="right")
    for op in found:
        cells = []
        for order in ORDERS:
            covered, possible = op.counts(order)
            style = "green" if covered == possible else ("red" if order in goal else "yellow")
            cells.append(f"[{style}]{covered}/{possible} ({100 * op.share(order):.1f} %)[/]" if possible else "—")
        table.add_row(op.op, str(op.cases), *cells)
    console.print(table)
    for op in found:
        for order in ORDERS:
            missing = op.missing(order)
            if not missing:
                continue
            console.print(f"{op.op}: {len(missing)} {ORDER_NAMES[order]} missing"
                          f"{' (goal)' if order in goal else ''}:", highlight=False)
            for row in op.by_order[order]:
                if not row.missing:
                    continue
                examples = "; ".join(" + ".join(values) for values in row.missing[:shown])
                more = f" … (+{len(row.missing) - shown}; --json lists every one)" if len(row.missing) > shown else ""
                console.print(f"  {row.interaction.label}: {len(row.missing)} of {len(row.possible)}: "
                              f"{examples}{more}", highlight=False)
    for op in found:
        for row in op.by_order[3]:
            console.print(f"{op.op}: {row.interaction.label}: {len(row.covered)}/{len(row.possible)} "
                          f"({row.interaction.about})", highlight=False)


def interactions_json(found: list[OperatorCoverage], goal: tuple[int, ...], tier: str | None) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "tier": tier,
        "goal": [ORDER_NAMES[order] for order in goal],
        "met": not unmet(found, goal),
        "operators": [{
            "op": op.op,
            "valid_cases": op.cases,
            **{ORDER_NAMES[order]: {
                "covered": op.counts(order)[0],
                "possible": op.counts(order)[1],
                "interactions": [{
                    "features": list(row.interaction.features),
                    "about": row.interaction.about,
                    "covered": len(row.covered),
                    "possible": len(row.possible),
                    "missing": [list(values) for values in row.missing],
                } for row in op.by_order[order]],
            } for order in ORDERS},
        } for op in found],
    }
