"""Repro bundles: every bundled case survives the trip through a bundle, and its DxDispatch model is one that
DxDispatch's parser accepts (as far as tests/triage/dxdispatch_schema.py writes that parser down)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from dmlconform.backends.base import OutcomeKind
from dmlconform.backends.numpy_backend import NumpyBackend
from dmlconform.case import Case
from dmlconform.case_result import Status
from dmlconform.feature_levels import HIGHEST
from dmlconform.triage.bundle import MODEL, SUITE, check_bundle, write_bundle
from dmlconform.triage.inspection import inspect_case
from tests.triage.dxdispatch_schema import STRUCTS, check_model


def _off_by_one(outputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The outputs with their first element one step up: a wrong answer under every rule."""
    wrong = {name: array.copy() for name, array in outputs.items()}
    for array in wrong.values():
        flat = array.reshape(-1)
        if array.dtype.kind == "f":
            flat.view(f"u{array.itemsize}")[0] ^= 1 << (8 * array.itemsize - 2)  # an exponent bit: far off
        else:
            flat[0] = flat[0] ^ 1
    return wrong


@pytest.mark.slow
@pytest.mark.tier_scan
def test_every_bundled_case_round_trips_through_a_bundle_and_judges_the_same(scanned_cases: list[Case], tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch):
    # What is checked is what a bundle holds. Its files are written atomically, each flushed to disk (fsync) with
    # its folder: on a busy disk that waiting was most of this test's time. Durability is atomic_file's to test.
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    backend = NumpyBackend()
    statuses = set()
    for number, case in enumerate(scanned_cases):
        outcome = backend.run(case)
        actual = _off_by_one(dict(outcome.outputs)) if outcome.kind is OutcomeKind.OUTPUTS else None
        folder = tmp_path / str(number)
        check = write_bundle(folder, case, actual, inspect_case(case, actual), ["--backend", "numpy"], None, None,
                             "test", HIGHEST)
        assert check.ok, (case.full_id, check)
        statuses.add(check.bundle_status)
        if any(0 in tensor.shape for tensor in case.description.tensors.values()):
            continue  # a negative case with an empty tensor: D3D12 has no empty resources for the model to declare
        assert check_model(folder / MODEL) == [], case.full_id
    assert {Status.FAIL, None} <= statuses  # wrong answers failed; negative cases have no outputs to judge


def test_a_bundle_whose_files_were_changed_no_longer_checks(bundled: list[Case], tmp_path: Path) -> None:
    case = next(c for c in bundled if c.full_id == "seed/max-pooling-grad-2x2")
    actual = dict(NumpyBackend().run(case).outputs)
    write_bundle(tmp_path, case, actual, inspect_case(case, actual), [], None, None, "test", HIGHEST)
    expected = tmp_path / "expected" / "OutputGradientTensor.npy"
    np.save(expected, np.load(expected) + 1)
    check = check_bundle(tmp_path, case, actual, HIGHEST)
    assert not check.tensors_identical and not check.ok
    assert check.bundle_status is Status.FAIL and check.case_status is Status.PASS


def test_the_one_case_suite_keeps_scalars_bit_exact_and_names_its_files(bundled: list[Case], tmp_path: Path) -> None:
    case = next(c for c in bundled if c.op.name == "ELEMENT_WISE_CLIP_GRAD1" and c.dtype.name == "FLOAT16")
    write_bundle(tmp_path, case, None, inspect_case(case, None), [], None, None, "none", HIGHEST)
    text = (tmp_path / SUITE).read_text()
    assert "Min: '0x" in text and "file: inputs/InputTensor.npy" in text
    model = json.loads((tmp_path / MODEL).read_text())
    desc = model["dispatchables"]["operator"]["desc"]
    assert desc["MinMaxDataType"] == "FLOAT16" and set(desc["Min"]) == {"UInt16"}
    assert int(np.float16(case.description.params["Min"]).view(np.uint16)) == desc["Min"]["UInt16"]


def test_a_bundle_keeps_a_refusal_candidate(bundled: list[Case], tmp_path: Path) -> None:
    from dmlconform.backends.base import Outcome
    from dmlconform.runner.judge import judge_outcome
    from dmlconform.suite.loader import load_paths

    case = next(c for c in bundled if c.refusal_candidate is not None)
    write_bundle(tmp_path, case, None, inspect_case(case, None), [], None, None, "none", HIGHEST)
    [loaded] = load_paths([tmp_path / SUITE])
    assert loaded.refusal_candidate == case.refusal_candidate
    refused = judge_outcome(loaded, Outcome.refused("E_INVALIDARG"), HIGHEST)
    assert refused.status is Status.PASS and refused.matched == case.refusal_candidate


