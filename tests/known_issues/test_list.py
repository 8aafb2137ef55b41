"""The known-issue list: its format (every malformed file is one line naming the file, the issue and the field), the
release a backend loaded, and which list a run applies for it (or why none)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dmlconform.backend_info import BackendInfo
from dmlconform.case_result import CaseResult, Status
from dmlconform.feature_levels import HIGHEST
from dmlconform.known_issues import (
    MAX_LIST_BYTES,
    KnownIssueChoice,
    KnownIssueError,
    Mode,
    canonical_bytes,
    load_known_issues,
    loaded_release,
    parse_known_issues,
    parse_release_issues,
    release_of,
    shipped,
)

REPO = Path(__file__).resolve().parents[2]

LIST = """\
format: dmlconform-known-issues/v1
date: 2026-11-27
measured:
  directml: [1.15.4, 1.16.0]
issues:
  - id: TEST-WINDOW-ZERO
    title: accepts a window of size 0
    releases: [1.15.4]
    backends: [directml]
    cases: ['slice_grad.invalid/window-size-zero']
    evidence: [here]
    reference: a test
"""


def case(case_id: str, status: Status = Status.FAIL, message: str = "", op: str = "SLICE_GRAD") -> CaseResult:
    return CaseResult(case_id, op, "FLOAT32", 2, HIGHEST, status, message=message)


def directml(version: str = "1.15.4.0", name: str = "directml", **extra: str) -> BackendInfo:
    return BackendInfo(name, "v", "device", HIGHEST, "", {"directml_dll_version": version, **extra})


def test_the_shipped_list_reads_and_names_every_release_it_was_made_from():
    listing = shipped()
    assert listing.source.startswith("dmlconform ")
    assert "1.15.4" in listing.measured["directml"] and "1.8.0" in listing.measured["directml"]
    assert {i.id for i in listing.for_release("1.15.4", "directml").issues} == {
        "DML-SLICE-GRAD-WINDOW-SIZE-ZERO", "DML-MAX-POOLING-GRAD-DIMENSION-COUNT", "DML-RESAMPLE-GRAD1-NAN-OFFSETS",
        "DML-SLICE-GRAD-MERGED-AXES", "DML-MAX-POOLING-GRAD-LOWEST-WINDOWS", "DML-RESAMPLE-GRAD-NAN-OFFSETS",
        "DML-AVERAGE-POOLING-GRAD-ZERO-STRIDE-OR-WINDOW", "DML-CLIP-GRAD-INT64-SIGNED-LOW-WORD"}
    # measured: through the EP only DirectML's INT64 comparison fails (the graphs' Less/Greater)
    assert [i.id for i in listing.for_release("1.15.4", "onnxruntime-dml").issues] == ["DML-EP-INT64-SIGNED-LOW-WORD"]
    for issue in listing.issues:
        assert (REPO / issue.reference.split(" ")[0].rstrip(";,")).exists(), issue.reference


@pytest.mark.parametrize("edit,message", [
    (lambda t: "format: [", "not YAML"),
    (lambda t: t.replace("known-issues/v1", "known-issues/v9"), "field format: is 'dmlconform-known-issues/v9'"),
    (lambda t: t.replace("date: 2026-11-27", "date: soon"), "field date: missing or not a date"),
    (lambda t: t + "extra: 1\n", "field extra: is not a field of a known-issue list"),
    (lambda t: t.replace("    title: accepts", "    colour: red\n    title: accepts"),
     "issue TEST-WINDOW-ZERO: field colour: is not a known-issue field"),
    (lambda t: t.replace("id: TEST-WINDOW-ZERO", "id: test zero"), "field id: 'test zero': an id is"),
    (lambda t: t.replace("releases: [1.15.4]", "releases: [latest]"),
     "issue TEST-WINDOW-ZERO: field releases[0]: 'latest' is not a DirectML version"),
    (lambda t: t.replace("releases: [1.15.4]", "releases: [1.9.0]"),
     "issue TEST-WINDOW-ZERO: field releases: 1.9.0 through directml is not in measured"),
    (lambda t: t.replace("backends: [directml]", "backends: [vulkan]"), "field backends[0]: 'vulkan' is not one of"),
    (lambda t: t.replace("'slice_grad.invalid/window-size-zero'", "'slice_grad.(unclosed'"),
     "field cases[0]: 'slice_grad.(unclosed' is not a regular expression"),
    (lambda t: t.replace("    evidence: [here]", "    outcomes: [PASS]\n    evidence: [here]"),
     "field outcomes[0]: 'PASS' is not a failure status"),
    (lambda t: t.replace("    evidence: [here]", "    occurs: often\n    evidence: [here]"),
     "field occurs: 'often' is not always or sometimes"),
    (lambda t: t.replace("    evidence: [here]", "    ops: [SLICE]\n    evidence: [here]"),
     "field ops[0]: 'SLICE' is not an operator"),
    (lambda t: t.replace("    evidence: [here]\n", ""), "field evidence: must be a non-empty list"),
    (lambda t: t.replace("    reference: a test\n", ""), "field reference: missing"),
    (lambda t: t + t[t.index("  - id"):], "issues[1]: field id: 'TEST-WINDOW-ZERO' is used by two issues"),
    (lambda t: t.replace("measured:\n  directml: [1.15.4, 1.16.0]\n", ""), "field measured: must map backends"),
])
def test_a_malformed_list_is_one_line_naming_the_file_the_issue_and_the_field(edit, message, tmp_path: Path):
    path = tmp_path / "mine.yaml"
    path.write_text(edit(LIST))
    with pytest.raises(KnownIssueError) as caught:
        load_known_issues(path)
    text = str(caught.value)
    assert text.startswith(str(path)) and message in text and "\n" not in text


def test_a_list_is_bounded_before_it_is_read(tmp_path: Path):
    path = tmp_path / "huge.yaml"
    with path.open("wb") as out:
        out.truncate(MAX_LIST_BYTES + 1)
    with pytest.raises(KnownIssueError, match="is larger than 4 MiB; not read"):
        load_known_issues(path)
    with pytest.raises(KnownIssueError, match="cannot be read"):
        load_known_issues(tmp_path / "absent.yaml")


@pytest.mark.parametrize("text,release", [("1.15.4.0", "1.15.4"), ("DirectML 1.9.0.0", "1.9.0"), ("1.15.4", "1.15.4"),
                                          ("", None), ("unknown", None), ("1.15", None)])
def test_the_release_is_the_dll_version_without_its_last_part(text: str, release: str | None):
    assert release_of(text) == release


def test_the_backends_that_load_directml():
    assert loaded_release(directml()) == ("directml", "1.15.4")
    native = BackendInfo("native", "v", "d", HIGHEST, "", {"api": "DirectML 1.13.1.0"})
    assert loaded_release(native) == ("directml", "1.13.1")
    assert loaded_release(BackendInfo("native", "v", "d", HIGHEST, "", {"api": "in-process backend 'numpy'"})) is None
    ep = BackendInfo("onnxruntime", "v", "d", HIGHEST, "", {"provider": "DmlExecutionProvider", "directml": "1.15.4.0"})
    assert loaded_release(ep) == ("onnxruntime-dml", "1.15.4")
    cpu = BackendInfo("onnxruntime", "v", "d", HIGHEST, "", {"provider": "CPUExecutionProvider"})
    assert loaded_release(cpu) is None and loaded_release(BackendInfo("numpy", "v", "d", HIGHEST)) is None


def test_which_list_a_run_applies_or_why_none():
    listing = parse_known_issues(LIST.encode(), "mine.yaml")
    choice = KnownIssueChoice(Mode.ON, listing)
    applied = choice.resolve(directml())
    assert applied is not None and applied.issues is not None
    assert [i.id for i in applied.issues.issues] == ["TEST-WINDOW-ZERO"]
    assert applied.note.startswith("DirectML 1.15.4: 1 known issue(s) through directml from mine.yaml's list")
    measured_none = choice.resolve(directml("1.16.0.0"))
    assert measured_none is not None and measured_none.issues is not None and measured_none.issues.issues == ()
    unknown = choice.resolve(directml("1.16.3.0"))
    assert unknown is not None and unknown.issues is None
    assert "mine.yaml has no known-issue list for it through directml (it has directml 1.15.4, 1.16.0)" in unknown.note
    no_version = choice.resolve(directml(""))
    assert no_version is not None and no_version.issues is None and "version is unknown" in no_version.note
    off = KnownIssueChoice(Mode.OFF, listing).resolve(directml())
    assert off is not None and off.issues is None and "--known-issues off" in off.note
    assert choice.resolve(BackendInfo("numpy", "v", "d", HIGHEST)) is None
    named = KnownIssueChoice(Mode.ON, listing, "1.15.4").checked().resolve(directml("1.16.3.0"))
    assert named is not None and named.issues is not None and named.issues.release == "1.15.4"
    assert "as --known-issues-release says (DirectML 1.16.3 loaded)" in named.note


@pytest.mark.parametrize("release,message", [("9.9.9", "has no known-issue list for DirectML 9.9.9; it has"),
                                             ("newest", "'newest' is not a DirectML version")])
def test_an_unknown_release_named_is_one_line(release: str, message: str):
    with pytest.raises(KnownIssueError, match=message):
        KnownIssueChoice(Mode.ON, None, release).checked()


def test_an_issue_explains_its_outcome_and_message_only():
    listing = shipped()
    issues = listing.for_release("1.10.1", "directml")
    removed = case("relu_grad.smoke/x", Status.CRASH, "IDMLDevice::CreateOperator returned DXGI_ERROR_DEVICE_REMOVED",
                   op="ACTIVATION_RELU_GRAD")
    assert issues.issue_for(removed, Status.CRASH).id == "DML-1.10.1-DEVICE-REMOVED"
    other_crash = case("relu_grad.smoke/x", Status.CRASH, "exit code 86", op="ACTIVATION_RELU_GRAD")
    assert issues.issue_for(other_crash, Status.CRASH) is None  # a crash of another kind is the device's
    unwritten = case("slice_grad.smoke/any", Status.FAIL)
    assert issues.issue_for(unwritten, Status.FAIL).id == "DML-1.10.1-SLICE-GRAD-UNWRITTEN"
    relu = case("relu_grad.smoke/any", Status.FAIL, op="ACTIVATION_RELU_GRAD")
    assert issues.issue_for(relu, Status.FAIL) is None  # ops: SLICE_GRAD only


def test_a_release_list_round_trips_and_a_changed_copy_is_refused():
    issues = shipped().for_release("1.15.4", "directml")
    raw = canonical_bytes(issues)
    again = parse_release_issues(raw, "known-issues.json")
    assert again == issues and again.sha256 == issues.sha256
    with pytest.raises(KnownIssueError, match="not in the canonical form"):
        parse_release_issues(raw.replace(b'\n "date"', b'\n  "date"'), "known-issues.json")
    edited = parse_release_issues(raw.replace(b"accepts a Slice window", b"accepts a slice window"), "x")
    assert edited.sha256 != issues.sha256  # what certification.json records catches an edit in canonical form
    with pytest.raises(KnownIssueError, match="is not JSON"):
        parse_release_issues(b"{", "known-issues.json")
