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

from dmlconform.interactions.layout import ABOUT as LAYOUT_ABOUT
from dmlconform.interactions.layout import LAYOUTS, PACKED, case_kind
from dmlconform.interactions.layout import possible as layout_possible
from dmlconform.surface.layout import TensorLayout

#: One value per feature, in the model's feature order.
Site = tuple[str, ...]


@dataclass(frozen=True)
class Feature:
    name: str
    values: tuple[str, ...]
    about: str


#: Every model's last feature (dmlconform/interactions/layout.py).
LAYOUT_FEATURE = Feature("layout", LAYOUTS, LAYOUT_ABOUT)


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
    """The features of one operator and how a case exercises them.

    `features` are the operator's own and `sites`/`universe` speak of them only; every model also has the tensors'
    `layout` (dmlconform/interactions/layout.py), the last of `all_features`, which a case holds as a whole and which
    combines with every site but one of rank 1 (no permuted order there): `layout_sites` gives a case's full sites,
    `possible` the combinations of an interaction some valid case can hold."""

    #: The DML operator name (`SLICE_GRAD`).
    op: str
    #: The operator's own features (the layout comes after them, in `all_features`).
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
    def all_features(self) -> tuple[Feature, ...]:
        return (*self.features, LAYOUT_FEATURE)

    @cached_property
    def universe(self) -> frozenset[Site]:
        """Every operator site (the operator's own features) some valid case can have."""
        found = frozenset(self.possible_sites())
        for site in found:
            self.check_site(site, self.features)
        return found

    def layout_sites(self, params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
                     output_shape: tuple[int, ...], layouts: Mapping[str, TensorLayout] | None = None) -> set[Site]:
        """A valid case's full sites: each operator site with the case's layout (absent: every tensor packed)."""
        kind = PACKED
        if layouts:
            shapes = {name: tuple(array.shape) for name, array in inputs.items()}
            itemsizes = {name: array.dtype.itemsize for name, array in inputs.items()}
            output = next(name for name in layouts if name not in inputs) if set(layouts) - set(inputs) else None
            if output is not None:
                shapes[output] = tuple(output_shape)
                itemsizes[output] = next(iter(inputs.values())).dtype.itemsize
            kind = case_kind(shapes, itemsizes, layouts)
        return {(*site, kind) for site in self.sites(params, inputs, output_shape)}

    @cached_property
    def positions(self) -> dict[str, int]:
        return {feature.name: index for index, feature in enumerate(self.all_features)}

    def check_site(self, site: Site, features: tuple[Feature, ...] | None = None) -> None:
        features = self.all_features if features is None else features
        if len(site) != len(features):
            raise ValueError(f"{self.op}: site {site} has {len(site)} values for {len(features)} features")
        for feature, value in zip(features, site, strict=True):
            if value not in feature.values:
                raise ValueError(f"{self.op}: {feature.name} = {value!r} is not one of {feature.values}")

    def possible(self, interaction: Interaction) -> frozenset[tuple[str, ...]]:
        """The interaction's combinations some valid case can hold: the universe's, with every layout the rank
        allows (the layout is the last feature, so it comes last in an interaction that has it)."""
        key = interaction.features
        if key not in self._possible:
            if LAYOUT_FEATURE.name not in key:
                self._possible[key] = frozenset(self.project(self.universe, interaction))
            elif len(key) == 1:
                self._possible[key] = frozenset((kind,) for kind in LAYOUTS)
            else:
                rest = Interaction(key[:-1])
                rank = key.index("rank") if "rank" in key else None
                self._possible[key] = frozenset(
                    (*combo, kind) for combo in self.possible(rest)
                    for kind in (layout_possible(combo[rank]) if rank is not None else LAYOUTS))
        return self._possible[key]

    @cached_property
    def _possible(self) -> dict[tuple[str, ...], frozenset[tuple[str, ...]]]:
        return {}

    @cached_property
    def _picks(self) -> dict[tuple[str, ...], operator.itemgetter]:
        """Each interaction's features as an itemgetter over a site (built once, not per candidate)."""
        return {}

    def interactions(self, order: int) -> tuple[Interaction, ...]:
        """Every single feature (order 1), every pair (2), or the declared higher ones (3: three and more)."""
        if order >= 3:
            return tuple(self.higher)
        found = self._interactions.get(order)
        if found is None:  # asked for every candidate the generator measures
            names = [feature.name for feature in self.all_features]
            found = self._interactions[order] = tuple(Interaction(combo)
                                                      for combo in itertools.combinations(names, order))
        return found

    @cached_property
    def _interactions(self) -> dict[int, tuple[Interaction, ...]]:
        return {}

    def counts_for_refusable(self, interaction: Interaction) -> bool:
        return any(name in self.refusable for name in interaction.features)

    def project(self, sites: Iterable[Site], interaction: Interaction) -> set[tuple[str, ...]]:
        pick = self._picks.get(interaction.features)
        if pick is None:
            pick = self._picks[interaction.features] = operator.itemgetter(
                *(self.positions[name] for name in interaction.features))
        if interaction.order == 1:
            return {(pick(site),) for site in sites}
        return set(map(pick, sites))
