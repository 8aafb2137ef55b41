"""A generated tier written to its folder, and the full tier kept current in its cache folder.

Shared by `dmlconform generate` and by every command that loads `--tier full` (which generates it on first
use); both report progress through the callbacks, so this layer prints nothing itself."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dmlconform.suite.tiers import Tier

Progress = Callable[[str], None] | None


@dataclass(frozen=True)
class WrittenTier:
    tier: Tier
    folder: Path
    cases: int
    files: int
    size_bytes: int
    seconds: float


def generate_tier(tier: Tier, folder: Path, progress: Progress = None) -> WrittenTier:
    """Build one tier from the descriptions and write it into `folder`. GenerationError and OSError propagate."""
    from dmlconform.generation.build import build_tier
    from dmlconform.generation.cache import generator_fingerprint
    from dmlconform.generation.writer import render, write

    clock = time.monotonic()
    suites = build_tier(tier, progress=progress)
    extra = {} if tier.committed else {"generator": generator_fingerprint()}
    rendered = render(tier, suites, extra)
    write(folder, rendered)
    size = sum(len(content) for content in rendered.files.values())
    return WrittenTier(tier, folder, int(rendered.manifest["cases"]), len(rendered.files), size,
                       time.monotonic() - clock)


def ensure_full_tier(announce: Callable[[str], None], progress: Progress = None) -> Path:
    """The full tier's folder, generated first (saying so through `announce`) if it is missing or was made by
    another version. GenerationError and OSError propagate."""
    from dmlconform.generation.cache import full_tier_folder, is_current

    folder = full_tier_folder()
    if not is_current(folder):
        announce(f"generating the full tier into {folder} (once per version; `dmlconform generate --tier full` "
                 "does it ahead of time)")
        generate_tier(Tier.FULL, folder, progress)
    return folder
