"""`dmlconform generate`: build the generated suites from their descriptions, or check the committed ones."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from dmlconform.cli.common import EXIT_FAILED, EXIT_OK, bundled_suites, fail
from dmlconform.suite.tiers import NAMES, Tier


def tier_folder(tier: Tier, output: Path | None) -> Path:
    """Where a tier's generated suites live: the bundled test_vectors/<tier> for committed tiers, the cache for full."""
    from dmlconform.generation.cache import full_tier_folder

    if output is not None:
        return output / tier.value
    return bundled_suites() / tier.value if tier.committed else full_tier_folder()


def generate_tier(tier: Tier, folder: Path, quiet: bool = False) -> int:
    """Generate one tier into `folder`; the number of cases. GenerationError propagates."""
    from dmlconform.generation.build import build_tier
    from dmlconform.generation.cache import generator_fingerprint
    from dmlconform.generation.writer import render, write

    clock = time.monotonic()
    suites = build_tier(tier, progress=None if quiet else lambda line: click.echo(f"  {line}", err=True))
    extra = {} if tier.committed else {"generator": generator_fingerprint()}
    rendered = render(tier, suites, extra)
    write(folder, rendered)
    if not quiet:
        size = sum(len(content) for content in rendered.files.values())
        click.echo(f"{tier.value}: {rendered.manifest['cases']} cases, {len(rendered.files)} files, "
                   f"{size / 2**20:.1f} MiB -> {folder} ({time.monotonic() - clock:.1f} s)", err=True)
    return int(rendered.manifest["cases"])


def ensure_full_tier(quiet: bool = False) -> Path:
    """The full tier's folder, generated first if it is missing or was made by another version."""
    from dmlconform.generation import GenerationError
    from dmlconform.generation.cache import full_tier_folder, is_current

    folder = full_tier_folder()
    if not is_current(folder):
        click.echo(f"dmlconform: generating the full tier into {folder} (once per version; "
                   "`dmlconform generate --tier full` does it ahead of time)", err=True)
        try:
            generate_tier(Tier.FULL, folder, quiet)
        except GenerationError as exc:
            fail(str(exc))
        except OSError as exc:
            fail(f"cannot write the full tier into {folder}: {exc.strerror or exc}")
    return folder


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
            generate_tier(tier, tier_folder(tier, output), quiet)
    except GenerationError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot write: {exc.strerror or exc} ({getattr(exc, 'filename', '')})")
