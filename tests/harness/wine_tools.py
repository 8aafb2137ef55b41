"""What the Windows programs' tests need on Linux (the DirectML harness, the ONNX Runtime host): a reason to skip, or
"" when the cross compiler, Wine and an X display are all there; and one X display for a module's programs."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

WINE = os.environ.get("WINE", "/usr/lib/wine/wine64")


def missing_wine_tools() -> str:
    if shutil.which("x86_64-w64-mingw32-g++") is None:
        return "x86_64-w64-mingw32-g++ not found (apt-get install mingw-w64)"
    if not os.access(WINE, os.X_OK):
        return f"no Wine loader at {WINE} (apt-get install wine64)"
    if not os.environ.get("DISPLAY") and shutil.which("Xvfb") is None:
        return "neither DISPLAY nor Xvfb (apt-get install xvfb): Wine's DXGI needs an X display"
    return ""


@contextmanager
def x_display() -> Iterator[str]:
    """An X display for every Windows program a test module starts: $DISPLAY, else an Xvfb of the module's own.

    Without one, run_under_wine.sh starts an Xvfb per process and, once the process is gone, waits for the prefix's
    wineserver to exit before it stops it: seconds per start that a module's tests would spend waiting. With a
    display given, as run_suites.sh gives one, the programs share it and the wineserver stays up between them."""
    if os.environ.get("DISPLAY"):
        yield os.environ["DISPLAY"]
        return
    with tempfile.TemporaryFile() as number:
        # -displayfd: Xvfb picks a free display and writes its number once it accepts connections.
        xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(number.fileno()), "-nolisten", "tcp", "-screen", "0",
                                 "640x480x24"], pass_fds=(number.fileno(),), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while xvfb.poll() is None and time.monotonic() < deadline:
                number.seek(0)
                written = number.read().decode().strip()
                if written.isdigit():
                    break
                time.sleep(0.05)
            else:
                raise RuntimeError(f"Xvfb gave no display number (exit status {xvfb.poll()})")
            yield f":{written}"
        finally:
            xvfb.kill()
            xvfb.wait(timeout=30)
