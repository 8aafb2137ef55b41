"""The history database's tables, as migrations: each a version and the statements that bring a database from the
version before to it. The statements are written once for both databases; `{id}` (an integer key the database
assigns) and `{without_rowid}` (SQLite keeps case rows clustered by their key) are filled in per database.

Case rows are the bulk (a run of the full tier is about 5,900): integer keys for runs and cases, statuses as small
codes, clustered by run (a run's rows are written together), one index by case for timelines. The few rows that
failed or were settled as FLAKE are listed again in `failures`, so that the questions about failures start from
those and never scan every row. (A partial index would hold the same; but whether a database's planner uses one
depends on its statistics, and SQLite keeps none until ANALYZE: with 6 million rows it scanned them all.)
"""

from __future__ import annotations

from dataclasses import dataclass

from dmlconform.case_result import Status

#: A status's code in case rows. Fixed: never renumber; a new status gets the next code and a migration adding it.
STATUS_CODES: dict[Status, int] = {
    Status.PASS: 1, Status.FAIL: 2, Status.INVALID_OK: 3, Status.NOT_SUPPORTED: 4, Status.NOT_REQUIRED: 5,
    Status.ERROR: 6, Status.CRASH: 7, Status.TIMEOUT: 8, Status.EXPECTED_FAIL: 9, Status.UNEXPECTED_PASS: 10,
    Status.FLAKE: 11, Status.SKIPPED: 12, Status.NOT_RUN: 13, Status.WAIVED: 14,
}
STATUS_NAMES: dict[int, str] = {code: status.value for status, code in STATUS_CODES.items()}


@dataclass(frozen=True)
class Migration:
    version: int
    what: str
    statements: tuple[str, ...]


_STATUS_ROWS = ", ".join(f"({code}, '{name}')" for code, name in sorted(STATUS_NAMES.items()))

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "runs, their metadata and every case's result", (
        "CREATE TABLE history_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        "CREATE TABLE statuses (code SMALLINT PRIMARY KEY, name TEXT NOT NULL UNIQUE)",
        f"INSERT INTO statuses (code, name) VALUES {_STATUS_ROWS}",
        "CREATE TABLE stacks (id {id}, name TEXT NOT NULL UNIQUE)",
        "CREATE TABLE cases (id {id}, name TEXT NOT NULL UNIQUE, op TEXT NOT NULL, dtype TEXT NOT NULL)",
        # digest: SHA-256 of the document's canonical JSON, the run's identity. configuration: SHA-256 of what the
        # document says went into the run besides the code under test (backend and driver versions, DirectML.dll,
        # suite fingerprint, settings, expectation files): runs sharing it and the stack are "the same inputs".
        "CREATE TABLE runs (id {id}, digest TEXT NOT NULL UNIQUE, stack_id BIGINT NOT NULL REFERENCES stacks (id),"
        " configuration TEXT NOT NULL, started TEXT NOT NULL, started_us BIGINT NOT NULL, added TEXT NOT NULL,"
        " source TEXT NOT NULL, cases INTEGER NOT NULL, passed INTEGER NOT NULL, failed INTEGER NOT NULL,"
        " summary TEXT NOT NULL, fingerprint TEXT NOT NULL)",
        "CREATE INDEX runs_by_stack ON runs (stack_id, started_us, id)",
        "CREATE TABLE run_meta (run_id BIGINT NOT NULL REFERENCES runs (id), key TEXT NOT NULL,"
        " value TEXT NOT NULL, PRIMARY KEY (run_id, key))",
        "CREATE INDEX run_meta_by_value ON run_meta (key, value)",
        # passed: 1 the case matched, 0 it failed (EXPECTED_FAIL, FLAKE and WAIVED by what they came to), NULL
        # neither (skipped, not run, not required and not matched).
        "CREATE TABLE case_results (run_id BIGINT NOT NULL REFERENCES runs (id),"
        " case_id BIGINT NOT NULL REFERENCES cases (id), status SMALLINT NOT NULL, outcome SMALLINT NOT NULL,"
        " passed SMALLINT, matched TEXT, closeness DOUBLE PRECISION, max_ulp BIGINT,"
        " PRIMARY KEY (run_id, case_id)){without_rowid}",
        "CREATE INDEX case_results_by_case ON case_results (case_id, run_id)",
        # The case rows that failed (passed 0) or whose retries disagreed (FLAKE), once more.
        "CREATE TABLE failures (run_id BIGINT NOT NULL REFERENCES runs (id),"
        " case_id BIGINT NOT NULL REFERENCES cases (id), PRIMARY KEY (run_id, case_id)){without_rowid}",
    )),
    Migration(2, "the known issue of a DirectML release each case fell under", (
        # NULL where none: the case's own result, or a run from before known issues were applied.
        "ALTER TABLE case_results ADD COLUMN known_issue TEXT",
    )),
)


def latest() -> int:
    """The version this dmlconform's schema is at (read when asked: tests add a migration of their own)."""
    return MIGRATIONS[-1].version
