"""`dmlconform generate`: build the generated suites from their descriptions, or check the committed ones."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from dmlconform.cli.common import EXIT_FAILED, EXIT_OK, bundled_suites, fail
from dmlconform.generation.tier_files import WrittenTier, generate_tier
from dmlconform.suite.tiers import NAMES, Tier


def _progress(line: str) -> None:
    click.echo(f"  {line}", err=True)


def tier_folder(tier: Tier, output: Path | None) -> Path:
    """Where a tier's generated suites live: the bundled test_vectors/<tier> for committed tiers, the cache for full."""
    from dmlconform.generation.cache import full_tier_folder

    if output is not None:
        return output / tier.value
    return bundled_suites() / tier.value if tier.committed else full_tier_folder()


def _summary(written: WrittenTier) -> str:
    return (f"{written.tier.value}: {written.cases} cases, {written.files} files, {written.size_bytes / 2**20:.1f} MiB "
            f"-> {written.folder} ({written.seconds:.1f} s)")


@click.command()
@click.option("--tier", "tier_name", type=click.Choice(NAMES), help="Generate only this tier. Default: the "
              "committed tiers (smoke, standard) into the bundled test_vectors/. `full` goes to a cache folder.")
@click.option("--check", is_flag=True, help="Do not write: check that the committed files are exactly what the "
              "generators produce (exit 1 naming each file that differs).")
@click.option("--output", type=click.Path(path_type=Path, file_okay=False), help="Write the tiers under this "
              "folder (OUTPUT/<tier>/) instead.")
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but errors and differences.")
def generate(tier_name: str | None, check: bool, output: Path | None, quiet: bool) -> None:
    """Build the generated suites from their descriptions, or --check the committed ones.

    The descriptions are dmlconform/generation/descriptions/*.yaml; the output is the same on every platform.

    Exit status: 0 written (or, with --check, every committed file matches), 1 --check found a difference,
    2 a description is unusable."""
    from dmlconform.generation import GenerationError
    from dmlconform.generation.build import build_tier
    from dmlconform.generation.writer import differences, render

    tiers = [Tier.parse(tier_name)] if tier_name else [t for t in Tier if t.committed]
    try:
        if check:
            if any(not t.committed for t in tiers):
                fail("--check: the full tier is not committed, so there is nothing to check it against")
            problems = []
            for tier in tiers:
                folder = tier_folder(tier, output)
                rendered = render(tier, build_tier(tier))
                found = differences(folder, rendered)
                problems += found
                if not quiet:
                    verdict = "matches" if not found else f"{len(found)} difference(s)"
                    click.echo(f"{tier.value}: {rendered.manifest['cases']} cases, {len(rendered.files)} files "
                               f"in {folder}: {verdict}", err=True)
            for line in problems:
                click.echo(f"dmlconform generate --check: {line}")
            sys.exit(EXIT_FAILED if problems else EXIT_OK)
        for tier in tiers:
            written = generate_tier(tier, tier_folder(tier, output), None if quiet else _progress)
            if not quiet:
                click.echo(_summary(written), err=True)
    except GenerationError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot write: {exc.strerror or exc} ({getattr(exc, 'filename', '')})")
