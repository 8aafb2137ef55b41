"""`dmlconform list`, `ops` and `backends`: what there is to run."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from dmlconform.cli.common import TIER_HELP, load_cases, make_console, suite_limit_option
from dmlconform.suite.tiers import NAMES

if TYPE_CHECKING:
    from dmlconform.suite.limits import SuiteLimits


@click.command("list")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("-k", "expression", metavar="EXPR", help="Select cases as `run -k` does.")
@click.option("--tier", "tier_name", type=click.Choice(NAMES), help=TIER_HELP)
@suite_limit_option
def list_cases(paths: tuple[Path, ...], expression: str | None, tier_name: str | None,
               suite_limits: SuiteLimits) -> None:
    """List the cases with their operator, data type, rank and required feature level."""
    from rich.table import Table

    cases = load_cases(paths, expression, tier_name, limits=suite_limits)
    table = Table("case", "op", "dtype", "rank", "required", "kind")
    for case in cases:
        kind = "invalid" if case.expect_invalid else ("candidates" if case.candidates else "single")
        table.add_row(case.full_id, case.op.name, case.dtype.name, str(case.rank), case.required_level.label,
                      kind)
    console = make_console()
    console.print(table)
    console.print(f"{len(cases)} cases")


@click.command()
def ops() -> None:
    """Show each operator's support table (from its seed page) and the reference's variants."""
    from rich.table import Table

    from dmlconform.ops import OPERATORS

    table = Table("operator", "from level", "ranks", "data types", "variants")
    for op in OPERATORS.values():
        for number, row in enumerate(op.support.rows):
            names = ", ".join(d.name for d in sorted(row.dtypes, key=lambda d: d.value))
            table.add_row(op.name if number == 0 else "", row.level.label, f"{row.min_rank}-{row.max_rank}", names,
                          ", ".join(op.variants) if number == 0 else "")
    make_console().print(table)


@click.command()
def backends() -> None:
    """List the backends, each with where it comes from: built in, or a plugin's distribution and version (entry
    point group dmlconform.backends). A plugin that cannot be loaded is one line saying why."""
    from dmlconform.backends import backend_sources

    for source in backend_sources():
        if source.problem:
            click.echo(f"{source.name}  BROKEN: {source.problem}")
        else:
            click.echo(f"{source.name}  {source.origin}")
