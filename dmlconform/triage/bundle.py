"""A repro bundle: one case, self-contained, for a driver team that may not have dmlconform.

    DIR/suite.yaml          the case as a one-case suite (tensors as .npy files beside it)
    DIR/inputs/*.npy        the operator's inputs
    DIR/expected/*.npy      the expected outputs (candidates/<name>/*.npy where the docs allow several)
    DIR/actual/*.npy        what the backend returned, when known
    DIR/dxdispatch.json     a DxDispatch model of the DirectML operator on those inputs
    DIR/result.json         the recorded result of the case and the run's backend and settings
    DIR/README.md           what the case is, the rule, the worst elements, and the commands
    DIR/reproduce.sh        the dmlconform command line that reproduces the result

Writing the bundle checks it: the bundle's suite is loaded back as `dmlconform run` would load it, its
tensors must be bit-identical to the case's, and the actual outputs judged against it must come to the same
status as against the original case.
"""

from __future__ import annotations

import json
import math
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from dmlconform.atomic_file import write_atomically
from dmlconform.backends.base import Outcome
from dmlconform.case import Case
from dmlconform.case_result import CaseResult, Status
from dmlconform.feature_levels import FeatureLevel
from dmlconform.ops.base import ParamKind
from dmlconform.results.artifacts import save_npy
from dmlconform.results.document import backend_json, case_json
from dmlconform.run_result import RunResult
from dmlconform.runner.judge import judge_outcome
from dmlconform.suite.loader import FORMAT, load_paths
from dmlconform.surface.paths import ExecutionPath, split_case_id
from dmlconform.triage import TriageError
from dmlconform.triage.dml import desc_struct, describe, dxdispatch_model, scalar_value
from dmlconform.triage.inspection import Inspection

SUITE, MODEL, README, SCRIPT, RESULT = "suite.yaml", "dxdispatch.json", "README.md", "reproduce.sh", "result.json"
DXDISPATCH_OUTPUT = "dxdispatch_output.npy"


@dataclass
class BundleCheck:
    """What loading the bundle back showed."""

    tensors_identical: bool
    #: The actual outputs judged against the bundle's suite, and against the original case (None without them).
    bundle_status: Status | None = None
    case_status: Status | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.tensors_identical and self.bundle_status == self.case_status and not self.problems


def _tensor_entry(dtype: str, shape: tuple[int, ...], file: str | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"dtype": dtype, "shape": list(shape)}
    if file is not None:
        entry["file"] = file
    return entry


def _param_value(case: Case, name: str, value: Any) -> Any:
    """A parameter as the suite format reads it back exactly: floats in scalars and single FLOATs by their bit
    pattern."""
    kind = next((p.kind for p in case.op.params if p.name == name), None)
    if kind is ParamKind.SCALAR:
        scalar = scalar_value(value, case.dtype)
        if case.dtype.is_float:
            bits = int(scalar.view(case.dtype.bits_dtype))
            return f"0x{bits:0{case.dtype.numpy.itemsize * 2}x}"
        return int(scalar)
    if kind is ParamKind.FLOAT:  # a DML FLOAT whatever the tensors' type: its float32 bits
        return f"0x{int(np.array(value, np.float32).view(np.uint32)):08x}"
    if name == "MinMaxDataType":
        return value.name
    if isinstance(value, tuple):
        return [float(v) if isinstance(v, float) else int(v) for v in value]
    return value


def suite_document(case: Case, files: dict[str, str], answer_files: dict[str, dict[str, str]],
                   description: str) -> dict[str, Any]:
    tensors = case.description.tensors
    # The suite's own id: a case on another path (`relu@graph`) is the suite's case run with `--path`.
    entry: dict[str, Any] = {"id": split_case_id(case.id)[0], "op": case.op.name,
                             "params": {k: _param_value(case, k, v) for k, v in case.description.params.items()}}
    entry["inputs"] = {n: _tensor_entry(tensors[n].dtype.name, tensors[n].shape, files[n]) | _layout(case, n)
                       for n in case.op.inputs}
    if case.expect_invalid:
        entry["expect"] = "invalid"
        entry["outputs"] = {n: _tensor_entry(tensors[n].dtype.name, tensors[n].shape, None) | _layout(case, n)
                            for n in case.op.outputs}
    elif case.expected is not None:
        entry["outputs"] = {n: _tensor_entry(tensors[n].dtype.name, tensors[n].shape,
                                             answer_files[""][n]) | _layout(case, n) for n in case.op.outputs}
    else:
        entry["candidates"] = {c: {n: _tensor_entry(tensors[n].dtype.name, tensors[n].shape,
                                                    answer_files[c][n]) | _layout(case, n) for n in case.op.outputs}
                               for c, arrays in case.candidates.items()}
        if case.refusal_candidate is not None:
            entry["candidates"][case.refusal_candidate] = "refused"
    if case.tolerance is not None:
        entry["tolerance"] = str(case.tolerance)
    if case.tags:
        entry["tags"] = list(case.tags)
    if case.behaviour and case.candidates:
        entry["behaviour"] = case.behaviour
    return {"format": FORMAT, "suite": case.suite, "description": description, "cases": [entry]}


