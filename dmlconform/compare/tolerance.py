"""Tolerance rules as the contract names them: exact, ulp:N, bound and bound:K."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class RuleKind(Enum):
    EXACT = "exact"
    ULP = "ulp"
    BOUND = "bound"


@dataclass(frozen=True)
class Tolerance:
    kind: RuleKind
    ulps: int = 0
    #: The bound's K; None means "each element's number of contributions".
    k: float | None = None

    @classmethod
    def exact(cls) -> Tolerance:
        return cls(RuleKind.EXACT)

    @classmethod
    def bound(cls, k: float | None = None) -> Tolerance:
        return cls(RuleKind.BOUND, k=k)

    @classmethod
    def parse(cls, text: object) -> Tolerance:
        if not isinstance(text, str):
            raise ValueError(f"tolerance must be exact, ulp:N, bound or bound:K, got {text!r}")
        name, _, arg = text.strip().partition(":")
        name = name.strip().lower()
        if name == "exact" and not arg:
            return cls.exact()
        if name == "ulp":
            if not arg.strip().isdigit():
                raise ValueError(f"{text!r}: ulp needs a non-negative integer, as in ulp:2")
            return cls(RuleKind.ULP, ulps=int(arg))
        if name == "bound":
            if not arg:
                return cls.bound()
            try:
                k = float(arg)
            except ValueError:
                raise ValueError(f"{text!r}: bound:K needs a number K") from None
            if not k >= 0 or k == float("inf"):
                raise ValueError(f"{text!r}: K must be a finite number >= 0")
            return cls.bound(k)
        raise ValueError(f"unknown tolerance {text!r} (use exact, ulp:N, bound or bound:K)")

    def __str__(self) -> str:
        if self.kind is RuleKind.ULP:
            return f"ulp:{self.ulps}"
        if self.kind is RuleKind.BOUND:
            return "bound" if self.k is None else f"bound:{self.k:g}"
        return "exact"

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {"rule": str(self), "kind": self.kind.value}
        if self.kind is RuleKind.ULP:
            data["ulps"] = self.ulps
        if self.kind is RuleKind.BOUND:
            data["k"] = "contributions" if self.k is None else self.k
        return data
