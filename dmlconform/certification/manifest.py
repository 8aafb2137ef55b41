"""The suite manifest: every file of the suite roots a certification ran, with its SHA-256.

Keys are `<root>/<path inside it>`: `test_vectors/...` for the bundled suites (hand-written ones and the
committed tiers), `full/...` for the full tier generated into the cache. `verify` computes the same manifest
from the dmlconform it runs and requires equality, so a suite file changed, added or removed on the vendor's
side shows as one line per file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dmlconform.certification.checksums import file_sha256

MANIFEST_FORMAT = "dmlconform-suite-manifest/v1"


def suite_files(roots: list[tuple[str, Path]]) -> dict[str, str]:
    """Label/relative path -> SHA-256 of every file under each root (hidden files and caches left out)."""
    files: dict[str, str] = {}
    for label, root in roots:
        for folder, folders, names in os.walk(root):
            folders[:] = sorted(f for f in folders if not f.startswith(".") and f != "__pycache__")
            for name in sorted(names):
                if name.startswith(".") or name.endswith(".pyc"):
                    continue
                path = Path(folder) / name
                files[f"{label}/{path.relative_to(root).as_posix()}"] = file_sha256(path)
    return dict(sorted(files.items()))


def manifest_document(tier: str, fingerprint: str, cases: int, files: dict[str, str]) -> dict[str, Any]:
    return {"format": MANIFEST_FORMAT, "tier": tier, "fingerprint": fingerprint, "cases": cases, "files": files}


def manifest_differences(package: dict[str, str], shipped: dict[str, str], shipped_name: str) -> list[tuple[str, str]]:
    """(file, what differs) for every file that is not the same in both."""
    lines = []
    for name in sorted(set(package) | set(shipped)):
        ours, theirs = package.get(name), shipped.get(name)
        if ours == theirs:
            continue
        if theirs is None:
            lines.append((name, f"is in the package's suite but not in {shipped_name}"))
        elif ours is None:
            lines.append((name, f"is in {shipped_name} but missing from the package's suite"))
        else:
            lines.append((name, f"SHA-256 {ours[:16]}… in the package, {theirs[:16]}… in {shipped_name}"))
    return lines
