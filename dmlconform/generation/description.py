"""Generator descriptions (`descriptions/*.yaml`, format dmlconform-generator/v1), read into plain data.

```yaml
format: dmlconform-generator/v1
op: SLICE_GRAD                # every family of the file builds cases of this operator
suite: slice_grad             # generated suites are named slice_grad.smoke, slice_grad.standard, ...
families:
  - name: cells               # case ids start with it: cells-float16-r3-0
    kind: slice-cells         # the builder (families/), which reads the other keys
    seed: 3000                # with each case's key, the only source of randomness
    counts: {smoke: 1, standard: 3, full: 8}   # cumulative; what a count counts is the kind's (here: per cell)
    about: every (data type, rank) the support table admits, random windows
    elements: {smoke: 24, standard: 256, full: 4096}
```

Anything malformed is a GenerationError naming the file, the family and the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dmlconform.generation import GenerationError
from dmlconform.ops import find_operator
from dmlconform.ops.base import Operator
from dmlconform.suite.tiers import Tier

FORMAT = "dmlconform-generator/v1"
DESCRIPTIONS = Path(__file__).resolve().parent / "descriptions"
_FAMILY_KEYS = {"name", "kind", "seed", "counts", "about"}


@dataclass(frozen=True)
class Family:
    file: Path
    op: Operator
    name: str
    kind: str
    seed: int
    counts: dict[Tier, int]
    about: str
    settings: dict[str, Any] = field(default_factory=dict)

    def error(self, key: str, message: str) -> GenerationError:
        return GenerationError(f"{self.file}: family '{self.name}': {key}: {message}")

    def new_in(self, tier: Tier) -> range:
        """The indexes of the family's cases that tier adds to the tiers below it (counts are cumulative)."""
        below = max((self.counts.get(t, 0) for t in Tier if t.rank < tier.rank), default=0)
        return range(below, max(below, self.counts.get(tier, below)))

    def setting(self, key: str, kind: type | tuple[type, ...], default: Any = None) -> Any:
        if key not in self.settings:
            if default is None:
                raise self.error(key, "missing")
            return default
        value = self.settings[key]
        if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _as_tuple(kind)):
            names = "/".join(k.__name__ for k in _as_tuple(kind))
            raise self.error(key, f"{value!r} is not a {names}")
        return value

    def per_tier(self, key: str, tier: Tier) -> int:
        """An integer setting given per tier ({smoke: 16, standard: 64}); a tier not named takes the one below."""
        table = self.setting(key, dict)
        for candidate in sorted(Tier, key=lambda t: -t.rank):
            if candidate.rank <= tier.rank and candidate.value in table:
                value = table[candidate.value]
                if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                    raise self.error(f"{key}.{candidate.value}", f"{value!r} is not a positive integer")
                return value
        raise self.error(key, f"names no tier at or below {tier.value}")


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


@dataclass(frozen=True)
class Description:
    file: Path
    op: Operator
    suite: str
    about: str
    families: tuple[Family, ...]


def load_description(path: Path, known_kinds: Mapping[str, object]) -> Description:
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise GenerationError(f"{path}: cannot be read as YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(document, Mapping) or document.get("format") != FORMAT:
        raise GenerationError(f"{path}: format: must be {FORMAT}")
    try:
        op = find_operator(document.get("op"))
    except KeyError as exc:
        raise GenerationError(f"{path}: op: {exc.args[0]}") from None
    suite = document.get("suite")
    if not isinstance(suite, str) or not suite.isidentifier():
        raise GenerationError(f"{path}: suite: {suite!r} must be a folder-style name such as slice_grad")
    raw_families = document.get("families")
    if not isinstance(raw_families, list) or not raw_families:
        raise GenerationError(f"{path}: families: must be a non-empty list")
    families = []
    names: set[str] = set()
    for position, raw in enumerate(raw_families):
        family = _family(path, op, raw, position, known_kinds)
        if family.name in names:
            raise GenerationError(f"{path}: family '{family.name}': name: used twice")
        names.add(family.name)
        families.append(family)
    return Description(path, op, suite, str(document.get("about", "")), tuple(families))


def _family(path: Path, op: Operator, raw: object, position: int, known_kinds: Mapping[str, object]) -> Family:
    if not isinstance(raw, Mapping):
        raise GenerationError(f"{path}: families[{position}]: must be a mapping")
    name = raw.get("name")
    label = name if isinstance(name, str) else f"#{position + 1}"

    def fail(key: str, message: str) -> GenerationError:
        return GenerationError(f"{path}: family '{label}': {key}: {message}")

    if not isinstance(name, str) or not name.replace("-", "").isalnum():
        raise fail("name", f"{name!r} must be letters, digits and dashes")
    kind = raw.get("kind")
    if kind not in known_kinds:
        raise fail("kind", f"{kind!r} is not one of {', '.join(sorted(known_kinds))}")
    seed = raw.get("seed")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise fail("seed", f"{seed!r} must be a non-negative integer")
    counts_raw = raw.get("counts")
    if not isinstance(counts_raw, Mapping) or not counts_raw:
        raise fail("counts", "must map tiers (smoke, standard, full) to cumulative counts")
    counts: dict[Tier, int] = {}
    previous = 0
    for tier in Tier:
        if tier.value not in counts_raw:
            continue
        value = counts_raw[tier.value]
        if isinstance(value, bool) or not isinstance(value, int) or value < previous:
            raise fail(f"counts.{tier.value}", f"{value!r} must be an integer no smaller than the tier below's "
                       f"{previous} (counts are cumulative)")
        counts[tier] = previous = value
    unknown = sorted(set(map(str, counts_raw)) - {t.value for t in Tier})
    if unknown:
        raise fail(f"counts.{unknown[0]}", "is not a tier")
    about = raw.get("about")
    if not isinstance(about, str) or not about.strip():
        raise fail("about", "say in a sentence what the family covers and why")
    settings = {str(k): v for k, v in raw.items() if k not in _FAMILY_KEYS}
    return Family(path, op, name, kind, seed, counts, " ".join(about.split()), settings)


def description_files(folder: Path | None = None) -> list[Path]:
    return sorted((folder or DESCRIPTIONS).glob("*.yaml"))
