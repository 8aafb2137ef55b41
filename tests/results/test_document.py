"""The JSON result reads back into the run that wrote it; files of another format are refused by field."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from dmlconform.case_result import AppliedWaiver, MovedElement, Status
from dmlconform.compare.comparator import Element
from dmlconform.compare.tolerance import Tolerance
from dmlconform.report.json_report import write_json
from dmlconform.results import ResultsError
from dmlconform.results.document import dotted, first_difference, read_document, to_document, value_at
from dmlconform.run_result import ExpectationFile, Shard
from dmlconform.ulp_histogram import UlpBucket
from tests.results.helpers import result, run


def full_run():
    failing = result("s/b", Status.FAIL, index=1)
    failing.tolerance, failing.max_ulp, failing.worst_index = Tolerance.parse("ulp:2"), 7, (0, 1)
    failing.worst = [Element((0, 1), "1.0 (0x3f800000)", "1.0000008 (0x3f800007)", 7, "2 ULP")]
    failing.closeness, failing.artifacts = 3.5, {"OutputGradientTensor": "art/s/b/OutputGradientTensor.npy"}
    failing.ulp_histogram = [UlpBucket(0, 0, 5), UlpBucket(4, 7, 1), UlpBucket(None, None, 1)]
    flaky = result("s/c", Status.FLAKE, index=2, outcome=Status.CRASH)
    flaky.attempts = (Status.CRASH, Status.PASS)
    flaky.moved, flaky.moved_count = [MovedElement("OutputGradientTensor", (3,), ("1.0", "2.0"))], 4
    known = result("s/d", Status.EXPECTED_FAIL, index=3, outcome=Status.FAIL)
    known.baseline, known.expectation = Status.FAIL, "fails.csv:1"
    exact_miss = result("s/e", Status.FAIL, index=4)
    exact_miss.tolerance, exact_miss.closeness = Tolerance.exact(), math.inf
    passing = result("s/a", Status.PASS)
    passing.closeness, passing.output_sha256 = 0.25, "0123456789abcdef" * 4
    made = run([passing, failing, flaky, known, exact_miss], shard=Shard(2, 3), cases=10)
    made.expectations = [ExpectationFile("baseline", "fails.csv", "a" * 64)]
    made.interrupted, made.resumed = "SIGINT", 2
    return made


def test_a_written_result_reads_back_field_for_field(tmp_path: Path) -> None:
    original = full_run()
    write_json(original, tmp_path / "r.json")
    again = read_document(tmp_path / "r.json")
    assert to_document(again) == to_document(original)
    assert again.results[2].attempts == (Status.CRASH, Status.PASS) and again.shard == Shard(2, 3)
    assert again.results[1].ulp_histogram[-1].nonfinite and again.results[1].closeness == 3.5
    assert again.results[4].closeness == math.inf and to_document(again)["cases"][4]["closeness"] == "inf"
    assert again.results[0].output_sha256 == "0123456789abcdef" * 4 and again.results[1].output_sha256 is None


def test_a_contract_v1_file_without_the_additions_still_reads(tmp_path: Path) -> None:
    data = to_document(full_run())
    for key in ("suite", "shard", "settings", "expectations", "interrupted", "resumed", "shards", "missing_shards",
                "determinism"):
        del data[key]
    for case in data["cases"]:
        for key in ("index", "attempts", "baseline", "expectation", "moved", "moved_count", "closeness",
                    "ulp_histogram", "artifacts", "output_sha256"):
            del case[key]
    (tmp_path / "v1.json").write_text(json.dumps(data))
    again = read_document(tmp_path / "v1.json")
    assert [r.index for r in again.results] == [0, 1, 2, 3, 4] and again.suite is None
    assert all(r.closeness is None and not r.ulp_histogram and not r.artifacts and r.output_sha256 is None
               for r in again.results)


@pytest.mark.parametrize(("change", "words"), [
    (lambda d: d.update(format="junit"), "r.json: field format: is 'junit', not 'dmlconform-result/v1'"),
    (lambda d: d["cases"][1].update(status="GREAT"), "r.json: case s/b: field status: unknown status 'GREAT'"),
    (lambda d: d["cases"][0].update(rank="two"), "r.json: case s/a: field rank: is str \"two\", expected int"),
    (lambda d: d["cases"][1]["worst_elements"][0].pop("index"),
     "r.json: case s/b: field worst_elements[0].index: missing"),
    (lambda d: d["backend"].update(feature_level="9_9"), "r.json: field backend.feature_level: unknown feature level"),
    (lambda d: d.pop("cases"), "r.json: field cases: missing"),
    (lambda d: d["cases"][1].update(closeness="far"), "r.json: case s/b: field closeness: is 'far', expected a number"),
    (lambda d: d["cases"][1]["ulp_histogram"][0].pop("count"), "case s/b: field ulp_histogram[0].count: missing"),
    (lambda d: d["cases"][1].update(artifacts={"OutputGradientTensor": 3}),
     "case s/b: field artifacts.OutputGradientTensor: is int, expected a path"),
    # Lists of names and indices are checked item by item: a CI run's hypothesis found reports crashing on these.
    (lambda d: d["cases"][1].update(matched_all=[None, "x"]), "case s/b: field matched_all[0]: is NoneType null"),
    (lambda d: d["cases"][1].update(matched_all=[[]]), "case s/b: field matched_all[0]: is list [], expected str"),
    (lambda d: d["cases"][1].update(tags=["ok", {}]), "case s/b: field tags[1]: is dict {}, expected str"),
    (lambda d: d["cases"][1].update(worst_index=[0, True]), "case s/b: field worst_index[1]: is bool true"),
    (lambda d: d["cases"][1]["worst_elements"][0].update(index=[1.5]),
     "case s/b: field worst_elements[0].index[0]: is float 1.5, expected int"),
    (lambda d: d["cases"][2]["moved"][0].update(values=["1.0", 2]),
     "case s/c: field moved[0].values[1]: is int 2, expected str"),
    (lambda d: d["cases"][1]["ulp_histogram"][0].update(count=-1), "case s/b: field ulp_histogram[0].count: is -1"),
    (lambda d: d["cases"][1]["ulp_histogram"][1].update(low=9), "case s/b: field ulp_histogram[1].high: is 7 with low 9"),
    (lambda d: d["cases"][1]["ulp_histogram"][2].update(low=0), "field ulp_histogram[2].high: is None with low 0"),
    (lambda d: d["cases"][1].update(worst_index=[0, -1]), "case s/b: field worst_index[1]: is -1, expected an index"),
    (lambda d: d["cases"][2].update(moved_count=-4), "case s/c: field moved_count: is -4, expected 0 or more"),
    (lambda d: d["cases"][0].update(output_sha256="0123456789ABCDEF" * 4),
     "case s/a: field output_sha256: is '0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF', expected "
     "64 lowercase hex digits"),
    (lambda d: d["cases"][0].update(output_sha256="abc"), "case s/a: field output_sha256: is 'abc', expected 64"),
    (lambda d: d["cases"][0].update(output_sha256="0" * 64 + "\n"), "field output_sha256: is '" + "0" * 64 + "\\n'"),
    (lambda d: d["cases"][0].update(output_sha256=12), "case s/a: field output_sha256: is int 12, expected str"),
])
def test_unreadable_fields_are_named(tmp_path: Path, change, words: str) -> None:
    data = to_document(full_run())
    change(data)
    (tmp_path / "r.json").write_text(json.dumps(data))
    with pytest.raises(ResultsError) as info:
        read_document(tmp_path / "r.json")
    assert words in str(info.value)


def test_not_json_at_all(tmp_path: Path) -> None:
    (tmp_path / "r.json").write_text("<testsuites/>")
    with pytest.raises(ResultsError, match=r"r\.json: is not JSON"):
        read_document(tmp_path / "r.json")


def test_first_difference_names_the_dotted_field() -> None:
    assert dotted(first_difference({"a": {"b": [1, {"c": 2}]}}, {"a": {"b": [1, {"c": 3}]}})) == "a.b[1].c"
    assert first_difference({"a": 1}, {"a": 1}) is None
    assert dotted(first_difference({"a": 1}, {"a": 1, "z": 0})) == "z"


def test_a_waived_case_is_written_as_what_it_came_to_with_the_waiver_beside_it(tmp_path: Path) -> None:
    """WAIVED is not a contract v1 status: v1 readers see the failure, and dmlconform reads WAIVED back."""
    waived = result("s/w", Status.WAIVED, index=1, outcome=Status.CRASH)
    waived.waiver = AppliedWaiver("W-1", "the driver crashes here", "board", "2025-06-01")
    original = run([result("s/a", Status.PASS), waived])
    write_json(original, tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    case = data["cases"][1]
    assert (case["status"], case["outcome"]) == ("CRASH", None)
    assert case["waiver"] == {"id": "W-1", "reason": "the driver crashes here", "granted_by": "board",
                              "date": "2025-06-01"}
    assert data["summary"] == {"PASS": 1, "CRASH": 1} and data["feature_levels"]["6_4"]["waived"] == 1
    again = read_document(tmp_path / "r.json")
    assert (again.results[1].status, again.results[1].outcome, again.results[1].waiver) == (
        Status.WAIVED, Status.CRASH, waived.waiver)
    assert to_document(again) == to_document(original)
    case.update(status="PASS")  # a waiver covers only a failure
    (tmp_path / "r.json").write_text(json.dumps(data))
    with pytest.raises(ResultsError, match="case s/w: field waiver: covers a case whose status is PASS"):
        read_document(tmp_path / "r.json")


def test_first_difference_takes_any_key_and_any_depth() -> None:
    """Found by fuzz/fuzz_journal.py: a journal header key with '[' in it made value_at raise ValueError (parsing
    the dotted name back); and recursion ran out of stack on values nested as deep as json.loads reads."""
    ours, theirs = {"backen[d": {"a.b": 1}}, {"backen[d": {"a.b": 2}}
    path = first_difference(ours, theirs)
    assert path == ("backen[d", "a.b") and value_at(ours, path) == 1 and value_at(theirs, path) == 2
    deep_ours, deep_theirs = json.loads("[" * 900 + "1" + "]" * 900), json.loads("[" * 900 + "2" + "]" * 900)
    assert first_difference(deep_ours, deep_theirs) == (0,) * 900



@pytest.mark.parametrize("shard,words", [({"index": 1, "count": 10**9}, "shard 1/1000000000 is not I/N"),
                                         ({"index": 0, "count": 3}, "shard 0/3"), ({"index": 4, "count": 3}, "4/3")])
def test_a_shard_out_of_range_is_refused(tmp_path: Path, shard: dict, words: str) -> None:
    """Found by fuzz/fuzz_result_document.py: a shard count of 10^9 made `merge` list a billion missing shards
    (a hang, 1.3 GB before it was stopped)."""
    document = to_document(full_run())
    document["shard"] = shard
    path = tmp_path / "r.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ResultsError, match=words):
        read_document(path)


@pytest.mark.parametrize("field,value,words", [("shards", [[1]], "field shards[0]: is not a JSON object"),
                                               ("missing_shards", ["[/]"], "must be a list of shard numbers")])
def test_merged_shard_lists_are_checked(tmp_path: Path, field: str, value: object, words: str) -> None:
    """Found by tests/results/test_document_properties.py: a shard entry that is not an object raised
    AttributeError in the console report."""
    document = to_document(full_run())
    document[field] = value
    path = tmp_path / "r.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ResultsError, match=re.escape(words)):
        read_document(path)


def test_an_xz_copy_reads_as_the_file_and_a_broken_or_oversized_one_is_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import lzma

    from dmlconform.results import document

    plain = tmp_path / "r.json"
    write_json(run([result("s/a", Status.PASS), result("s/b", Status.FAIL, index=1)]), plain)
    packed = tmp_path / "r.json.xz"
    packed.write_bytes(lzma.compress(plain.read_bytes()))
    assert to_document(read_document(packed)) == to_document(read_document(plain))
    for name, data, says in (("torn.json.xz", packed.read_bytes()[:40], "xz stream ends early"),
                             ("bad.json.xz", b"\xfd7zXZ\x00garbage", "not a readable xz file")):
        (tmp_path / name).write_bytes(data)
        with pytest.raises(ResultsError, match=says) as info:
            read_document(tmp_path / name)
        assert "\n" not in str(info.value) and str(info.value).startswith(str(tmp_path / name))
    monkeypatch.setattr(document, "MAX_DOCUMENT_BYTES", 100)  # bounded before it is read (or inflated) whole
    for path in (plain, packed):
        with pytest.raises(ResultsError, match="larger than 0 MiB of JSON"):
            read_document(path)
