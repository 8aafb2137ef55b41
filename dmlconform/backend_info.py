"""What a backend says about itself; plain data shared by backends, the runner and the result readers."""

from __future__ import annotations

from dataclasses import dataclass, field

from dmlconform.feature_levels import FeatureLevel


@dataclass
class BackendInfo:
    name: str
    version: str
    device: str
    #: The level the backend claims, and a line saying how it was found.
    feature_level: FeatureLevel
    feature_level_source: str = ""
    extra: dict[str, str] = field(default_factory=dict)
