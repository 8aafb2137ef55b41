"""Suite tiers: how much of the certification suite a run takes.

Tiers are cumulative. A suite file may name its tier at the top level (`tier: smoke`); a file that names
none (the hand-written seed, edge, invalid and candidate suites) belongs to every tier. Selecting tier T
loads every file whose tier is T or below.

* `smoke`: the hand-written suites and one small generated case per support-table cell (seconds).
* `standard`: smoke plus the generated parameter space, edge values, real-network shapes and negative
  cases (the default of `dmlconform run`; committed).
* `full`: standard plus large shapes and many more draws; generated on demand into a cache, never committed.
"""

from __future__ import annotations

from enum import Enum


class Tier(Enum):
    SMOKE = "smoke"
    STANDARD = "standard"
    FULL = "full"

    @property
    def rank(self) -> int:
        return list(Tier).index(self)

    def includes(self, other: Tier) -> bool:
        """Whether a run of this tier takes the suites of `other`."""
        return other.rank <= self.rank

    @property
    def committed(self) -> bool:
        return self is not Tier.FULL

    @classmethod
    def parse(cls, text: object) -> Tier:
        try:
            return cls(str(text).strip().lower())
        except ValueError:
            raise ValueError(f"{text!r} is not a tier (known: {', '.join(t.value for t in cls)})") from None


DEFAULT = Tier.STANDARD
NAMES = tuple(tier.value for tier in Tier)
