"""Where the history lives: a database URL, one small interface, and its two implementations, SQLite (the standard
library's, a file on one machine) and PostgreSQL (psycopg 3, a team's shared server), which run the same schema and
the same SQL. Statements are written with `?` placeholders; the PostgreSQL side turns them into psycopg's.

Writers: SQLite takes the write lock at the start of each write transaction (BEGIN IMMEDIATE) and a second writer
waits for it (`?timeout=S`, default 30 s); PostgreSQL relies on the unique keys (a run's digest, a case's name) and
serialises schema changes with an advisory lock. Every failure of either database leaves as one HistoryError line.
"""

from __future__ import annotations

import os
import re
import sys
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from dmlconform import __version__
from dmlconform.history import HistoryError, schema

#: The environment variable that names the database when --db does not.
ENV = "DMLCONFORM_DB"
DEFAULT_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 10
#: The key of the PostgreSQL advisory lock that serialises schema changes ('dmlc').
SCHEMA_LOCK = 0x646D6C63
#: Ids per `IN (...)` list: well under SQLite's and PostgreSQL's limits on parameters.
CHUNK = 500
#: The oldest SQLite with `RETURNING` (3.35, 2021).
MIN_SQLITE = (3, 35)

Row = tuple[Any, ...]


@dataclass(frozen=True)
class DatabaseUrl:
    kind: str  # "sqlite" or "postgresql"
    #: The SQLite file, or the PostgreSQL connection URL as given.
    target: str
    #: How long a writer waits for another's lock (SQLite).
    timeout_s: float
    #: The URL for messages, without a password.
    shown: str


