"""How much of an operator's possible interactions a set of sites covers, and what is missing."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from dmlconform.interactions.model import Interaction, OperatorModel, Site

#: The orders measured: 1 every feature value, 2 every pair, 3 the models' declared higher-order interactions.
ORDERS = (1, 2, 3)
ORDER_NAMES = {1: "values", 2: "pairs", 3: "higher"}


@dataclass(frozen=True)
class InteractionCoverage:
    interaction: Interaction
    possible: frozenset[tuple[str, ...]]
    covered: frozenset[tuple[str, ...]]

    @property
    def missing(self) -> list[tuple[str, ...]]:
        return sorted(self.possible - self.covered)


@dataclass(frozen=True)
class OperatorCoverage:
    op: str
    cases: int
    by_order: dict[int, list[InteractionCoverage]]

    def counts(self, order: int) -> tuple[int, int]:
        """(covered, possible) combinations of that order."""
        rows = self.by_order[order]
        return sum(len(r.possible & r.covered) for r in rows), sum(len(r.possible) for r in rows)

    def share(self, order: int) -> float:
        covered, possible = self.counts(order)
        return covered / possible if possible else 1.0

    def missing(self, order: int) -> list[tuple[Interaction, tuple[str, ...]]]:
        return [(row.interaction, combo) for row in self.by_order[order] for combo in row.missing]


def measure(model: OperatorModel, sites: Iterable[Site], cases: int,
            refusable_sites: Iterable[Site] = ()) -> OperatorCoverage:
    """`refusable_sites`: those of cases an implementation may refuse (model.refusable), which count only for the
    interactions that include a refusable feature."""
    seen = set(sites)
    maybe = set(refusable_sites)
    for site in seen | maybe:
        model.check_site(site)
    by_order = {}
    for order in ORDERS:
        rows = []
        for interaction in model.interactions(order):
            possible = model.possible(interaction)
            covered = frozenset(model.project(seen | maybe if model.counts_for_refusable(interaction) else seen,
                                              interaction))
            impossible = covered - possible
            if impossible:
                raise ValueError(f"{model.op}: {interaction.label}: a case exercises {sorted(impossible)[0]}, "
                                 f"which the model holds impossible")
            rows.append(InteractionCoverage(interaction, possible, covered))
        by_order[order] = rows
    return OperatorCoverage(model.op, cases, by_order)


def goal_orders(tier: str | None) -> tuple[int, ...]:
    """The orders a tier must cover completely: the smoke tier every feature value, the others every pair and the
    declared higher-order interactions too."""
    return (1,) if tier == "smoke" else ORDERS
