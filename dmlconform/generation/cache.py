"""Where the full tier lives: generated on demand into a cache folder, never committed.

The tier is the `full/` folder of the user's cache folder (cache_folder.py). Its manifest records a fingerprint of
what produced it (the descriptions, the generator's and the reference's source, the tool version): a cache made by
another version is stale and is generated again before a run uses it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from dmlconform import __version__
from dmlconform.cache_folder import cache_root
from dmlconform.generation.description import description_files
from dmlconform.generation.writer import read_manifest

_PACKAGE = Path(__file__).resolve().parents[1]


def full_tier_folder() -> Path:
    return cache_root() / "full"


def generator_fingerprint() -> str:
    """SHA-256 over the tool version, the descriptions, and the generator's and reference's source files."""
    digest = hashlib.sha256(__version__.encode())
    sources = [*description_files(), *sorted((_PACKAGE / "generation").rglob("*.py")),
               *sorted((_PACKAGE / "ops").rglob("*.py"))]
    for path in sources:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def is_current(folder: Path) -> bool:
    manifest = read_manifest(folder)
    if manifest is None or manifest.get("generator") != generator_fingerprint():
        return False
    return all((folder / relative).is_file() for relative in manifest.get("files", {}))
