"""`dmlconform list`, `ops` and `backends`: what there is to run."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from dmlconform.cli.common import (
    TIER_HELP,
    load_cases,
    make_console,
    parse_path_option,
    path_option,
    suite_limit_option,
)
from dmlconform.suite.tiers import NAMES

if TYPE_CHECKING:
    from dmlconform.suite.limits import SuiteLimits


@click.command("list")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("-k", "expression", metavar="EXPR", help="Select cases as `run -k` does.")
@click.option("--tier", "tier_name", type=click.Choice(NAMES), help=TIER_HELP)
@path_option
@suite_limit_option
def list_cases(paths: tuple[Path, ...], expression: str | None, tier_name: str | None, path_text: str,
               suite_limits: SuiteLimits) -> None:
    """List the cases with their operator, data type, rank and required feature level; with --path, each case on
    each path that applies to it, as `run --path` runs them."""
    from rich.table import Table

    execution_paths = parse_path_option(path_text)
    cases = load_cases(paths, expression, tier_name, limits=suite_limits, execution_paths=execution_paths)
    several = len(execution_paths) > 1 or execution_paths[0].value != "operator"
    table = Table("case", "op", "dtype", "rank", "required", "kind", *(("path",) if several else ()))
    for case in cases:
        kind = "invalid" if case.expect_invalid else ("candidates" if case.candidates else "single")
        table.add_row(case.full_id, case.op.name, case.dtype.name, str(case.rank), case.required_level.label,
                      kind, *((case.path.value,) if several else ()))
    console = make_console()
    console.print(table)
    counts = {path.value: sum(1 for case in cases if case.path is path) for path in execution_paths}
    console.print(f"{len(cases)} cases" + (" (" + ", ".join(f"{count} on {name}" for name, count in counts.items())
                                           + ")" if several else ""))


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
