"""Triage of one case: find it, get what the backend returned, look at it element by element, and bundle it
for a driver team (show, repro). Above the runner and the results layer; renderers live in `report/`."""

from __future__ import annotations


class TriageError(ValueError):
    """Unusable triage input (a case in no suite, a result that lacks it): one line naming what and where."""
