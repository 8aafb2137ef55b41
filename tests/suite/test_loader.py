"""Malformed suites are refused with one line naming the file, the case and the field."""

from pathlib import Path

import numpy as np
import pytest
import yaml

from dmlconform.suite import SuiteError
from dmlconform.suite.loader import load_paths

RELU = {
    "id": "r1", "op": "ACTIVATION_RELU_GRAD",
    "inputs": {"InputTensor": {"dtype": "FLOAT32", "shape": [2], "data": [1, -1]},
               "InputGradientTensor": {"dtype": "FLOAT32", "shape": [2], "data": [5, 6]}},
    "outputs": {"OutputGradientTensor": {"dtype": "FLOAT32", "shape": [2], "data": [5, 0]}},
}


def write(tmp_path: Path, cases: list, name: str = "s.yaml", **top) -> Path:
    document = {"format": "dmlconform/v1", "suite": "t", "cases": cases, **top}
    path = tmp_path / name
    path.write_text(yaml.safe_dump(document))
    return path


def load_error(tmp_path: Path, cases: list, **top) -> str:
    path = write(tmp_path, cases, **top)
    with pytest.raises(SuiteError) as info:
        load_paths([path])
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(str(path))
    return message


def with_(case: dict, path: str, value) -> dict:
    """A deep copy of case with the dotted path set (or removed when value is ...)."""
    import copy

    case = copy.deepcopy(case)
    *parents, last = path.split(".")
    node = case
    for key in parents:
        node = node[key]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return case


def test_a_good_case_loads(tmp_path):
    [case] = load_paths([write(tmp_path, [RELU])])
    assert case.full_id == "t/r1" and case.required_level.label == "3_0"
    assert case.expected["OutputGradientTensor"].tolist() == [5, 0]


@pytest.mark.parametrize("path,value,expected", [
    ("op", "RELU", "case 'r1': op: unknown operator"),
    ("inputs.InputTensor.dtype", "FLOAT8", "case 'r1': inputs.InputTensor.dtype: unknown data type"),
    ("inputs.InputTensor.shape", [2, -1], "inputs.InputTensor.shape"),
    ("inputs.InputTensor.data", [1, 2, 3], "inputs.InputTensor.data: has 3 elements, but shape [2] needs 2"),
    ("inputs.InputTensor.data", [1, "x"], "inputs.InputTensor.data: element 1"),
    ("inputs.InputTensor", ..., "inputs.InputTensor: missing"),
    ("inputs.Extra", {"dtype": "FLOAT32", "shape": [1], "data": [1]}, "inputs.Extra: not a tensor of this operator"),
    ("outputs", ..., "case 'r1': outputs: give exactly one of outputs or candidates"),
    ("tolerance", "loose", "case 'r1': tolerance: unknown tolerance"),
    ("expect", "fail", "case 'r1': expect:"),
    ("params", {"Alpha": 1}, "case 'r1': params.Alpha: unknown parameter"),
    ("colour", "red", "case 'r1': colour: unknown key"),
    ("inputs.InputTensor.datum", [1, 2], "inputs.InputTensor.datum: unknown key"),
    ("inputs.InputTensor.generate", {"dist": "uniform", "seed": 1}, "inputs.InputTensor.generate: give exactly one"),
    ("id", "has space", "id:"),
])
def test_malformed_fields_are_named(tmp_path, path, value, expected):
    assert expected in load_error(tmp_path, [with_(RELU, path, value)])


def test_shape_that_disagrees_between_tensors_is_a_suite_error_unless_marked_invalid(tmp_path):
    case = with_(RELU, "outputs.OutputGradientTensor", {"dtype": "FLOAT32", "shape": [3], "data": [0, 0, 0]})
    message = load_error(tmp_path, [case])
    assert "OutputGradientTensor.Sizes" in message and "expect: invalid" in message
    invalid = with_(case, "expect", "invalid")
    del invalid["outputs"]["OutputGradientTensor"]["data"]
    [loaded] = load_paths([write(tmp_path, [invalid], name="ok.yaml")])
    assert loaded.expect_invalid


