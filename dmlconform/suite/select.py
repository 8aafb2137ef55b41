"""`-k EXPR` case selection: words joined by and, or, not and parentheses, as in pytest.

A word matches a case when it is a substring of the case's full id, or equals (ignoring case) its
operator name, data type name, or one of its tags.
"""

from __future__ import annotations

import re

from dmlconform.case import Case
from dmlconform.surface.paths import ExecutionPath

_TOKEN = re.compile(r"\s*(\(|\)|[^\s()]+)")


class SelectError(ValueError):
    pass


def parse(expression: str):
    tokens = _TOKEN.findall(expression)
    position = 0

    def peek() -> str | None:
        return tokens[position] if position < len(tokens) else None

    def take() -> str:
        nonlocal position
        token = peek()
        if token is None:
            raise SelectError(f"-k {expression!r}: unexpected end")
        position += 1
        return token

    def parse_or():
        left = parse_and()
        while peek() == "or":
            take()
            right = parse_and()
            left = (lambda a, b: lambda c: a(c) or b(c))(left, right)
        return left

    def parse_and():
        left = parse_not()
        while peek() == "and":
            take()
            right = parse_not()
            left = (lambda a, b: lambda c: a(c) and b(c))(left, right)
        return left

    def parse_not():
        if peek() == "not":
            take()
            inner = parse_not()
            return lambda c: not inner(c)
        token = take()
        if token == "(":
            inner = parse_or()
            if take() != ")":
                raise SelectError(f"-k {expression!r}: missing ')'")
            return inner
        if token in (")", "and", "or"):
            raise SelectError(f"-k {expression!r}: unexpected '{token}'")
        return lambda c: matches(c, token)

    if not tokens:
        raise SelectError("-k needs an expression")
    predicate = parse_or()
    if peek() is not None:
        raise SelectError(f"-k {expression!r}: unexpected '{peek()}'")
    return predicate


def matches(case: Case, word: str) -> bool:
    lowered = word.lower()
    names = {case.op.name.lower(), case.dtype.name.lower(), *(t.lower() for t in case.tags)}
    return lowered in case.full_id.lower() or lowered in names


def select(cases: list[Case], expression: str | None) -> list[Case]:
    if not expression:
        return cases
    predicate = parse(expression)
    return [case for case in cases if predicate(case)]


def on_paths(cases: list[Case], paths: tuple[ExecutionPath, ...]) -> list[Case]:
    """The selected cases on each asked path where it applies (`Case.on_path`), path by path in the order operator,
    graph, in-place: the one expansion `run`, `certify` and `matrix` share, made before sharding so that every shard
    agrees. Only the operator path: the cases themselves."""
    if tuple(paths) == (ExecutionPath.OPERATOR,):
        return cases
    out: list[Case] = []
    for path in ExecutionPath:
        if path in paths:
            out.extend(derived for case in cases if (derived := case.on_path(path)) is not None)
    return out