def _layout(case: Case, name: str) -> dict[str, object]:
    """A tensor's layout keys (contract §9) as the suite gives them; in place, the output's layout is the aliased
    input's, which `--path in-place` derives again (Case.on_path)."""
    if case.path is ExecutionPath.IN_PLACE and case.op.in_place and name == case.op.in_place[0]:
        return {}
    return case.description.layout(name).to_dict()


REPLAY_JSON = "replay.json"


def replay_command(folder: Path, run_options: list[str]) -> list[str]:
    """`dmlconform run <bundle>/suite.yaml` with the options of the recorded run, writing <bundle>/replay.json."""
    return ["dmlconform", "run", (folder / SUITE).as_posix(), *run_options, "--json", (folder / REPLAY_JSON).as_posix()]


def write_bundle(folder: Path, case: Case, actual: dict[str, np.ndarray] | None, inspection: Inspection,
                 run_options: list[str], recorded: CaseResult | None, run: RunResult | None, source: str,
                 target: FeatureLevel) -> BundleCheck:
    """Write every file of the bundle into `folder` (created), then check it; TriageError if it cannot."""
    try:
        return _write(folder, case, actual, inspection, run_options, recorded, run, source, target)
    except OSError as exc:
        raise TriageError(f"--out {folder}: cannot write the bundle: {exc.strerror or exc}") from None


def _write(folder: Path, case: Case, actual: dict[str, np.ndarray] | None, inspection: Inspection,
           run_options: list[str], recorded: CaseResult | None, run: RunResult | None, source: str,
           target: FeatureLevel) -> BundleCheck:
    folder.mkdir(parents=True, exist_ok=True)
    command = replay_command(folder, run_options)
    files = {}
    for name, array in case.inputs.items():
        files[name] = f"inputs/{name}.npy"
        save_npy(folder / files[name], array)
    answer_files: dict[str, dict[str, str]] = {}
    for answer, arrays in ({"": case.expected} if case.expected is not None else case.candidates).items():
        prefix = "expected" if not answer else f"candidates/{answer}"
        answer_files[answer] = {}
        for name, array in arrays.items():
            answer_files[answer][name] = f"{prefix}/{name}.npy"
            save_npy(folder / answer_files[answer][name], array)
    for name, array in (actual or {}).items():
        save_npy(folder / f"actual/{name}.npy", array)
    origin = f"repro bundle of {case.full_id}" + (f" from {case.file}" if case.file else "")
    write_atomically(folder / SUITE, yaml.safe_dump(suite_document(case, files, answer_files, origin),
                                                    sort_keys=False, width=120, default_flow_style=None))
    model = dxdispatch_model(case, files, DXDISPATCH_OUTPUT)
    write_atomically(folder / MODEL, json.dumps(model, indent=2, allow_nan=False) + "\n")
    record = {"case": case_json(recorded) if recorded is not None else None,
              "backend": backend_json(run.backend) if run is not None else None,
              "target_feature_level": target.label, "settings": run.settings if run is not None else {},
              "actual_outputs": source, "command": command}
    write_atomically(folder / RESULT, json.dumps(record, indent=1) + "\n")
    script = folder / SCRIPT
    options = " ".join(shlex.quote(part) for part in run_options)
    write_atomically(script, "#!/bin/sh\n# Reproduces the recorded result of this case (run it where the original run "
                     "ran, so that a harness command with relative paths still works).\n"
                     f'here="$(dirname "$0")"\n'
                     f'exec dmlconform run "$here/{SUITE}" {options} --json "$here/{REPLAY_JSON}" "$@"\n')
    mode = script.stat().st_mode
    script.chmod(mode | (mode & 0o444) >> 2)  # executable by whoever may read it, as `chmod +x` under the umask
    write_atomically(folder / README, readme(case, inspection, command, recorded, run, source, actual is not None))
    return check_bundle(folder, case, actual, target)


