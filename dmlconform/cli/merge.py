"""`dmlconform merge`: shard results (`run --shard I/N --json ...`) into one result, as an unsharded run."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from dmlconform.cli.common import EXIT_FAILED, EXIT_OK, fail, make_console, write_reports


@click.command()
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
@click.option("-o", "--output", "json_path", type=click.Path(path_type=Path, dir_okay=False),
              help="Write the merged JSON result here.")
@click.option("--junit", "junit_path", type=click.Path(path_type=Path, dir_okay=False),
              help="Write the merged JUnit XML here.")
@click.option("--failures", "failures_path", type=click.Path(path_type=Path, dir_okay=False),
              help="Write the next baseline from the merged result.")
@click.option("--baseline", type=click.Path(path_type=Path, dir_okay=False),
              help="The baseline the shards ran with (checked against their hash), so that --failures keeps "
                   "its entries for cases outside the run.")
@click.option("--show", "failures_shown", default=25, show_default=True, type=click.IntRange(0),
              help="Failing cases printed in full.")
def merge(inputs: tuple[Path, ...], json_path: Path | None, junit_path: Path | None, failures_path: Path | None,
          baseline: Path | None, failures_shown: int) -> None:
    """Merge shard results into one; refuses results of different runs, naming the field that differs."""
    from dmlconform.report.console import render
    from dmlconform.results import ResultsError
    from dmlconform.results.document import read_document
    from dmlconform.results.expectations import Expectations, load_expectations
    from dmlconform.results.merge import merge_results

    try:
        merged = merge_results([(path, read_document(path)) for path in inputs])
        expectations = load_expectations(baseline, [], []) if baseline else Expectations()
    except ResultsError as exc:
        fail(str(exc))
    if baseline is not None:
        used = {e.sha256 for e in merged.expectations if e.kind == "baseline"}
        if expectations.files[0].sha256 not in used:
            fail(f"--baseline {baseline}: its SHA-256 is not the baseline the shards ran with")
    render(merged, make_console(), failures_shown)
    write_reports(merged, json_path, junit_path, failures_path, expectations)
    sys.exit(EXIT_OK if merged.passed else EXIT_FAILED)
