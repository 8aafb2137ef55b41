"""The resume journal, property by property (hypothesis): what a run journals reads back as it was; a journal cut
anywhere (a kill) reads back as the cases before the cut, its torn line dropped; bytes changed anywhere give a
journal or a one-line ResultsError, never another exception."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from dmlconform.results import ResultsError
from dmlconform.results.document import case_json
from dmlconform.results.journal import JournalWriter, read_journal
from tests.properties import PROPERTIES
from tests.results.strategies import case_results

HEADER = {"configuration": {"backend": "numpy"}, "backend": {"name": "numpy"}}
results_lists = st.lists(case_results(), max_size=4).map(
    lambda found: [r for position, r in enumerate(found) if r.id not in {s.id for s in found[:position]}])


def journal_of(path: Path, results, finish: bool) -> bytes:
    writer = JournalWriter(path, HEADER)
    for result in results:
        writer.append(result)
    if finish:
        writer.finish({"PASS": len(results)})
    writer.close()
    return path.read_bytes()


@PROPERTIES
@given(results=results_lists, finish=st.booleans())
def test_a_journal_reads_back_as_written(tmp_path_factory, results, finish) -> None:
    path = tmp_path_factory.mktemp("j") / "run.journal.jsonl"
    journal_of(path, results, finish)
    journal = read_journal(path)
    assert [case_json(r) for r in journal.results] == [case_json(r) for r in results]
    assert journal.complete == finish and not journal.torn and journal.header["configuration"] == HEADER["configuration"]


@PROPERTIES
@given(results=results_lists, cut=st.integers(min_value=0))
def test_a_journal_cut_anywhere_keeps_the_cases_before_the_cut(tmp_path_factory, results, cut) -> None:
    path = tmp_path_factory.mktemp("j") / "run.journal.jsonl"
    data = journal_of(path, results, finish=False)
    kept = data[: cut % (len(data) + 1)]
    path.write_bytes(kept)
    lines_before_cut = kept.count(b"\n")
    try:
        journal = read_journal(path)
    except ResultsError as exc:
        assert lines_before_cut == 0 and "no header line" in str(exc)  # only a torn header is unusable
        return
    assert [r.id for r in journal.results] == [r.id for r in results[: lines_before_cut - 1]]
    assert journal.valid_bytes == kept.rfind(b"\n") + 1 and journal.torn == (not kept.endswith(b"\n"))


@PROPERTIES
@given(results=results_lists, position=st.integers(min_value=0), byte=st.integers(0, 255))
def test_a_changed_byte_gives_a_journal_or_one_line(tmp_path_factory, results, position, byte) -> None:
    path = tmp_path_factory.mktemp("j") / "run.journal.jsonl"
    data = bytearray(journal_of(path, results, finish=True))
    data[position % len(data)] = byte
    path.write_bytes(bytes(data))
    try:
        read_journal(path)
    except ResultsError as exc:
        assert "\n" not in str(exc) and str(path) in str(exc)