def check_bundle(folder: Path, case: Case, actual: dict[str, np.ndarray] | None, target: FeatureLevel) -> BundleCheck:
    """Load the bundle's suite back and compare it with the case it was made from."""
    try:
        loaded = load_paths([folder / SUITE])
    except Exception as exc:
        return BundleCheck(False, problems=[f"{folder / SUITE} does not load: {exc}"])
    copy = loaded[0].on_path(case.path) or loaded[0]
    problems = []
    if copy.full_id != case.full_id:
        problems.append(f"its case is {copy.full_id}, not {case.full_id}")
    identical = _same_tensors(copy.inputs, case.inputs) and all(
        _same_tensors(copy.answers().get(k, {}), v) for k, v in case.answers().items())
    if _param_bits(copy) != _param_bits(case):
        problems.append(f"its parameters {dict(copy.description.params)} differ from {dict(case.description.params)}")
    check = BundleCheck(identical, problems=problems)
    if actual is not None:
        def raw(result: CaseResult) -> Status:
            return result.outcome or result.status

        check.bundle_status = raw(judge_outcome(copy, Outcome.ran(actual), target))
        check.case_status = raw(judge_outcome(case, Outcome.ran(actual), target))
    return check


def _param_bits(case: Case) -> dict[str, object]:
    """Parameters compared by value, scalars by their bits in the data type (a NaN bound equals itself)."""
    def exact(value: object) -> object:
        if isinstance(value, float):
            return value.hex()  # NaN equals NaN, and -0.0 differs from 0.0
        return [exact(v) for v in value] if isinstance(value, list) else value

    return {name: exact(_param_value(case, name, value)) for name, value in case.description.params.items()}


def _same_tensors(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    return a.keys() == b.keys() and all(
        a[k].dtype == b[k].dtype and a[k].shape == b[k].shape and a[k].tobytes() == b[k].tobytes() for k in a)


def readme(case: Case, inspection: Inspection, command: list[str], recorded: CaseResult | None,
           run: RunResult | None, source: str, with_actual: bool) -> str:
    lines = [f"# Repro bundle: `{case.full_id}`", ""]
    lines.append(f"{case.op.name}, {case.dtype.name}, rank {case.rank}, required from feature level "
                 f"{case.required_level}" + (" (a negative case: the description must be refused)"
                                             if case.expect_invalid else "") + ".")
    if recorded is not None and run is not None:
        info = run.backend
        extra = "".join(f", {k} {v}" for k, v in sorted(info.extra.items()) if k.startswith("driver"))
        lines += ["", f"Recorded: **{recorded.status.value}**" + (
            f" (outcome {recorded.outcome.value})" if recorded.outcome else "") +
            f" on backend `{info.name}` {info.version}, device {info.device}{extra}, judged at {run.target_level}, "
            f"run started {run.started.isoformat()}.", "", f"> {recorded.message}"]
    lines += ["", "## The operator", "", "```c", *describe(case), "```", "",
              "## Reproduce it with dmlconform", "",
              "From the folder the original run ran in (a harness command may use relative paths):", "",
              "```", shlex.join(command), "```", "",
              f"or `sh {SCRIPT}`. It runs the one case of `{SUITE}` on the same backend, with the same options, "
              f"judged at the same feature level; expected status: **"
              f"{(recorded.outcome or recorded.status).value if recorded else 'as recorded'}**.", "",
              "## Dispatch it with DxDispatch (no dmlconform needed)", "",
              "```", f"dxdispatch.exe {MODEL}", "```", "",
              f"`{MODEL}` declares the inputs from `inputs/*.npy`, the `{desc_struct(case)}` with every field, and the "
              f"output buffer filled with NaN (0 for integers) so that elements the operator never writes stand out; "
              f"it dispatches the operator once, prints the output and writes it to `{DXDISPATCH_OUTPUT}` with the "
              "output's Sizes. Compare that file with `expected/` (or `candidates/*/`) under the rule below. "
              "Add `-d` for the D3D12 and DirectML debug layers.", "", "## The rule", ""]
    lines += [f"    {line}" for line in inspection.rule_lines] or ["    (a negative case: no outputs are compared)"]
    lines += ["", f"Actual outputs: {source}."]
    if inspection.elements:
        lines += ["", f"## Worst elements ({inspection.differing} element(s) differ from `{inspection.answer}`)", "",
                  "| output[index] | expected | actual | ULP | allowed | error/allowed |", "|---|---|---|---|---|---|"]
        for e in inspection.elements:
            ratio = "∞" if math.isinf(e.ratio) else f"{e.ratio:.3g}"
            lines.append(f"| {e.output}{list(e.index)} | {e.expected} | {e.actual} | "
                         f"{'-' if e.ulp is None else e.ulp} | {e.allowed_text} | {ratio} |")
    lines += ["", "Files: " + ", ".join(_listing(case, with_actual)) + ".", ""]
    return "\n".join(lines)


def _listing(case: Case, with_actual: bool) -> list[str]:
    answers = [] if case.expect_invalid else ["expected/" if case.expected is not None else "candidates/"]
    return [SUITE, "inputs/", *answers, *(["actual/"] if with_actual else []), MODEL, RESULT, SCRIPT, README]
