"""How a case reaches DirectML (contract §9): through a compiled operator, a compiled graph, or in place."""

from __future__ import annotations

from enum import Enum


class ExecutionPath(Enum):
    #: IDMLDevice::CreateOperator and CompileOperator: every case's path until contract v1.3, and the default.
    OPERATOR = "operator"
    #: IDMLDevice1::CompileGraph: the operator as a node bound to the graph's inputs and outputs, and a second copy
    #: between identity nodes, so that its tensors are intermediate edges.
    GRAPH = "graph"
    #: The compiled operator with an output bound over the input its page lets it alias.
    IN_PLACE = "in-place"

    @property
    def suffix(self) -> str:
        """What a case's id gains on this path ('' on the operator path: ids stay as the suites give them)."""
        return "" if self is ExecutionPath.OPERATOR else f"@{self.value}"


PATH_NAMES = tuple(path.value for path in ExecutionPath)
#: The graph path's second output of each operator output: the copy between identity nodes.
EDGES_SUFFIX = "@edges"


def parse_paths(text: str) -> tuple[ExecutionPath, ...]:
    """`--path`: one of operator, graph, in-place, a comma-separated list of them, or all."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if names == ["all"]:
        return tuple(ExecutionPath)
    paths: list[ExecutionPath] = []
    for name in names:
        try:
            path = ExecutionPath(name)
        except ValueError:
            raise ValueError(f"{name!r} is not a path (operator, graph, in-place, or all)") from None
        if path not in paths:
            paths.append(path)
    if not paths:
        raise ValueError("no path given (operator, graph, in-place, or all)")
    return tuple(paths)


def split_case_id(case_id: str) -> tuple[str, ExecutionPath]:
    """A result's case id as (the suite's id, the path): `suite/case@graph` -> (`suite/case`, GRAPH)."""
    base, at, name = case_id.rpartition("@")
    if at and name in PATH_NAMES:
        return base, ExecutionPath(name)
    return case_id, ExecutionPath.OPERATOR
