"""The resume journal: JSON lines next to the report, one per finished case, each written as it finishes.

Each line reaches the operating system (one `write`) before the next result is taken, so any death of the
process keeps it. An fsync, which only matters if the machine itself goes down, costs more than a small case:
a line is fsync'ed with the first line written SYNC_INTERVAL_S or more after the last fsync, and at the end.
A machine crash loses at most the lines written since the last fsync (they run again on `--resume`).

Line 1 is a header with the run's configuration and backend; then `{"case": {...}}` per case (the
result document's case object); `{"end": {...}}` once every case has run. A run killed even by SIGKILL
leaves at most a torn last line, which `--resume` drops; anything else unreadable is a corrupt journal.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dmlconform.atomic_file import NEW_FILE_MODE, sync_folder
from dmlconform.case_result import CaseResult
from dmlconform.results import ResultsError
from dmlconform.results.document import case_from_json, case_json, dotted, first_difference, value_at

FORMAT = "dmlconform-journal/v1"
#: Longest time a written journal line may wait for its fsync.
SYNC_INTERVAL_S = 1.0


@dataclass
class Journal:
    header: dict[str, Any]
    results: list[CaseResult] = field(default_factory=list)
    complete: bool = False
    #: Bytes up to the end of the last complete line; a torn line after it is cut off when appending.
    valid_bytes: int = 0
    torn: bool = False


class JournalWriter:
    def __init__(self, path: Path, header: dict[str, Any] | None = None, append_at: int | None = None) -> None:
        """A new journal with `header`, or (append_at) an existing one continued from that byte."""
        self.path = path
        self.synced = time.monotonic()
        path.parent.mkdir(parents=True, exist_ok=True)
        if append_at is None:
            self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, NEW_FILE_MODE)  # as open() would
            self._write({"journal": FORMAT, **(header or {})}, sync=True)
            sync_folder(path.parent)
        else:
            self.fd = os.open(path, os.O_WRONLY)
            os.ftruncate(self.fd, append_at)
            os.lseek(self.fd, append_at, os.SEEK_SET)

    def _write(self, record: dict[str, Any], sync: bool = False) -> None:
        data = (json.dumps(record, separators=(",", ":")) + "\n").encode("utf-8")
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view):]
        if sync or time.monotonic() - self.synced >= SYNC_INTERVAL_S:
            os.fsync(self.fd)
            self.synced = time.monotonic()

    def append(self, result: CaseResult) -> None:
        self._write({"case": case_json(result)})

    def finish(self, summary: dict[str, Any]) -> None:
        self._write({"end": summary}, sync=True)

    def close(self) -> None:
        if self.fd >= 0:
            os.fsync(self.fd)
            os.close(self.fd)
            self.fd = -1


def read_journal(path: Path) -> Journal:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ResultsError(path, f"cannot be read ({exc.strerror or exc})") from None
    lines = data.split(b"\n")
    tail = lines.pop()  # after the last newline: empty, or a line torn by a kill
    if not lines:
        raise ResultsError(path, "has no header line; not a dmlconform journal", "line 1")
    journal = Journal(header={}, torn=bool(tail), valid_bytes=len(data) - len(tail))
    for number, raw in enumerate(lines, start=1):
        where = f"line {number}"
        try:
            record = json.loads(raw)
        except (ValueError, RecursionError) as exc:  # not JSON, not UTF-8, a number past the digit limit, too deep
            raise ResultsError(path, f"is not JSON ({str(exc).splitlines()[0]}); the journal is corrupt",
                               where) from None
        if not isinstance(record, dict):
            raise ResultsError(path, "is not a JSON object; the journal is corrupt", where)
        if number == 1:
            if record.get("journal") != FORMAT:
                raise ResultsError(path, f"is {record.get('journal')!r}, not {FORMAT!r}", where, "journal")
            journal.header = record
        elif "case" in record:
            if journal.complete:
                raise ResultsError(path, "a case after the end record; the journal is corrupt", where)
            journal.results.append(case_from_json(record["case"], path, number - 2, number))
        elif "end" in record:
            journal.complete = True
        else:
            raise ResultsError(path, "neither a case nor the end record; the journal is corrupt", where)
    seen: set[str] = set()
    for result in journal.results:
        if result.id in seen:
            raise ResultsError(path, "appears twice; the journal is corrupt", f"case {result.id}")
        seen.add(result.id)
    return journal


def check_same_run(journal: Journal, path: Path, key: str, current: dict[str, Any]) -> None:
    """Refuse to resume a journal written by another run configuration, naming the first field that differs."""
    recorded = journal.header.get(key)
    difference = first_difference(recorded, current)
    if difference is not None:
        field_name = f"{key}.{dotted(difference)}" if difference else key
        raise ResultsError(path, f"is {json.dumps(value_at(recorded, difference))} in the journal but "
                                 f"{json.dumps(value_at(current, difference))} in this run; this journal belongs to "
                                 "another run (start over without --resume, or pass another --journal)",
                           field=field_name)
