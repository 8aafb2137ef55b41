"""The database layer: URLs, the schema and its versions, and every way a database can be unusable (one line each;
nothing half-written)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from dmlconform.history import HistoryError, schema
from dmlconform.history.database import (
    DEFAULT_TIMEOUT_S,
    data_folder,
    default_url,
    hide_password,
    migrate,
    open_database,
    parse_url,
    schema_version,
)
from dmlconform.history.ingest import add_records, record_from_document
from tests.history import scenario


@pytest.mark.parametrize(("text", "kind", "target", "timeout"), [
    ("history.sqlite", "sqlite", "history.sqlite", DEFAULT_TIMEOUT_S),
    ("/var/ci/history.db", "sqlite", "/var/ci/history.db", DEFAULT_TIMEOUT_S),
    ("sqlite:///rel/h.db", "sqlite", "rel/h.db", DEFAULT_TIMEOUT_S),
    ("sqlite:////abs/h.db?timeout=2.5", "sqlite", "/abs/h.db", 2.5),
    ("postgresql://ci@db.example/results", "postgresql", "postgresql://ci@db.example/results", DEFAULT_TIMEOUT_S),
    ("postgres://ci@db/r", "postgresql", "postgres://ci@db/r", DEFAULT_TIMEOUT_S),
])
def test_urls(text: str, kind: str, target: str, timeout: float) -> None:
    url = parse_url(text)
    assert (url.kind, url.target, url.timeout_s) == (kind, target, timeout)


@pytest.mark.parametrize(("text", "message"), [
    ("mysql://x/y", "not a database this tool knows"),
    ("sqlite:relative.db", "a SQLite URL is sqlite:///PATH"),
    ("sqlite:///h.db?timeout=soon", "give seconds"),
    ("sqlite:///h.db?mode=ro", "unknown SQLite URL option 'mode'"),
    ("sqlite:///", "names no SQLite file"),
])
def test_bad_urls(text: str, message: str) -> None:
    with pytest.raises(HistoryError, match=message):
        parse_url(text)


def test_a_password_is_never_shown() -> None:
    assert hide_password("postgresql://ci:s3cret@db:5432/r?sslmode=require") == \
        "postgresql://ci:***@db:5432/r?sslmode=require"
    assert hide_password("postgresql://db/r?user=ci&password=s3cret") == "postgresql://db/r?user=ci&password=***"
    assert "s3cret" not in parse_url("postgresql://ci:s3cret@db/r").shown


def test_the_default_database_is_in_the_users_data_folder(tmp_path: Path) -> None:
    assert default_url({"DMLCONFORM_DB": "postgresql://ci@db/r"}) == "postgresql://ci@db/r"
    environ = {"XDG_DATA_HOME": str(tmp_path)}
    assert default_url(environ) == str(tmp_path / "dmlconform" / "history.sqlite")
    assert data_folder({"XDG_DATA_HOME": "relative"}) == Path.home() / ".local" / "share" / "dmlconform"


def test_a_new_database_gets_the_latest_schema_once(database_url: str) -> None:
    with open_database(database_url, create=True) as database:
        assert schema_version(database) == schema.latest()
        names = database.table_names()
    assert {"history_meta", "statuses", "stacks", "cases", "runs", "run_meta", "case_results"} <= names
    with open_database(database_url, create=True) as database:  # a second open changes nothing
        assert schema_version(database) == schema.latest()
        assert database.query("SELECT COUNT(*) FROM statuses")[0][0] == len(schema.STATUS_CODES)


def test_sqlite_keeps_its_file_in_wal_mode(tmp_path: Path) -> None:
    with open_database(str(tmp_path / "h.sqlite"), create=True):
        pass
    assert sqlite3.connect(tmp_path / "h.sqlite").execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_queries_do_not_make_a_database(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match="no history database there"):
        open_database(str(tmp_path / "missing.sqlite"))
    assert not (tmp_path / "missing.sqlite").exists()


def test_an_empty_database_holds_no_runs_yet(database_url: str) -> None:
    if database_url.endswith(".sqlite"):
        sqlite3.connect(database_url).close()  # an empty file
    with pytest.raises(HistoryError, match="holds no runs yet"):
        open_database(database_url)


def test_another_programs_database_is_left_alone(database_url: str) -> None:
    if database_url.endswith(".sqlite"):
        with sqlite3.connect(database_url) as other:
            other.execute("CREATE TABLE invoices (id INTEGER)")
    else:
        import psycopg

        with psycopg.connect(database_url, autocommit=True) as other:
            other.execute("CREATE TABLE invoices (id INTEGER)")
    with pytest.raises(HistoryError, match=r"not a dmlconform history database \(it holds other tables: invoices\)"):
        open_database(database_url, create=True)


def _set_version(database_url: str, version: int) -> None:
    with open_database(database_url, create=True) as database, database.write():
        database.query("UPDATE history_meta SET value = ? WHERE key = 'schema_version'", (str(version),))


def test_a_newer_schema_is_refused(database_url: str) -> None:
    latest = schema.latest()
    _set_version(database_url, latest + 1)
    with pytest.raises(HistoryError, match=rf"schema is version {latest + 1}, newer than this dmlconform's "
                                           rf"\({latest}\): upgrade"):
        open_database(database_url)
    with pytest.raises(HistoryError, match="newer"), open_database(database_url, check=False) as database:
        migrate(database)


def test_an_older_schema_is_refused_until_migrated(database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A release with a schema version one newer (a column more) meets a database of today's: it refuses it, and
    `migrate` upgrades it in place, keeping its runs."""
    latest = schema.latest()
    with open_database(database_url, create=True) as database:
        add_records(database, [record_from_document(scenario.document("GPU-A", 1), "a1")])
    step = schema.Migration(latest + 1, "a note per run", ("ALTER TABLE runs ADD COLUMN note TEXT",))
    monkeypatch.setattr(schema, "MIGRATIONS", (*schema.MIGRATIONS, step))
    with pytest.raises(HistoryError, match=rf"version {latest}, older than this dmlconform's \({latest + 1}\): "
                                           "`dmlconform history migrate` upgrades it"):
        open_database(database_url)
    with open_database(database_url, check=False) as database:
        assert [m.version for m in migrate(database)] == [latest + 1]
        assert migrate(database) == []
    with open_database(database_url) as database:
        assert database.query("SELECT COUNT(*), COUNT(note) FROM runs")[0] == (1, 0)