def test_a_case_marked_invalid_must_break_a_rule(tmp_path):
    assert "satisfies every rule" in load_error(tmp_path, [with_(RELU, "expect", "invalid")])


def test_integer_tolerances_must_be_exact(tmp_path):
    case = {"id": "s", "op": "SLICE_GRAD", "tolerance": "ulp:1",
            "params": {"InputWindowOffsets": [0], "InputWindowSizes": [2], "InputWindowStrides": [1]},
            "inputs": {"InputGradientTensor": {"dtype": "INT32", "shape": [2], "data": [1, 2]}},
            "outputs": {"OutputGradientTensor": {"dtype": "INT32", "shape": [2], "data": [1, 2]}}}
    assert "integers are exact" in load_error(tmp_path, [case])


def test_duplicate_ids_and_suite_names(tmp_path):
    assert "duplicate case id" in load_error(tmp_path, [RELU, RELU])
    a = write(tmp_path, [RELU], name="a.yaml")
    b = write(tmp_path, [RELU], name="b.yaml")
    with pytest.raises(SuiteError, match="already used"):
        load_paths([a, b])


@pytest.mark.parametrize("text,expected", [
    ("format: dmlconform/v2\nsuite: x\ncases: []\n", "format"),
    ("format: dmlconform/v1\nsuite: x\ncases: []\n", "cases: must be a non-empty list"),
    ("format: dmlconform/v1\ncases: [1]\n", "suite:"),
    ("- just a list\n", "must be a YAML mapping"),
    ("format: [unclosed\n", "not valid YAML at line"),
    ("format: dmlconform/v1\nsuite: x\ncases: [3]\n", "case '#1': a case must be a mapping"),
    ("!!python/object/apply:os.system ['echo hacked']\n", "not valid YAML"),
    ("format: dmlconform/v1\nsuite: x\ncases: [1" + "0" * 5000 + "]\n", "cannot be read as YAML: Exceeds the limit"),
    # 20,000 nested sequences: the YAML reader either builds them (then the case is no mapping) or, in builds
    # of libyaml that cap nesting, refuses the document. Both are the one-line refusal this test is about.
    ("format: dmlconform/v1\nsuite: x\ncases: !!seq " + "[" * 20000 + "]" * 20000 + "\n",
     "a case must be a mapping|not valid YAML at line 3: exceeded maximum nesting depth"),
])
def test_broken_documents(tmp_path, text, expected):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(SuiteError, match=expected):
        load_paths([path])


def test_missing_paths_and_empty_folders(tmp_path):
    with pytest.raises(SuiteError, match="no such file"):
        load_paths([tmp_path / "nope.yaml"])
    with pytest.raises(SuiteError, match="no suite files"):
        load_paths([tmp_path])


class TestFiles:
    def case(self, reference: str) -> dict:
        return with_(RELU, "inputs.InputGradientTensor", {"dtype": "FLOAT32", "shape": [2], "file": reference})

    def test_npy_and_npz_load(self, tmp_path):
        np.save(tmp_path / "g.npy", np.array([5, 6], dtype=np.float32))
        np.savez(tmp_path / "g.npz", dy=np.array([5, 6], dtype=np.float32))
        for reference in ("g.npy", "g.npz:dy"):
            [case] = load_paths([write(tmp_path, [self.case(reference)])])
            assert case.inputs["InputGradientTensor"].tolist() == [5, 6]

    @pytest.mark.parametrize("reference,expected", [
        ("../outside.npy", "outside the suite tree"),
        ("missing.npy", "does not exist"),
        ("g.npz", "name the array"),
        ("g.npz:nope", "has no array 'nope'"),
        ("g64.npy", "holds float64, but dtype says FLOAT32"),
        ("obj.npy", "pickle"),
        ("g.txt", "must be a .npy file"),
        ("bad.npz:x", "not a readable .npz"),
    ])
    def test_bad_files(self, tmp_path, reference, expected):
        suite = tmp_path / "suite"
        suite.mkdir()
        np.save(tmp_path / "outside.npy", np.array([5, 6], dtype=np.float32))
        np.savez(suite / "g.npz", dy=np.array([5, 6], dtype=np.float32))
        np.save(suite / "g64.npy", np.array([5, 6], dtype=np.float64))
        np.save(suite / "obj.npy", np.array([{"a": 1}, 2], dtype=object), allow_pickle=True)
        (suite / "g.txt").write_text("5 6")
        (suite / "bad.npz").write_bytes(b"not a zip")
        with pytest.raises(SuiteError, match=expected) as info:
            load_paths([write(suite, [self.case(reference)])])
        assert "inputs.InputGradientTensor.file" in str(info.value)

    def test_a_symlink_out_of_the_tree_is_refused(self, tmp_path):
        suite = tmp_path / "suite"
        suite.mkdir()
        np.save(tmp_path / "secret.npy", np.array([5, 6], dtype=np.float32))
        (suite / "link.npy").symlink_to(tmp_path / "secret.npy")
        with pytest.raises(SuiteError, match="outside the suite tree"):
            load_paths([write(suite, [self.case("link.npy")])])


