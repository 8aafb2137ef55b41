"""load_yaml gives exactly what yaml.load(text, CSafeLoader) gives: the same values of the same types in the same
order, the same shared objects for aliases, and the same errors."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

import dmlconform.suite.yaml_events as yaml_events
from dmlconform.cli import bundled_suites
from dmlconform.suite.yaml_events import load_yaml

REPOSITORY = Path(__file__).resolve().parents[2]
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

#: Every implicit type of YAML 1.1 as PyYAML resolves it, and the forms a reader written against YAML 1.2 or
#: JSON would read differently.
SCALARS = ["yes", "Yes", "NO", "on", "Off", "y", "n", "true", "FALSE", "True", "tRue", "~", "null", "Null", "NULL",
           "nULL", "", "0", "-0", "+0", "012", "-012", "08", "0x1F", "-0x1f", "0b101", "+0b1_0", "1_000", "190:20:30",
           "-1:30", "7", "-7", "+7", "123456789012345678901234567890", "1.5", "-1.5", "+1.5", "1.", "-0.0", ".5",
           "-.5", "1.5e+3", "1.5E-3", "1.5e3", "1e+3", "1_0.5", "190:20:30.15", ".inf", "-.Inf", "+.INF", ".nan",
           ".NaN", "inf", "nan", "2002-12-14", "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10",
           "2001-12-14 21:59:43 +1", "2002-1-4", "=", "<<", "FLOAT32", "a b", "3.4028234663852886e+38",
           "1.401298464324817e-45", "0.1", "-"]

DOCUMENTS = [
    "", "# only a comment\n", "---\n", "--- 3\n", "plain\n", "'quoted'\n", "[]\n", "{}\n",
    "a: 1\nb: [1, 2.5, x]\nc: {d: ~, e: 'yes', f: \"0x10\"}\n",
    "- {id: x, op: RELU, shape: [2, 3]}\n- {id: y}\n",
    "a: 1\na: 2\nb: 3\n",  # a repeated key: the last value, in the first place
    "a: &x [1, 2]\nb: *x\nc: *x\n",  # aliases share one object
    "a: &x {k: v}\nb: *x\n",
    "a: &s 5\nb: *s\n*s : 6\n",  # a scalar alias as a key
    "&r [1, *r]\n",  # a recursive list
    "&m {a: *m}\n",  # a recursive mapping
    "base: &b {x: 1}\nderived: {<<: *b, y: 2}\n",  # a merge key
    "a: !!str 123\nb: !!int '7'\nc: !!float '1'\n",  # explicit tags
    "a: !!binary aGVsbG8=\n", "a: !!set {x, y}\n", "a: !!omap [x: 1, y: 2]\n", "a: ! 12\n",
    "a: !custom 1\n",  # an unknown tag: PyYAML's ConstructorError
    "a: *undefined\n",  # an undefined alias
    "a: &x 1\nb: &x 2\n",  # a duplicate anchor
    "[1, 2]: x\n",  # a sequence as a key
    "{a: 1}: x\n",
    "? - 1\n  - 2\n: x\n",
    "--- 1\n--- 2\n",  # two documents
    "a: [1, 2\n",  # unclosed flow sequence
    "a: b: c\n", "a:\n  - 1\n - 2\n", "\t- x\n", "a: 'unterminated\n", "- - - - - - - - 1\n",
    "key: value with ünïcödé ✓\n", "x: \"esc\\u00e9\\n\"\n", "x: |\n  literal\n  block\n", "x: >\n  folded\n  block\n",
    "x: " + "[" * 200 + "]" * 200 + "\n",
    "x: 1" + "0" * 5000 + "\n",  # beyond int()'s digit limit: ValueError from both
]


def _outcome(load: Callable[[str], Any], text: str) -> tuple[str, Any]:
    try:
        return "value", load(text)
    except Exception as exc:
        return "error", (type(exc), str(exc))


def _same(a: Any, b: Any, seen: dict[tuple[str, int], int] | None = None) -> bool:
    """Equal values of the same types, keys in the same order, floats to the bit, aliases shared alike."""
    seen = {} if seen is None else seen
    if type(a) is not type(b):
        return False
    if isinstance(a, dict | list):
        if ("a", id(a)) in seen or ("b", id(b)) in seen:
            return seen.get(("a", id(a))) == id(b) and seen.get(("b", id(b))) == id(a)
        seen["a", id(a)], seen["b", id(b)] = id(b), id(a)
        if isinstance(a, dict):
            return list(a) == list(b) and all(_same(a[k], b[k], seen) for k in a)
        return len(a) == len(b) and all(_same(x, y, seen) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return bool(a == b)


def _check(text: str) -> None:
    mine, theirs = _outcome(load_yaml, text), _outcome(lambda t: yaml.load(t, Loader=LOADER), text)
    assert mine[0] == theirs[0], (text[:80], mine, theirs)
    if mine[0] == "error":
        assert mine[1] == theirs[1], text[:80]
    else:
        assert _same(mine[1], theirs[1]), (text[:80], mine[1], theirs[1])


@pytest.mark.parametrize("scalar", SCALARS)
def test_plain_scalars_resolve_as_pyyaml_does(scalar: str):
    _check(f"value: {scalar}\n{scalar or 'empty'}: key\nlist: [{scalar}]\nquoted: '{scalar}'\n")


@pytest.mark.parametrize("text", DOCUMENTS)
def test_documents_and_errors_as_pyyaml(text: str):
    _check(text)


@pytest.mark.slow
def test_every_bundled_and_test_suite_reads_the_same():
    files = sorted(bundled_suites().rglob("*.yaml")) + sorted((REPOSITORY / "tests").rglob("*.yaml")) + \
        sorted((REPOSITORY / "dmlconform").rglob("*.yaml"))
    assert len(files) > 20
    for file in files:
        _check(file.read_text(encoding="utf-8"))


def test_the_generated_suites_read_without_falling_back_to_pyyaml():
    # The speed is the point: the bundled suites (anchors and aliases included) are read from the events.
    for file in sorted(bundled_suites().rglob("*.yaml")):
        yaml_events._from_events(file.read_text(encoding="utf-8"))


@pytest.mark.slow
def test_mutated_suites_read_the_same_or_fail_the_same():
    text = (bundled_suites() / "standard" / "max_pooling_grad.yaml").read_text(encoding="utf-8")
    start = text.index("\n- id:", text.index("&id001") - 2000)
    text = text[start + 1: start + 6000]
    rng = random.Random(7)
    alphabet = " \n-:[]{},'\"&*!#|>?%@`0123456789.eE+_xyn~"
    for _ in range(300):
        chars = list(text)
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(chars))
            if rng.random() < 0.5:
                del chars[at]
            else:
                chars.insert(at, rng.choice(alphabet))
        _check("".join(chars))


def test_a_reader_with_yaml_1_2_scalars_is_caught(monkeypatch: pytest.MonkeyPatch):
    # A plausible shortcut: plain scalars read as JSON would (only true/false/null, decimal numbers).
    def json_like(value: str) -> Any:
        for convert in (int, float):
            try:
                return convert(value)
            except ValueError:
                pass
        return {"true": True, "false": False, "null": None, "": None}.get(value, value)

    monkeypatch.setattr(yaml_events, "_plain_scalar", json_like)
    caught = []
    for scalar in SCALARS:
        try:
            _check(f"value: {scalar}\n")
        except AssertionError:
            caught.append(scalar)
    assert {"yes", "on", "~", "012", "0x1F", "1e+3", "inf", "2002-12-14"} <= set(caught)


def test_a_reader_that_copies_aliases_is_caught():
    shared = yaml.load("a: &x [1]\nb: *x\n", Loader=LOADER)
    assert _same(shared, load_yaml("a: &x [1]\nb: *x\n"))
    assert not _same({"a": [1], "b": [1]}, shared)
    assert not _same(shared, {"a": [1], "b": [1]})
