"""The resume journal: durable lines, a torn tail dropped, corruption and another run refused by field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dmlconform.case_result import Status
from dmlconform.results import ResultsError
from dmlconform.results.journal import JournalWriter, check_same_run, read_journal
from tests.results.helpers import result

HEADER = {"configuration": {"backend": "native", "settings": {"retries": 1, "repeat": 1}}}


def write(path: Path, count: int, finish: bool = False) -> None:
    writer = JournalWriter(path, HEADER)
    for index in range(count):
        writer.append(result(f"s/{index}", Status.PASS, index=index))
    if finish:
        writer.finish({"cases": count})
    writer.close()


def test_lines_read_back_and_the_end_record_marks_completion(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    write(path, 3)
    journal = read_journal(path)
    assert [r.id for r in journal.results] == ["s/0", "s/1", "s/2"] and not journal.complete and not journal.torn
    write(path, 2, finish=True)
    assert read_journal(path).complete


def test_a_torn_last_line_is_dropped_and_appending_cuts_it_off(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    write(path, 2)
    with path.open("ab") as file:
        file.write(b'{"case": {"id": "s/2", "sta')  # what a SIGKILL mid-write leaves
    journal = read_journal(path)
    assert journal.torn and [r.id for r in journal.results] == ["s/0", "s/1"]
    writer = JournalWriter(path, append_at=journal.valid_bytes)
    writer.append(result("s/2", Status.FAIL, index=2))
    writer.close()
    again = read_journal(path)
    assert not again.torn and [r.status for r in again.results] == [Status.PASS, Status.PASS, Status.FAIL]


@pytest.mark.parametrize(("damage", "words"), [
    (lambda lines: lines.insert(2, "not json"), "j.jsonl: line 3: is not JSON"),
    (lambda lines: lines.insert(2, "[1, 2]"), "j.jsonl: line 3: is not a JSON object"),
    (lambda lines: lines.insert(2, '{"what": 1}'), "j.jsonl: line 3: neither a case nor the end record"),
    (lambda lines: lines.__setitem__(0, '{"journal": "other/v9"}'), "j.jsonl: line 1: field journal: is 'other/v9'"),
    (lambda lines: lines.append(lines[1]), "j.jsonl: case s/0: appears twice"),
    (lambda lines: lines.__setitem__(1, lines[1].replace('"PASS"', '"SUPER"')),
     "line 2: case s/0: field status: unknown status 'SUPER'"),
])
def test_a_corrupt_journal_names_the_line_and_field(tmp_path: Path, damage, words: str) -> None:
    path = tmp_path / "j.jsonl"
    write(path, 2)
    lines = path.read_text().splitlines()
    damage(lines)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ResultsError) as info:
        read_journal(path)
    assert words in str(info.value) and "\n" not in str(info.value)


def test_another_run_configuration_is_refused_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    write(path, 1)
    journal = read_journal(path)
    check_same_run(journal, path, "configuration", json.loads(json.dumps(HEADER["configuration"])))
    other = {"backend": "native", "settings": {"retries": 0, "repeat": 1}}
    with pytest.raises(ResultsError) as info:
        check_same_run(journal, path, "configuration", other)
    assert "field configuration.settings.retries: is 1 in the journal but 0 in this run" in str(info.value)
