"""Load suite files (format dmlconform/v1) into cases, refusing anything unusable with one clear line."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from dmlconform.case import Case, Tensors
from dmlconform.compare.tolerance import Tolerance
from dmlconform.ops import find_operator
from dmlconform.ops.base import Description, DescriptionError, Operator, ParamError, TensorDesc
from dmlconform.suite import SuiteError
from dmlconform.suite.limits import LimitExceeded, SuiteLimits, Tally
from dmlconform.suite.tensors import Archives, TensorError, read_desc, read_tensor
from dmlconform.suite.tiers import Tier
from dmlconform.suite.yaml_events import load_yaml
from dmlconform.surface.buffers import buffer_size
from dmlconform.surface.layout import KEYS as LAYOUT_KEYS
from dmlconform.surface.layout import LayoutError, TensorLayout, read_layout

FORMAT = "dmlconform/v1"
SUITE_SUFFIXES = (".yaml", ".yml")
_CASE_KEYS = {"id", "op", "params", "inputs", "outputs", "candidates", "expect", "tolerance", "tags",
              "behaviour", "behavior", "note"}
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")  # matched whole (fullmatch): `$` would take "id\n"


def discover(paths: Iterable[Path], limits: SuiteLimits | None = None) -> list[tuple[Path, Path]]:
    """(suite file, suite tree root) for every suite under the given files and folders, in a stable order;
    SuiteError once there are more than `limits.files`."""
    most = (limits or SuiteLimits()).files
    found: list[tuple[Path, Path]] = []
    for path in paths:
        if path.is_dir():
            files: list[Path] = []
            for candidate in path.rglob("*"):
                if candidate.suffix in SUITE_SUFFIXES and candidate.is_file():
                    files.append(candidate)
                    if most is not None and len(found) + len(files) > most:
                        raise SuiteError(path, f"holds more than {most} suite files (the limit; --suite-limit "
                                         "files=N raises it)")
            if not files:
                raise SuiteError(path, "no suite files (*.yaml) in this folder")
            found.extend((f, path) for f in sorted(files))
        elif path.is_file():
            found.append((path, path.parent))
            if most is not None and len(found) > most:
                raise SuiteError(path, f"makes more than {most} suite files in all (the limit; --suite-limit "
                                 "files=N raises it)")
        else:
            raise SuiteError(path, "no such file or folder")
    return found


#: Parses suite files, (file, root) each, into (cases, suite name) each, in the same order, keeping only suites of
#: the tier or below (and suites that name none), within the limits: `load_suites` here, or something that spreads
#: the files over processes and raises the SuiteError of the first file that has one.
SuiteParser = Callable[[list[tuple[Path, Path]], "Tier | None", SuiteLimits], list[tuple[list[Case], str]]]


def load_suites(files: list[tuple[Path, Path]], tier: Tier | None = None,
                limits: SuiteLimits | None = None) -> list[tuple[list[Case], str]]:
    limits = limits or SuiteLimits()
    tree = Tally(limits)
    parsed = []
    for file, root in files:
        cases, name = load_suite(file, root, tier, limits)
        count_into(tree, file, root, cases)
        parsed.append((cases, name))
    return parsed


def count_into(tree: Tally, file: Path, root: Path, cases: list[Case]) -> None:
    """One parsed file's cases, text and tensors added to the tree's tally; SuiteError naming the tree when that
    passes a limit (each file was checked on its own while it was parsed)."""
    try:
        size = file.stat().st_size
    except OSError:
        size = 0
    tally = Tally(SuiteLimits(None, None, None), len(cases), size, sum(case_bytes(case) for case in cases))
    try:
        tree.add(tally)
    except LimitExceeded as exc:
        raise SuiteError(root, f"the suites here hold {exc}") from None


def case_bytes(case: Case) -> int:
    """The tensor bytes a loaded case holds: its inputs and every answer."""
    return sum(array.nbytes for array in case.inputs.values()) + sum(
        array.nbytes for answer in case.answers().values() for array in answer.values())


def load_paths(paths: Iterable[Path], tier: Tier | None = None, parse: SuiteParser = load_suites,
               limits: SuiteLimits | None = None) -> list[Case]:
    """Every case of the suites under `paths`; with `tier`, only suites of that tier or below (and suites
    that name no tier); SuiteError past a limit."""
    limits = limits or SuiteLimits()
    cases: list[Case] = []
    seen_suites: dict[str, Path] = {}
    files = discover(paths, limits)
    for (file, _), (suite_cases, name) in zip(files, parse(files, tier, limits), strict=True):
        if name in seen_suites:
            raise SuiteError(file, f"suite name '{name}' is already used by {seen_suites[name]}", field="suite")
        seen_suites[name] = file
        cases.extend(suite_cases)
    return cases


def load_suite(file: Path, root: Path, tier: Tier | None = None, limits: SuiteLimits | None = None,
               tally: Tally | None = None) -> tuple[list[Case], str]:
    """The cases of one suite file and its name. Within `limits` on its own: its size is counted before it is
    read, each case's declared tensors before they are read (into `tally`, when given: what the file held when it
    was refused, for the fuzz harnesses' memory bound)."""
    tally = tally if tally is not None else Tally(limits or SuiteLimits())
    try:
        tally.add_text(file.stat().st_size)
        text = file.read_text(encoding="utf-8")
    except LimitExceeded as exc:
        raise SuiteError(file, str(exc)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SuiteError(file, f"cannot be read ({exc})") from None
    try:
        document = load_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SuiteError(file, f"is not valid YAML{where}: {problem}") from None
    except ValueError as exc:  # PyYAML's int() of a number past Python's digit limit
        raise SuiteError(file, f"cannot be read as YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(document, Mapping):
        raise SuiteError(file, "must be a YAML mapping with format, suite and cases")
    if document.get("format") != FORMAT:
        raise SuiteError(file, f"{document.get('format')!r} is not '{FORMAT}'", field="format")
    name = document.get("suite")
    if not isinstance(name, str) or not _ID.fullmatch(name):
        raise SuiteError(file, f"{name!r} must be a name of letters, digits and . _ + -", field="suite")
    if "tier" in document:
        try:
            suite_tier = Tier.parse(document["tier"])
        except ValueError as exc:
            raise SuiteError(file, str(exc), field="tier") from None
        if tier is not None and not tier.includes(suite_tier):
            return [], name
    raw_cases = document.get("cases")
    if not isinstance(raw_cases, list) or not raw_cases:
        raise SuiteError(file, "must be a non-empty list", field="cases")
    cases: list[Case] = []
    ids: set[str] = set()
    archives = Archives(root)
    try:
        for position, raw in enumerate(raw_cases):
            raw_id = raw.get("id") if isinstance(raw, Mapping) else None
            label = raw_id if isinstance(raw_id, str) and _ID.fullmatch(raw_id) else f"#{position + 1}"
            case = _CaseReader(file, name, label, archives, tally).read(raw)
            if case.id in ids:
                raise SuiteError(file, "duplicate case id", case=case.id, field="id")
            ids.add(case.id)
            cases.append(case)
    finally:
        archives.close()
    return cases, name


class _CaseReader:
    def __init__(self, file: Path, suite: str, label: str, archives: Archives, tally: Tally) -> None:
        self.file, self.suite, self.label = file, suite, label
        self.archives = archives
        self.tally = tally

    def error(self, field: str, message: str) -> SuiteError:
        return SuiteError(self.file, message, case=self.label, field=field)

    def read(self, raw: object) -> Case:
        if not isinstance(raw, Mapping):
            raise self.error("", "a case must be a mapping")
        unknown = sorted(set(map(str, raw)) - _CASE_KEYS)
        if unknown:
            raise self.error(unknown[0], "unknown key")
        case_id = raw.get("id")
        if not isinstance(case_id, str) or not _ID.fullmatch(case_id):
            raise self.error("id", f"{case_id!r} must be a name of letters, digits and . _ + -")
        try:
            op = find_operator(raw.get("op"))
        except KeyError as exc:
            raise self.error("op", str(exc.args[0])) from None
        expect = raw.get("expect")
        if expect not in (None, "invalid"):
            raise self.error("expect", f"{expect!r}: the only expectation is 'invalid'")
        invalid = expect == "invalid"
        refusal: str | None = None

        input_specs = self.mapping(raw, "inputs", op.inputs)
        if invalid:
            if "candidates" in raw:
                raise self.error("candidates", "a negative case (expect: invalid) has no candidates")
            output_specs = self.mapping(raw, "outputs", op.outputs)
            answer_specs: dict[str, Mapping[str, Any]] = {}
        elif ("outputs" in raw) == ("candidates" in raw):
            raise self.error("outputs", "give exactly one of outputs or candidates")
        elif "outputs" in raw:
            output_specs = self.mapping(raw, "outputs", op.outputs)
            answer_specs = {"": output_specs}
        else:
            answer_specs, refusal = self.candidate_specs(raw.get("candidates"), op)
            output_specs = next(iter(answer_specs.values()))

        descs = {name: self.desc(f"inputs.{name}", spec) for name, spec in input_specs.items()}
        descs |= {name: self.desc(f"outputs.{name}", spec) for name, spec in output_specs.items()}
        output_field = "outputs" if "outputs" in raw or invalid else f"candidates.{next(iter(answer_specs))}"
        layouts = {name: self.layout(f"inputs.{name}", spec, descs[name]) for name, spec in input_specs.items()}
        layouts |= {name: self.layout(f"{output_field}.{name}", spec, descs[name])
                    for name, spec in output_specs.items()}
        layouts = {name: layout for name, layout in layouts.items() if not layout.is_default}
        dtype = descs[op.outputs[0]].dtype
        raw_params = raw.get("params", {}) or {}
        if not isinstance(raw_params, Mapping):
            raise self.error("params", "must be a mapping of DML field names to values")
        try:
            params = op.parse_params(raw_params, dtype)
        except ParamError as exc:
            raise self.error(f"params.{exc.field}", str(exc).removeprefix(f"{exc.field}: ")) from None
        description = Description(op, params, descs, layouts)
        self.check_description(description, invalid)
        declared = sum(_nbytes(descs[name]) for name in input_specs) + len(answer_specs) * sum(
            _nbytes(descs[name]) for name in op.outputs)
        # A case with layouts runs with whole buffers (dmlconform.surface.buffers): what its strides and sizes declare.
        if description.has_layouts:
            declared += sum(buffer_size(descs[name], description.layout(name)) for name in descs)
        try:
            self.tally.add_case(declared)
        except LimitExceeded as exc:
            raise self.error("", str(exc)) from None

        inputs = {name: self.tensor(f"inputs.{name}", spec, descs[name], True)
                  for name, spec in input_specs.items()}
        for name, array in inputs.items():
            self.check_broadcast(f"inputs.{name}", array, description.layout(name))  # type: ignore[arg-type]
        answers: dict[str, Tensors] = {}
        for cname, specs in answer_specs.items():
            where = f"candidates.{cname}" if cname else "outputs"
            answers[cname] = {}
            for name, spec in specs.items():
                desc = self.desc(f"{where}.{name}", spec)
                if desc != descs[name]:
                    raise self.error(f"{where}.{name}", f"{desc} disagrees with the first answer's {descs[name]}")
                if self.layout(f"{where}.{name}", spec, desc) != description.layout(name) and any(
                        key in spec for key in LAYOUT_KEYS):
                    raise self.error(f"{where}.{name}", "its layout disagrees with the first answer's (give it once)")
                answers[cname][name] = self.tensor(f"{where}.{name}", spec, desc, True)  # type: ignore[assignment]

        tolerance = self.tolerance(raw.get("tolerance"), dtype)
        tags = raw.get("tags", []) or []
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise self.error("tags", "must be a list of words")
        behaviour = raw.get("behaviour", raw.get("behavior"))
        if behaviour is not None and not isinstance(behaviour, str):
            raise self.error("behaviour", "must be a short name")
        return Case(self.suite, case_id, self.file, description, inputs,  # type: ignore[arg-type]
                    expected=answers.get(""), candidates={k: v for k, v in answers.items() if k},
                    expect_invalid=invalid, tolerance=tolerance, tags=tuple(tags),
                    behaviour=behaviour or (case_id if "candidates" in raw else None), refusal_candidate=refusal)

    def mapping(self, raw: Mapping[str, Any], key: str, names: tuple[str, ...]) -> dict[str, Mapping[str, Any]]:
        value = raw.get(key)
        if not isinstance(value, Mapping):
            raise self.error(key, f"missing: a mapping of {', '.join(names)}")
        for name in value:
            if name not in names:
                raise self.error(f"{key}.{name}", f"not a tensor of this operator (expected {', '.join(names)})")
        for name in names:
            if name not in value:
                raise self.error(f"{key}.{name}", "missing")
        return {name: value[name] for name in names}

    def candidate_specs(self, raw: object, op: Operator) -> tuple[dict[str, Mapping[str, Any]], str | None]:
        """The candidates with outputs, and the name of the one that is a refusal (`name: refused`), if any."""
        if not isinstance(raw, Mapping) or not raw:
            raise self.error("candidates", "must map candidate names to outputs")
        specs = {}
        refusal = None
        for cname, outputs in raw.items():
            if not isinstance(cname, str) or not _ID.fullmatch(cname):
                raise self.error("candidates", f"{cname!r} is not a usable candidate name")
            if outputs == "refused":
                if refusal is not None:
                    raise self.error(f"candidates.{cname}", f"a second refusal (the first is {refusal!r})")
                refusal = cname
                continue
            specs[cname] = self.mapping({"candidates." + cname: outputs}, "candidates." + cname, op.outputs)
        if not specs:
            raise self.error("candidates", "needs at least one candidate with outputs besides a refusal")
        return specs, refusal

    def desc(self, field: str, spec: object) -> TensorDesc:
        try:
            return read_desc(spec)
        except TensorError as exc:
            raise self.error(f"{field}.{exc.field}".rstrip("."), str(exc)) from None

    def layout(self, field: str, spec: object, desc: TensorDesc) -> TensorLayout:
        try:
            return read_layout(spec, desc)
        except LayoutError as exc:
            raise self.error(f"{field}.{exc.field}", str(exc)) from None

    def check_broadcast(self, field: str, array: np.ndarray, layout: TensorLayout) -> None:
        """An input broadcast by a stride of 0 holds one value along that dimension: its elements share memory."""
        if layout.strides is None:
            return
        bits = array.view(f"u{array.dtype.itemsize}")
        for axis, stride in enumerate(layout.strides):
            if stride == 0 and array.shape[axis] > 1:
                first = np.take(bits, [0], axis=axis)
                if not np.array_equal(bits, np.broadcast_to(first, bits.shape)):
                    raise self.error(f"{field}.strides", f"stride 0 on dimension {axis} makes its elements share "
                                     "memory, but the data differs along it")

    def tensor(self, field: str, spec: Mapping[str, Any], desc: TensorDesc, required: bool) -> np.ndarray | None:
        try:
            return read_tensor(spec, desc, self.file, self.archives, required)
        except TensorError as exc:
            raise self.error(f"{field}.{exc.field}", str(exc)) from None

    def check_description(self, description: Description, invalid: bool) -> None:
        try:
            description.op.validate(description)
        except DescriptionError as exc:
            if not invalid:
                raise self.error(exc.field, f"{exc.message} (if this is meant, mark the case `expect: invalid`)"
                                 ) from None
            return
        if invalid:
            raise self.error("expect", f"the case is marked invalid, but its description satisfies every rule "
                             f"of {description.op.name}")

    def tolerance(self, raw: object, dtype: Any) -> Tolerance | None:
        if raw is None:
            return None
        try:
            tolerance = Tolerance.parse(raw)
        except ValueError as exc:
            raise self.error("tolerance", str(exc)) from None
        if not dtype.is_float and str(tolerance) != "exact":
            raise self.error("tolerance", f"{tolerance} does not apply to {dtype.name}: integers are exact")
        return tolerance


def _nbytes(desc: TensorDesc) -> int:
    return math.prod(desc.shape) * desc.dtype.numpy.itemsize
