"""The layer rule of docs/architecture.md ("Layers, lowest first; no module imports one in a layer above it"), read from every module's
imports with `ast`: module-level imports, imports inside functions and imports under TYPE_CHECKING alike.

Also the command-line package's own rule (one module per command): `cli/common.py` imports no command module,
and no command module imports another (`cli/__init__.py` registers them all).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from types import MappingProxyType

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dmlconform"

#: Lowest first, as docs/architecture.md lists them. A unit is a package (`ops`) or a top-level module (`case`); a module may
#: import its own unit, units of its own layer and units of lower layers.
LAYERS: tuple[frozenset[str], ...] = tuple(frozenset(layer.split()) for layer in (
    "__init__ dtypes feature_levels values atomic_file npy_file output_digest cache_folder processes yaml_file surface",
    "compare",
    "ops",
    "case case_result run_result backend_info harness_protocol ulp_histogram verdicts",
    "suite directml interactions known_issues",
    "backends generation",
    "harness runner doctor",
    "results",
    "triage history",
    "report",
    "certification",
    "cli __main__",
))
KNOWN = frozenset().union(*LAYERS)
COMMON = "dmlconform.cli.common"
#: The run engine that `run` and `certify` share (cli/execution.py): not a command.
ENGINE = "dmlconform.cli.execution"
#: The run command's early start (cli/early_start.py), which the engine takes over: not a command; it imports none.
EARLY = "dmlconform.cli.early_start"


def module_name(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _imports(name: str, is_package: bool, text: str) -> frozenset[str]:
    here = name.split(".") if is_package else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(text, name)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(here[: len(here) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else node.module or ""
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    root = name.split(".")[0]
    return frozenset(module for module in found if module == root or module.startswith(root + "."))


def imported_modules(path: Path, package: Path, planted: Mapping[Path, str] = MappingProxyType({})) -> frozenset[str]:
    """Every module of the package that `path` imports, absolute or relative (`from a import b` counts as a and
    a.b: b may be a module); `planted` adds a line to the end of a file."""
    text = path.read_text() + planted.get(path.relative_to(package), "")
    return _imports(module_name(path, package), path.name == "__init__.py", text)


def unit_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer_of(unit: str) -> int:
    return next(number for number, layer in enumerate(LAYERS) if unit in layer)


def upward_imports(package: Path, planted: Mapping[Path, str] = MappingProxyType({}),
                   extra_units: tuple[str, ...] = ()) -> list[str]:
    """`importer -> imported` for each import that runs up a layer, and each unit no layer names."""
    problems = []
    for path in sorted(package.rglob("*.py")):
        importer = module_name(path, package)
        if unit_of(importer) not in KNOWN:
            problems.append(f"{importer}: {unit_of(importer)!r} is in no layer (add it to docs/architecture.md and LAYERS)")
            continue
        own = layer_of(unit_of(importer))
        # A unit in no layer is named where its own files are scanned.
        above = {m for m in imported_modules(path, package, planted) if unit_of(m) in KNOWN and layer_of(unit_of(m)) > own}
        # `from a.b import c` names a.b and a.b.c (c may be a module): name the import once.
        problems += [f"{importer} -> {m}" for m in sorted(above) if not any(m.startswith(f"{o}.") for o in above)]
    for unit in extra_units:
        if unit not in KNOWN:
            problems.append(f"{package.name}.{unit}: {unit!r} is in no layer (add it to docs/architecture.md and LAYERS)")
    return problems


def allowed(importer: str, imported: str) -> bool:
    """A command may import the shared modules; the run engine may import `common` and the early start; `common` and
    the early start import none."""
    if importer in (COMMON, EARLY):
        return False
    if importer == ENGINE:
        return imported in (COMMON, EARLY)
    return imported in (COMMON, ENGINE, EARLY)


def command_imports(package: Path, planted: Mapping[Path, str] = MappingProxyType({})) -> list[str]:
    """Imports between the modules of cli/ other than its __init__: only a command importing `common` or the run
    engine, and the engine importing `common`, are allowed."""
    problems = []
    for path in sorted((package / "cli").glob("*.py")):
        importer = module_name(path, package)
        if path.name == "__init__.py":
            continue
        for imported in sorted(imported_modules(path, package, planted)):
            inside = imported.startswith(f"{package.name}.cli.") and imported.count(".") == 2
            if inside and imported != importer and not allowed(importer, imported):
                problems.append(f"{importer} -> {imported}")
    return problems


@pytest.mark.slow
def test_no_module_imports_a_layer_above_its_own() -> None:
    assert upward_imports(PACKAGE) == []


def test_common_and_the_command_modules_do_not_import_each_other() -> None:
    assert command_imports(PACKAGE) == []


@pytest.mark.parametrize(("module", "line", "expected"), [
    ("ops/base.py", "from dmlconform.case import Case", "dmlconform.ops.base -> dmlconform.case"),
    ("compare/ulp.py", "if False:\n    from ..ops import find_operator", "dmlconform.compare.ulp -> dmlconform.ops"),
    ("case.py", "import dmlconform.runner.judge", "dmlconform.case -> dmlconform.runner.judge"),
    ("results/document.py", "from dmlconform.report import json_report",
     "dmlconform.results.document -> dmlconform.report"),
    ("backends/__init__.py", "from .. import runner", "dmlconform.backends -> dmlconform.runner"),
    ("generation/build.py", "from dmlconform.harness.server import HarnessServer",
     "dmlconform.generation.build -> dmlconform.harness.server"),
])
def test_a_planted_upward_import_is_named(module: str, line: str, expected: str) -> None:
    assert upward_imports(PACKAGE, {Path(module): "\n" + line + "\n"}) == [expected]


def test_a_package_in_no_layer_is_named() -> None:
    assert upward_imports(PACKAGE, extra_units=("newthing",)) == [
        "dmlconform.newthing: 'newthing' is in no layer (add it to docs/architecture.md and LAYERS)"]


@pytest.mark.parametrize(("module", "line"), [
    ("common.py", "from dmlconform.cli.generate import generate"),
    ("common.py", "from dmlconform.cli import run"),
    ("generate.py", "from dmlconform.cli.run import run"),
    ("run.py", "from . import listing"),
    ("execution.py", "from dmlconform.cli.run import run"),
    ("common.py", "from dmlconform.cli.execution import execute"),
])
def test_a_planted_import_between_command_modules_is_named(module: str, line: str) -> None:
    importer = f"dmlconform.cli.{Path(module).stem}"
    found = command_imports(PACKAGE, {Path("cli") / module: "\n" + line + "\n"})
    assert len(found) == 1 and found[0].startswith(importer + " -> dmlconform.cli.")
