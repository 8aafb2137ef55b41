"""The resume journal (`dmlconform-journal/v1`, JSON lines): `read_journal` as `run --resume` reads it, the check
that it belongs to this run, and the journal continued from where it was read, as a resumed run continues it.

Contract: a one-line ResultsError, or a journal whose results, header and valid length are consistent (its torn
tail cut off, appending goes on at a line boundary, and the file reads back with the appended case); memory
within the bound of the input's size.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from dmlconform.results import ResultsError
from dmlconform.results.document import backend_json, configuration
from dmlconform.results.journal import JournalWriter, check_same_run, read_journal
from fuzz.contract import ContractBroken, check_refusal, memory_bound, scratch
from fuzz.recorded import recorded, synthetic_run

APPENDED = "appended/by-the-fuzz-harness"


def one_input(data: bytes) -> None:
    path = scratch() / "run.journal.jsonl"
    path.write_bytes(data)
    with memory_bound(len(data)):
        try:
            journal = read_journal(path)
        except ResultsError as exc:
            check_refusal(exc)
            return
        if not 0 <= journal.valid_bytes <= len(data) or (journal.valid_bytes and data[journal.valid_bytes - 1] != 10):
            raise ContractBroken(f"valid_bytes {journal.valid_bytes} is not the end of a line of the input")
        header = recorded_header()
        for key in ("configuration", "backend"):
            try:
                check_same_run(journal, path, key, header[key])
            except ResultsError as exc:
                check_refusal(exc)
        if journal.complete or not journal.results or any(r.id == APPENDED for r in journal.results):
            return
        writer = JournalWriter(path, append_at=journal.valid_bytes)
        try:
            writer.append(replace(journal.results[0], id=APPENDED))
        finally:
            writer.close()
        try:
            again = read_journal(path)
        except ResultsError as exc:
            raise ContractBroken(f"a journal continued after reading does not read back: {exc}") from exc
        if [r.id for r in again.results] != [r.id for r in journal.results] + [APPENDED]:
            raise ContractBroken("the continued journal lost or reordered cases")


_header: dict | None = None


def recorded_header() -> dict:
    """What `run --resume` compares a journal's header with: this run's configuration and backend."""
    global _header
    if _header is None:
        run = synthetic_run()
        _header = {"configuration": configuration(run), "backend": backend_json(run.backend)}
    return _header


def seeds() -> Iterator[bytes]:
    """The recorded run's journal whole, cut after each line, and torn in the middle of its last line."""
    data = recorded().journal.read_bytes()
    lines = data.split(b"\n")
    yield data
    for count in range(1, len(lines)):
        yield b"\n".join(lines[:count]) + b"\n"
    yield data[: len(data) - len(lines[-2]) // 2 - 1]
