"""The JSON result, format dmlconform-result/v1 (contract §7), written atomically."""

from __future__ import annotations

import json
from pathlib import Path

from dmlconform.atomic_file import write_atomically
from dmlconform.results.document import to_document
from dmlconform.run_result import RunResult


def write_json(run: RunResult, path: Path) -> None:
    write_atomically(path, json.dumps(to_document(run), indent=1) + "\n")
