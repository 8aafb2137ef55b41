"""Coverage of the support tables: per operator, cases per (data type, rank) at each feature level.

A cell is a (data type, rank) that some level of the operator's table admits; it is admitted at every level
from the lowest that admits it, so a level's matrix holds the cases a device claiming that level must pass
there. A cell with no case is a gap in the suite. Given a run's result, each cell also says how many of its
cases matched. Negative cases are counted by the rule they break (the field the reference refuses).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from dmlconform.case import Case
from dmlconform.case_result import CaseResult, Status
from dmlconform.dtypes import DataType
from dmlconform.feature_levels import FeatureLevel
from dmlconform.ops import OPERATORS
from dmlconform.ops.base import DescriptionError, Operator
from dmlconform.run_result import RunResult
from dmlconform.verdicts import effective_status

_AXIS = re.compile(r"\[\d+\]")


@dataclass
class Cell:
    dtype: DataType
    rank: int
    #: The lowest level whose table admits the cell.
    level: FeatureLevel
    cases: int = 0
    #: With a result: how the cell's cases came out (matched, failed, not run).
    matched: int = 0
    failed: int = 0
    not_run: int = 0

    def admitted_at(self, level: FeatureLevel) -> bool:
        return self.level <= level


@dataclass
class OperatorCoverage:
    op: Operator
    cells: list[Cell]
    #: Negative cases by the rule they break (`InputWindowStrides`, `InputTensor.DataType`, ...).
    refusals: Counter[str] = field(default_factory=Counter)
    candidate_cases: int = 0

    @property
    def levels(self) -> list[FeatureLevel]:
        """The levels at which the table changes (its rows), lowest first."""
        return sorted({row.level for row in self.op.support.rows}, key=lambda level: level.value)

    @property
    def dtypes(self) -> list[DataType]:
        return sorted({cell.dtype for cell in self.cells}, key=lambda d: d.value)

    @property
    def ranks(self) -> list[int]:
        return sorted({cell.rank for cell in self.cells})

    def cell(self, dtype: DataType, rank: int) -> Cell | None:
        return next((c for c in self.cells if c.dtype is dtype and c.rank == rank), None)

    @property
    def empty(self) -> list[Cell]:
        return [cell for cell in self.cells if cell.cases == 0]

    def new_at(self, level: FeatureLevel) -> list[Cell]:
        """The cells this level admits that the level below it did not: the level's boundary."""
        return [cell for cell in self.cells if cell.level is level]


@dataclass
class Coverage:
    operators: list[OperatorCoverage]
    cases: int
    #: Whether a result was laid over the suites.
    with_result: bool = False
    #: Cases of the result that the suites do not hold (a result of other suites, or of another tier).
    unknown_results: int = 0

    @property
    def empty(self) -> list[tuple[OperatorCoverage, Cell]]:
        return [(op, cell) for op in self.operators for cell in op.empty]


def support_cells(op: Operator) -> list[Cell]:
    low, high = op.support.rank_range
    cells = []
    for dtype in sorted(op.support.all_dtypes, key=lambda d: d.value):
        for rank in range(low, high + 1):
            level = op.support.required_level(dtype, rank)
            if level is not None:
                cells.append(Cell(dtype, rank, level))
    return cells


def refused_rule(case: Case) -> str:
    """The rule a negative case breaks, as the field the reference names, without axis numbers."""
    try:
        case.op.validate(case.description)
    except DescriptionError as exc:
        return _AXIS.sub("", exc.field)
    return "(none: the description is valid)"


def _outcome(result: CaseResult) -> str:
    status = effective_status(result)
    if status in (Status.SKIPPED, Status.NOT_RUN):
        return "not_run"
    return "matched" if status.matched else "failed"


def coverage(cases: list[Case], run: RunResult | None = None) -> Coverage:
    results = {r.id: r for r in run.results} if run is not None else {}
    by_op = {name: OperatorCoverage(op, support_cells(op)) for name, op in OPERATORS.items()}
    for case in cases:
        entry = by_op[case.op.name]
        if case.expect_invalid:
            entry.refusals[refused_rule(case)] += 1
            continue
        entry.candidate_cases += bool(case.candidates)
        cell = entry.cell(case.dtype, case.rank)
        if cell is None:  # the loader refuses such a case; kept out of the matrix all the same
            continue
        cell.cases += 1
        if run is not None:
            result = results.get(case.full_id)
            outcome = _outcome(result) if result is not None else "not_run"
            setattr(cell, outcome, getattr(cell, outcome) + 1)
    unknown = len(set(results) - {c.full_id for c in cases})
    return Coverage(list(by_op.values()), len(cases), run is not None, unknown)
