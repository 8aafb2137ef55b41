"""Results over time: a database of runs (SQLite on one machine, PostgreSQL for a team's server) that answers what
one result document cannot: a case's timeline, the run where it started failing, the cases that flip between pass
and fail on the same stack and inputs, closeness creeping towards its allowance, and the pass rate per value of any
metadata key.

`schema` holds the tables and their migrations, `database` the one interface both databases implement, `ingest` turns
result documents into runs, `queries` answers from them with plain dataclasses (the report layer draws them)."""

from __future__ import annotations


class HistoryError(ValueError):
    """Unusable history input or database: one line naming the file or database and what is wrong with it."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.replace("\r", " ").split("\n")).strip())
