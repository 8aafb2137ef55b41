"""What the Windows programs' tests need on Linux (the DirectML harness, the ONNX Runtime host): a reason to skip, or
"" when the cross compiler, Wine and an X display are all there."""

from __future__ import annotations

import os
import shutil

WINE = os.environ.get("WINE", "/usr/lib/wine/wine64")


def missing_wine_tools() -> str:
    if shutil.which("x86_64-w64-mingw32-g++") is None:
        return "x86_64-w64-mingw32-g++ not found (apt-get install mingw-w64)"
    if not os.access(WINE, os.X_OK):
        return f"no Wine loader at {WINE} (apt-get install wine64)"
    if not os.environ.get("DISPLAY") and shutil.which("Xvfb") is None:
        return "neither DISPLAY nor Xvfb (apt-get install xvfb): Wine's DXGI needs an X display"
    return ""