def _with_refusal(candidates: dict) -> dict:
    case = with_(RELU, "outputs", ...)
    case["candidates"] = candidates
    return case


def test_a_refusal_candidate_is_named_and_leaves_the_output_candidates(tmp_path):
    answer = RELU["outputs"]
    [case] = load_paths([write(tmp_path, [_with_refusal({"computed": answer, "refused": "refused"})])])
    assert case.refusal_candidate == "refused" and list(case.candidates) == ["computed"]
    assert list(case.answers()) == ["computed"]


@pytest.mark.parametrize("candidates,expected", [
    ({"refused": "refused"}, "at least one candidate with outputs"),
    ({"a": RELU["outputs"], "r1": "refused", "r2": "refused"}, "candidates.r2: a second refusal"),
    ({"a": RELU["outputs"], "b": "refuse"}, "candidates.b"),
])
def test_refusal_candidates_are_checked(tmp_path, candidates, expected):
    assert expected in load_error(tmp_path, [_with_refusal(candidates)])


def _alias_document(data_yaml: str) -> str:
    """A ReluGrad suite whose InputTensor data is `data_yaml`, after anchors defined under `x:`."""
    return """format: dmlconform/v1
suite: aliases
x:
  - &l0 [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
""" + "".join(f"  - &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]\n" for i in range(1, 10)) + f"""cases:
  - id: a
    op: ACTIVATION_RELU_GRAD
    inputs:
      InputTensor: {{dtype: FLOAT32, shape: [4], data: {data_yaml}}}
      InputGradientTensor: {{dtype: FLOAT32, shape: [4], data: [1, 2, 3, 4]}}
    outputs:
      OutputGradientTensor: {{dtype: FLOAT32, shape: [4], data: [1, 2, 3, 4]}}
"""


@pytest.mark.parametrize("data_yaml,message", [
    ("*l9", "nests more than 74 lists and elements, far more than shape [4] needs"),  # 10^10 elements in 1 KB
    ("&me [1, *me]", "refers to itself"),
    ("&me [*me]", "refers to itself"),
    ("[*l0]", "has 10 elements, but shape [4] needs 4"),
])
def test_alias_bombs_in_data_are_refused_at_once(tmp_path, data_yaml, message):
    """Before: the first walked 10^10 elements (hung), the others raised RecursionError (a traceback)."""
    path = tmp_path / "s.yaml"
    path.write_text(_alias_document(data_yaml))
    with pytest.raises(SuiteError) as caught:
        load_paths([path])
    assert f"case 'a': inputs.InputTensor.data: {message}" in str(caught.value)


@pytest.mark.parametrize("bad_id", ["a\n", "max-pooling-grad-2x2\n\n'", "x\r"])
def test_an_id_with_a_line_break_is_refused_in_one_line(tmp_path, bad_id):
    """Found by fuzz/fuzz_suite_yaml.py: the id went raw into the message (three lines at the CLI), and `^...$`
    took "a\\n" as a valid id."""
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"format": "dmlconform/v1", "suite": "s", "cases": [
        {"id": bad_id, "op": "ACTIVATION_RELU_GRAD"}]}))
    with pytest.raises(SuiteError) as caught:
        load_paths([path])
    assert "\n" not in str(caught.value) and "case '#1': id:" in str(caught.value)
