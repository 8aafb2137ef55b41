"""The user's cache folder, where dmlconform keeps what it fetched or worked out and can make again: DirectML releases,
the Wine prefix, the generated full tier, parsed suite files."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def cache_root(environ: Mapping[str, str] | None = None, windows: bool | None = None) -> Path:
    """$DMLCONFORM_CACHE; else %LOCALAPPDATA%/dmlconform/cache on Windows, $XDG_CACHE_HOME/dmlconform or
    ~/.cache/dmlconform elsewhere."""
    env = os.environ if environ is None else environ
    if env.get("DMLCONFORM_CACHE"):
        return Path(env["DMLCONFORM_CACHE"])
    if os.name == "nt" if windows is None else windows:
        local = env.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(local) / "dmlconform" / "cache"
    xdg = env.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):  # the XDG specification says to ignore a relative one
        return Path(xdg) / "dmlconform"
    home = env.get("HOME") or str(Path.home())
    return Path(home) / ".cache" / "dmlconform"
