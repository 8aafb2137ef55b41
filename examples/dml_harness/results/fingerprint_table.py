"""The behaviour fingerprint of several result documents side by side, one column per stack, as Markdown.

The README's table of what real DirectML does where the pages are silent is this script's output over the
results kept in this folder (tests/harness/test_stack_results.py checks that it still is):

  python examples/dml_harness/results/fingerprint_table.py \\
      "lavapipe (Mesa 25.0.7)=examples/dml_harness/results/directml-1.15.4-lavapipe-standard.json" \\
      "NVIDIA H100 (580.159.04)=examples/dml_harness/results/directml-1.15.4-h100-standard.json"
"""

from __future__ import annotations

import sys
from pathlib import Path

from dmlconform.results.document import read_document
from dmlconform.verdicts import fingerprint


def table(columns: list[tuple[str, Path]]) -> str:
    readings = [(label, fingerprint(read_document(path).results)) for label, path in columns]
    behaviours = sorted({name for _, found in readings for name in found})
    lines = ["| behaviour | " + " | ".join(label for label, _ in readings) + " |",
             "|---|" + "---|" * len(readings)]
    for name in behaviours:
        cells = [found.get(name, "—") for _, found in readings]
        same = len(set(cells)) == 1
        lines.append(f"| {name} | " + " | ".join(cell if same else f"**{cell}**" for cell in cells) + " |")
    return "\n".join(lines) + "\n"


def main(arguments: list[str]) -> None:
    columns = []
    for argument in arguments:
        label, _, path = argument.rpartition("=")
        columns.append((label or Path(path).stem, Path(path)))
    sys.stdout.write(table(columns))


if __name__ == "__main__":
    main(sys.argv[1:])