def data_folder(environ: dict[str, str] | os._Environ[str] = os.environ) -> Path:
    """The user's data folder for dmlconform: %LOCALAPPDATA% on Windows, Application Support on macOS, else
    $XDG_DATA_HOME or ~/.local/share."""
    if sys.platform == "win32":
        base = Path(environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        xdg = environ.get("XDG_DATA_HOME", "")
        base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".local" / "share"  # the spec ignores a relative one
    return base / "dmlconform"


def default_url(environ: dict[str, str] | os._Environ[str] = os.environ) -> str:
    return environ.get(ENV) or str(data_folder(environ) / "history.sqlite")


def hide_password(url: str) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        credentials, host = netloc.rsplit("@", 1)
        if ":" in credentials:
            credentials = credentials.split(":", 1)[0] + ":***"
        netloc = f"{credentials}@{host}"
    query = re.sub(r"(^|&)(password=)[^&]*", r"\1\2***", parts.query)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def parse_url(text: str) -> DatabaseUrl:
    """`postgresql://…` (libpq's URL), `sqlite:///PATH` (relative; `sqlite:////PATH` absolute, as SQLAlchemy writes
    them) or a plain file path; SQLite takes `?timeout=SECONDS`, how long a writer waits for another."""
    if text.startswith(("postgresql://", "postgres://")):
        return DatabaseUrl("postgresql", text, DEFAULT_TIMEOUT_S, hide_password(text))
    timeout = DEFAULT_TIMEOUT_S
    path = text
    if text.startswith("sqlite:"):
        if not text.startswith("sqlite:///"):
            raise HistoryError(f"{text}: a SQLite URL is sqlite:///PATH (relative) or sqlite:////PATH (absolute)")
        path, _, query = text[len("sqlite:///"):].partition("?")
        options = dict(parse_qsl(query, keep_blank_values=True))
        unknown = sorted(set(options) - {"timeout"})
        if unknown:
            raise HistoryError(f"{text}: unknown SQLite URL option {unknown[0]!r} (known: timeout)")
        if "timeout" in options:
            try:
                timeout = float(options["timeout"])
            except ValueError:
                timeout = -1.0
            if not 0 <= timeout <= 86_400:
                raise HistoryError(f"{text}: timeout={options['timeout']}: give seconds from 0 to 86400")
    elif "://" in text:
        raise HistoryError(f"{text.split('://')[0]}://: not a database this tool knows (sqlite:///PATH, a file path, "
                           "or postgresql://…)")
    if not path:
        raise HistoryError(f"{text}: names no SQLite file")
    return DatabaseUrl("sqlite", path, timeout, f"sqlite:///{path}")


def placeholders(count: int) -> str:
    return "(" + ", ".join("?" * count) + ")"


def chunks(values: Sequence[Any], size: int = CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(values), size):
        yield values[start:start + size]


class Database(ABC):
    """The operations the history needs, the same on both databases. Reads run outside any transaction; writes in
    `write()`, which commits at the end or rolls everything back."""

    kind: str

    def __init__(self, url: DatabaseUrl) -> None:
        self.url = url

    @property
    def shown(self) -> str:
        return self.url.shown

    @abstractmethod
    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """Rows of a statement (none for one that returns none)."""

    @abstractmethod
    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None: ...

    def copy_rows(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        """Many rows into a table, the fastest way the database has."""
        self.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES {placeholders(len(columns))}", rows)

    @abstractmethod
    def write(self) -> Iterator[None]:
        """A context: one write transaction."""

    @abstractmethod
    def lock_schema(self) -> None:
        """Inside write(): keep other writers from changing the schema until this transaction ends."""

    @abstractmethod
    def table_names(self) -> set[str]: ...

    @abstractmethod
    def statement(self, template: str) -> str:
        """A schema statement with this database's words for `{id}` and `{without_rowid}`."""

    @abstractmethod
    def tune(self) -> None:
        """Settings kept in the database itself, set once it is known to be ours."""

    @abstractmethod
    def vacuum(self) -> None: ...

    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SQLiteDatabase(Database):
    kind = "sqlite"

    def __init__(self, url: DatabaseUrl, create: bool) -> None:
        import sqlite3

        super().__init__(url)
        if sqlite3.sqlite_version_info < MIN_SQLITE:
            raise HistoryError(f"{url.shown}: SQLite {sqlite3.sqlite_version} is older than the "
                               f"{'.'.join(map(str, MIN_SQLITE))} this history needs")
        path = Path(url.target).expanduser()
        if not create and not path.exists():
            raise HistoryError(f"{url.shown}: no history database there (`dmlconform history add RESULT.json` "
                               "makes one)")
        if path.is_dir():
            raise HistoryError(f"{url.shown}: is a folder, not a database file")
        if create:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise HistoryError(f"{url.shown}: cannot make its folder ({exc.strerror or exc})") from None
        uri = f"{path.resolve().as_uri()}?mode={'rwc' if create else 'rw'}"
        with self._errors():
            # isolation_level=None: no implicit transactions; write() says BEGIN IMMEDIATE itself.
            self.connection = sqlite3.connect(uri, uri=True, timeout=url.timeout_s, isolation_level=None,
                                              check_same_thread=False)
            self.connection.execute("PRAGMA foreign_keys = ON")
            self.connection.execute("PRAGMA cache_size = -65536")

    @contextmanager
    def _errors(self) -> Iterator[None]:
        import sqlite3

        try:
            yield
        except sqlite3.Error as exc:
            raise HistoryError(f"{self.shown}: {self._reason(exc)}") from None

    def _reason(self, exc: Exception) -> str:
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if "locked" in text or "busy" in text:
            return (f"is locked by another process (waited {self.url.timeout_s:g} s; "
                    f"sqlite:///PATH?timeout=SECONDS waits longer) ({text})")
        if "not a database" in text:
            return f"is not a SQLite database, or is corrupt ({text})"
        if "malformed" in text:
            return f"is corrupt ({text})"
        if "unable to open" in text:
            return f"cannot be opened ({text})"
        if "readonly" in text:
            return f"cannot be written ({text})"
        return text

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        with self._errors():
            return self.connection.execute(sql, tuple(params)).fetchall()

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with self._errors():
            self.connection.executemany(sql, rows)

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._errors():
            self.connection.execute("BEGIN IMMEDIATE")
        try:
            yield
            with self._errors():
                self.connection.execute("COMMIT")
        except BaseException:
            with suppress(Exception):
                self.connection.execute("ROLLBACK")
            raise

    def lock_schema(self) -> None:
        """BEGIN IMMEDIATE holds the only write lock already."""

    def table_names(self) -> set[str]:
        rows = self.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        return {name for (name,) in rows}

    def statement(self, template: str) -> str:
        return template.format(id="INTEGER PRIMARY KEY", without_rowid=" WITHOUT ROWID")

    def tune(self) -> None:
        # WAL: readers never wait for a writer, and a commit writes its pages once. Kept in the file. The switch needs
        # the file to itself: another writer that is already in (a second CI job adding to the database this one just
        # made) would deadlock with a switch that waits for it, so each try fails at once, and tries again.
        import sqlite3
        import time

        give_up = time.monotonic() + self.url.timeout_s
        self.query("PRAGMA busy_timeout = 0")
        try:
            while True:
                try:
                    if self.connection.execute("PRAGMA journal_mode = WAL").fetchone()[0] == "wal":
                        return
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc) and "busy" not in str(exc):
                        raise HistoryError(f"{self.shown}: {self._reason(exc)}") from None
                if time.monotonic() > give_up:
                    raise HistoryError(f"{self.shown}: {self._reason(sqlite3.OperationalError('database is locked'))}")
                time.sleep(0.02)
        finally:
            self.query(f"PRAGMA busy_timeout = {round(self.url.timeout_s * 1000)}")

    def vacuum(self) -> None:
        self.query("VACUUM")

    def close(self) -> None:
        with suppress(Exception):
            self.connection.close()


class PostgresDatabase(Database):
    kind = "postgresql"

    def __init__(self, url: DatabaseUrl) -> None:
        super().__init__(url)
        try:
            import psycopg
        except ImportError:
            raise HistoryError(f"{url.shown}: PostgreSQL needs psycopg 3: pip install 'dmlconform[postgres]'") \
                from None
        try:
            options: dict[str, Any] = psycopg.conninfo.conninfo_to_dict(url.target)
        except psycopg.Error as exc:
            raise HistoryError(f"{url.shown}: not a PostgreSQL URL ({_first_line(exc)})") from None
        options.setdefault("connect_timeout", CONNECT_TIMEOUT_S)
        options.setdefault("application_name", "dmlconform")
        with self._errors("cannot connect: "):
            self.connection = psycopg.connect(**options, autocommit=True)

    @contextmanager
    def _errors(self, prefix: str = "") -> Iterator[None]:
        import psycopg

        try:
            yield
        except psycopg.Error as exc:
            raise HistoryError(f"{self.shown}: {prefix}{_first_line(exc)}") from None

    @staticmethod
    def _sql(sql: str) -> str:
        assert "%" not in sql, "a literal % would be read as a placeholder"
        return sql.replace("?", "%s")

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        with self._errors():
            cursor = self.connection.execute(self._sql(sql), tuple(params))
            return cursor.fetchall() if cursor.description is not None else []

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with self._errors(), self.connection.cursor() as cursor:
            cursor.executemany(self._sql(sql), list(rows))

    def copy_rows(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        with self._errors(), self.connection.cursor() as cursor, \
                cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._errors(), self.connection.transaction():
            yield

    def lock_schema(self) -> None:
        self.query("SELECT pg_advisory_xact_lock(?)", (SCHEMA_LOCK,))

    def table_names(self) -> set[str]:
        rows = self.query("SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")
        return {name for (name,) in rows}

    def statement(self, template: str) -> str:
        return template.format(id="BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY", without_rowid="")

    def tune(self) -> None:
        """Nothing: the server's own settings are its administrator's."""

    def vacuum(self) -> None:
        self.query("VACUUM ANALYZE")

    def close(self) -> None:
        with suppress(Exception):
            self.connection.close()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# -- opening, and the schema's version ----------------------------------------------------------------------------
def open_database(text: str | None, create: bool = False, check: bool = True) -> Database:
    """The database at a URL (default: $DMLCONFORM_DB, else history.sqlite in the user's data folder). `create`:
    make it, with the schema, when it holds nothing yet. `check`: refuse one whose schema is of another version
    (off only for `migrate`)."""
    url = parse_url(text or default_url())
    database: Database = SQLiteDatabase(url, create) if url.kind == "sqlite" else PostgresDatabase(url)
    try:
        version = schema_version(database)
        if version is None:
            if not create:
                raise HistoryError(f"{url.shown}: holds no runs yet (`dmlconform history add RESULT.json` makes the "
                                   "history)")
            made = False
            with database.write():
                database.lock_schema()
                version = schema_version(database)  # again, under the lock: another writer may have made it
                if version is None:
                    _apply(database, 0)
                    version, made = schema.latest(), True
            if made:
                database.tune()
        if check:
            _check_version(database, version)
    except BaseException:
        database.close()
        raise
    return database


def schema_version(database: Database) -> int | None:
    """The version the database's schema is at; None where it holds no table at all."""
    tables = database.table_names()
    if "history_meta" not in tables:
        if tables:
            names = ", ".join(sorted(tables)[:5]) + (", …" if len(tables) > 5 else "")
            raise HistoryError(f"{database.shown}: not a dmlconform history database (it holds other tables: "
                               f"{names})")
        return None
    rows = database.query("SELECT value FROM history_meta WHERE key = 'schema_version'")
    if not rows or not str(rows[0][0]).isdigit():
        raise HistoryError(f"{database.shown}: not a dmlconform history database (history_meta has no "
                           "schema_version)")
    return int(rows[0][0])


def _check_version(database: Database, version: int) -> None:
    latest = schema.latest()
    if version > latest:
        raise HistoryError(f"{database.shown}: its schema is version {version}, newer than this dmlconform's "
                           f"({latest}): upgrade dmlconform to use it")
    if version < latest:
        raise HistoryError(f"{database.shown}: its schema is version {version}, older than this dmlconform's "
                           f"({latest}): `dmlconform history migrate` upgrades it (then every dmlconform that uses it "
                           f"needs {__version__} or later)")


def migrate(database: Database) -> list[schema.Migration]:
    """Bring the schema to this dmlconform's version, in one transaction; the migrations applied."""
    with database.write():
        database.lock_schema()
        version = schema_version(database) or 0
        if version > schema.latest():
            _check_version(database, version)
        applied = _apply(database, version)
    database.tune()
    return applied


def _apply(database: Database, version: int) -> list[schema.Migration]:
    steps = [migration for migration in schema.MIGRATIONS if migration.version > version]
    for migration in steps:
        for statement in migration.statements:
            database.query(database.statement(statement))
        database.query("INSERT INTO history_meta (key, value) VALUES ('schema_version', ?) "
                       "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (str(migration.version),))
    if version == 0 and steps:
        database.query("INSERT INTO history_meta (key, value) VALUES ('created_by', ?)", (f"dmlconform {__version__}",))
    return steps