def test_a_failing_migration_leaves_the_schema_as_it_was(database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with open_database(database_url, create=True):
        pass
    latest = schema.latest()
    step = schema.Migration(latest + 1, "broken", ("ALTER TABLE runs ADD COLUMN note TEXT",
                                                   "ALTER TABLE nothing ADD x TEXT"))
    monkeypatch.setattr(schema, "MIGRATIONS", (*schema.MIGRATIONS, step))
    with open_database(database_url, check=False) as database:
        with pytest.raises(HistoryError):
            migrate(database)
        assert schema_version(database) == latest
        assert database.query("SELECT COUNT(*) FROM runs")[0][0] == 0  # and runs has no note column:
        with pytest.raises(HistoryError):
            database.query("SELECT note FROM runs")


def test_a_locked_sqlite_file_is_one_line_after_the_timeout(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    with open_database(str(path), create=True):
        pass
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with open_database(f"sqlite:///{path}?timeout=0.2") as database, \
                pytest.raises(HistoryError, match=r"is locked by another process \(waited 0.2 s"):
            add_records(database, [record_from_document(scenario.document("GPU-A", 1), "a1")])
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with open_database(str(path)) as database:
        assert database.query("SELECT COUNT(*) FROM runs")[0][0] == 0


def test_a_file_that_is_not_sqlite_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    path.write_bytes(b"this is a text file, not a database\n" * 200)
    with pytest.raises(HistoryError, match="is not a SQLite database, or is corrupt"):
        open_database(str(path), create=True)
    assert path.read_bytes().startswith(b"this is a text file")


def test_a_corrupt_sqlite_file_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    with open_database(str(path), create=True) as database:
        add_records(database, [record_from_document(scenario.document("GPU-A", b), f"a{b}") for b in (1, 2, 3)])
        database.query("PRAGMA wal_checkpoint(TRUNCATE)")
    raw = bytearray(path.read_bytes())
    raw[4096:] = bytes(len(raw) - 4096)  # every page after the first zeroed: the tables' pages are gone
    path.write_bytes(bytes(raw))
    from dmlconform.history.queries import load_runs

    with pytest.raises(HistoryError, match=r"sqlite:///.*h\.sqlite: (is corrupt|is not a SQLite database)") as caught, \
            open_database(str(path)) as database:
        load_runs(database)
    assert "\n" not in str(caught.value)


def test_an_unreachable_server_is_one_line() -> None:
    pytest.importorskip("psycopg")
    with pytest.raises(HistoryError, match=r"postgresql://ci:\*\*\*@127.0.0.1:1/results\?connect_timeout=3: cannot "
                                           "connect") as caught:
        open_database("postgresql://ci:s3cret@127.0.0.1:1/results?connect_timeout=3")
    assert "s3cret" not in str(caught.value) and "\n" not in str(caught.value)


def test_without_psycopg_postgresql_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "psycopg", None)  # `import psycopg` raises ImportError
    with pytest.raises(HistoryError, match=r"needs psycopg 3: pip install 'dmlconform\[postgres\]'"):
        open_database("postgresql://ci@db/r")


def test_ci_turns_a_missing_postgresql_into_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.history.conftest import REQUIRE, _unavailable

    monkeypatch.delenv(REQUIRE, raising=False)
    with pytest.raises(pytest.skip.Exception, match="no server"):
        _unavailable("no server")
    monkeypatch.setenv(REQUIRE, "1")
    with pytest.raises(pytest.fail.Exception, match="no server; DMLCONFORM_REQUIRE_POSTGRES=1 says"):
        _unavailable("no server")


def test_psycopg_is_imported_only_for_postgresql(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = ("import sys; from dmlconform.history.database import open_database; "
            f"open_database({str(tmp_path / 'h.sqlite')!r}, create=True).close(); "
            "print('psycopg' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"
