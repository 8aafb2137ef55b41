"""The JSON result, format dmlconform-result/v1 (docs/reference/results.md), written atomically.

The run's fields are indented; each case is one line. That reads well in a terminal, greps and diffs a case per
line, and lets `json` use its C encoder for the cases, which are almost all of the bytes (indenting them makes
it fall back to the pure-Python encoder, several times slower on a large run).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dmlconform.atomic_file import write_atomically
from dmlconform.results.document import to_document
from dmlconform.run_result import RunResult


def write_json(run: RunResult, path: Path) -> None:
    write_atomically(path, dumps(to_document(run)))


def dumps(document: dict[str, Any], lines_for: str = "cases") -> str:
    """`document` as JSON text: indented, but each item of the list `lines_for` on one line."""
    items = document[lines_for]
    head = json.dumps({**document, lines_for: []}, indent=1)
    one_line = json.JSONEncoder(separators=(", ", ": ")).encode
    body = "[\n  " + ",\n  ".join(map(one_line, items)) + "\n ]" if items else "[]"
    marker = f'\n "{lines_for}": []'
    at = head.rindex(marker) + len(marker) - 2
    return head[:at] + body + head[at + 2:] + "\n"