@pytest.mark.parametrize("op", sorted(STRUCTS))
def test_the_model_checker_refuses_what_dxdispatch_would(bundled: list[Case], tmp_path: Path, op: str) -> None:
    case = next(c for c in bundled if c.op.name == op and not c.expect_invalid)
    write_bundle(tmp_path, case, None, inspect_case(case, None), [], None, None, "none", HIGHEST)
    assert check_model(tmp_path / MODEL) == []
    model = json.loads((tmp_path / MODEL).read_text())
    desc = model["dispatchables"]["operator"]["desc"]
    broken = [
        lambda m: m["dispatchables"]["operator"]["desc"].pop(next(reversed(desc))),  # a field missing
        lambda m: m["commands"][0]["bindings"].pop("OutputGradientTensor"),
        lambda m: m["resources"][case.op.inputs[0]].update(initialValuesDataType="INT8"),
        lambda m: m["commands"].append({"type": "compare", "resource": "OutputGradientTensor"}),
        lambda m: m["dispatchables"]["operator"]["desc"]["OutputGradientTensor"].update(Sizes=[0]),
    ]
    for number, breaks in enumerate(broken):
        changed = json.loads(json.dumps(model))
        breaks(changed)
        (tmp_path / "broken.json").write_text(json.dumps(changed))
        assert check_model(tmp_path / "broken.json"), number
    (tmp_path / "nan.json").write_text(json.dumps(model).replace('"nan"', "NaN", 1) if '"nan"' in json.dumps(model)
                                       else '{"resources": NaN}')
    assert check_model(tmp_path / "nan.json")


@pytest.mark.skipif(os.name == "nt", reason="POSIX permissions")
@pytest.mark.parametrize("umask,script_mode", [(0o022, 0o755), (0o077, 0o700), (0o002, 0o775)])
def test_bundle_files_honour_the_umask(bundled: list[Case], tmp_path: Path, umask: int, script_mode: int) -> None:
    """Files as open() makes them under the umask; reproduce.sh executable by whoever may read it (before: the
    files 0600 and the script 0711 whatever the umask)."""
    case = next(c for c in bundled if c.full_id == "seed/max-pooling-grad-2x2")
    previous = os.umask(umask)
    try:
        write_bundle(tmp_path, case, None, inspect_case(case, None), [], None, None, "none", HIGHEST)
    finally:
        os.umask(previous)
    modes = {p.relative_to(tmp_path).as_posix(): p.stat().st_mode & 0o777 for p in tmp_path.rglob("*") if p.is_file()}
    assert modes.pop("reproduce.sh") == script_mode
    assert modes and set(modes.values()) == {0o666 & ~umask}


@pytest.mark.parametrize("case_id", ["signed-zero-min", "nan-min-int32", "infinite-bounds-f32", "fractional-bounds-int32"])
def test_a_bundle_keeps_single_float_fields_bit_exact(bundled: list[Case], tmp_path: Path, case_id: str) -> None:
    """ClipGrad v0's Min and Max are single DML FLOATs: the bundle's suite writes their float32 bits (a -0.0, a NaN
    and an infinity read back as they were), show's desc prints them with their bits, and the DxDispatch model
    writes a non-finite one as the string DxDispatch's ParseFloat32Field reads."""
    from dmlconform.suite.loader import load_paths
    from dmlconform.triage.dml import describe

    case = next(c for c in bundled if c.full_id == f"clip_grad.edge/{case_id}")
    check = write_bundle(tmp_path, case, None, inspect_case(case, None), [], None, None, "none", HIGHEST)
    assert check.ok, check
    text = (tmp_path / SUITE).read_text()
    assert "Min: '0x" in text and "Max: '0x" in text
    [loaded] = load_paths([tmp_path / SUITE])
    for name in ("Min", "Max"):
        ours, theirs = (np.array(c.description.params[name], np.float32).view(np.uint32) for c in (case, loaded))
        assert ours == theirs, name
    assert check_model(tmp_path / MODEL) == []
    desc = json.loads((tmp_path / MODEL).read_text())["dispatchables"]["operator"]["desc"]
    assert list(desc) == ["InputTensor", "InputGradientTensor", "OutputGradientTensor", "Min", "Max"]
    low = case.description.params["Min"]
    assert desc["Min"] == ("nan" if np.isnan(low) else "-inf" if low == -np.inf else low)
    bits = int(np.array(low, np.float32).view(np.uint32))
    assert f"    Min = {np.float32(low)!s} (0x{bits:08x});" in describe(case)


@pytest.mark.parametrize("include", [False, True])
def test_a_bundle_writes_include_padding_as_a_dml_bool(bundled: list[Case], tmp_path: Path, include: bool) -> None:
    """AveragePoolingGrad's IncludePadding is a DML BOOL: the model writes it last, after the UINT arrays, as JSON
    true or false (DxDispatch's ParseBoolField takes nothing else: a 0 or 1 is refused), and show's desc as TRUE or
    FALSE."""
    from dmlconform.triage.dml import describe

    case = next(c for c in bundled if c.op.name == "AVERAGE_POOLING_GRAD" and not c.expect_invalid
                and bool(c.description.params["IncludePadding"]) is include)
    check = write_bundle(tmp_path, case, None, inspect_case(case, None), [], None, None, "none", HIGHEST)
    assert check.ok, check
    assert check_model(tmp_path / MODEL) == []
    model = json.loads((tmp_path / MODEL).read_text())
    desc = model["dispatchables"]["operator"]["desc"]
    assert list(desc) == ["InputGradientTensor", "OutputGradientTensor", "DimensionCount", "Strides", "WindowSize",
                          "StartPadding", "EndPadding", "IncludePadding"]
    assert desc["IncludePadding"] is include and desc["DimensionCount"] == len(desc["Strides"])
    assert f"    IncludePadding = {'TRUE' if include else 'FALSE'};" in describe(case)
    desc["IncludePadding"] = int(include)
    (tmp_path / "integer.json").write_text(json.dumps(model))
    assert check_model(tmp_path / "integer.json") == [f"AVERAGE_POOLING_GRAD.IncludePadding: {int(include)} is not a "
                                                       "BOOL (true or false)"]
