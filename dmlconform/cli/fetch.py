"""`dmlconform fetch directml [VERSION]`: an onnxruntime-directml release's DLLs into the cache
(directml/library.py)."""

from __future__ import annotations

import click

from dmlconform.cli.common import fail


@click.group()
def fetch() -> None:
    """Download what a backend needs into dmlconform's cache."""


@fetch.command("directml")
@click.argument("versions", nargs=-1, metavar="[VERSION]...")
@click.option("--available", is_flag=True, help="List the onnxruntime-directml releases the package index has.")
@click.option("--force", is_flag=True, help="Fetch again even when the cache holds a valid copy.")
def fetch_directml(versions: tuple[str, ...], available: bool, force: bool) -> None:
    """Download onnxruntime-directml VERSION's win_amd64 wheel from the package index (pip's, as configured) and keep
    its DirectML.dll, onnxruntime.dll and onnxruntime_providers_shared.dll in the cache, with their versions and
    SHA-256 digests. Default VERSION: the release the project's kept results were taken with. Several versions live
    side by side; `run --directml-version V` picks one."""
    from dmlconform.directml.library import DEFAULT_VERSION, FetchError, available_versions, fetch

    def log(line: str) -> None:
        click.echo(f"dmlconform: {line}", err=True)

    if available:
        try:
            click.echo(" ".join(available_versions()))
        except FetchError as exc:
            fail(str(exc))
        return
    for version in versions or (DEFAULT_VERSION,):
        try:
            release = fetch(version, log, force=force)
        except FetchError as exc:
            fail(str(exc))
        except ValueError as exc:  # a DLL in the wheel that is not what it should be
            fail(f"onnxruntime-directml {version}: {exc}")
        click.echo(f"onnxruntime-directml {release.package_version}: DirectML.dll {release.directml_version} "
                   f"(sha256 {release.files['DirectML.dll']}) in {release.folder}")
