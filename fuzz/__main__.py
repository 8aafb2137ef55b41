"""`python -m fuzz NAME [libFuzzer options] [corpus folders]`: one harness under atheris, dmlconform instrumented."""

from __future__ import annotations

import importlib
import sys


def main() -> None:
    import atheris

    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.exit("usage: python -m fuzz NAME [libFuzzer options] [corpus folders]")
    name = sys.argv[1]
    with atheris.instrument_imports(include=["dmlconform"]):
        harness = importlib.import_module(f"fuzz.fuzz_{name}")
    atheris.Setup([f"fuzz {name}", *sys.argv[2:]], harness.one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
