"""What every operator's interaction model provides, and the interactions it is measured on."""

from __future__ import annotations

import itertools
import operator
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

#: One value per feature, in the model's feature order.
Site = tuple[str, ...]


@dataclass(frozen=True)
class Feature:
    name: str
    values: tuple[str, ...]
    about: str


@dataclass(frozen=True)
class Interaction:
    """Features whose value combinations should all be exercised; `about` says why (for those beyond pairs)."""

    features: tuple[str, ...]
    about: str = ""

    @property
    def order(self) -> int:
        return len(self.features)

    @property
    def label(self) -> str:
        return " × ".join(self.features)


class OperatorModel(ABC):
    """The features of one operator and how a case exercises them."""

    #: The DML operator name (`SLICE_GRAD`).
    op: str
    features: tuple[Feature, ...]
    #: Interactions of three or more features judged worth covering, besides every pair.
    higher: tuple[Interaction, ...] = ()
    #: Features whose values can make an implementation refuse the whole case legitimately (a case with a `refused`
    #: candidate answer): such a case's sites count only for interactions that include one of them, since an
    #: implementation that refuses it exercises nothing else.
    refusable: tuple[str, ...] = ()

    @abstractmethod
    def sites(self, params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
              output_shape: tuple[int, ...]) -> set[Site]:
        """Every site of a valid case (its parameters as the operator parses them, its input arrays)."""

    @abstractmethod
    def possible_sites(self) -> Iterable[Site]:
        """Every site some valid case can have (duplicates allowed)."""

    @cached_property
    def universe(self) -> frozenset[Site]:
        found = frozenset(self.possible_sites())
        for site in found:
            self.check_site(site)
        return found

    @cached_property
    def positions(self) -> dict[str, int]:
        return {feature.name: index for index, feature in enumerate(self.features)}

    def check_site(self, site: Site) -> None:
        if len(site) != len(self.features):
            raise ValueError(f"{self.op}: site {site} has {len(site)} values for {len(self.features)} features")
        for feature, value in zip(self.features, site, strict=True):
            if value not in feature.values:
                raise ValueError(f"{self.op}: {feature.name} = {value!r} is not one of {feature.values}")

    def interactions(self, order: int) -> list[Interaction]:
        """Every single feature (order 1), every pair (2), or the declared higher ones (3: three and more)."""
        names = [feature.name for feature in self.features]
        if order >= 3:
            return list(self.higher)
        return [Interaction(combo) for combo in itertools.combinations(names, order)]

    def counts_for_refusable(self, interaction: Interaction) -> bool:
        return any(name in self.refusable for name in interaction.features)

    def project(self, sites: Iterable[Site], interaction: Interaction) -> set[tuple[str, ...]]:
        pick = operator.itemgetter(*(self.positions[name] for name in interaction.features))
        if interaction.order == 1:
            return {(pick(site),) for site in sites}
        return set(map(pick, sites))
