"""The databases the history tests run on: a SQLite file per test, and a database per test on one throwaway
PostgreSQL server per test session (initdb and pg_ctl in a temporary folder, a Unix socket only, no fsync).

Where no PostgreSQL server binaries are installed the PostgreSQL tests skip, saying why; with
DMLCONFORM_REQUIRE_POSTGRES=1 (CI sets it) that skip is a failure instead.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REQUIRE = "DMLCONFORM_REQUIRE_POSTGRES"
PORT = 5432  # only names the socket file: the server listens on no TCP port


def postgres_binaries() -> Path | None:
    """The folder with initdb and pg_ctl: on PATH, else Debian's /usr/lib/postgresql/N/bin (the newest)."""
    on_path = shutil.which("pg_ctl")
    if on_path and shutil.which("initdb"):
        return Path(on_path).parent
    folders = [Path(p) for p in glob.glob("/usr/lib/postgresql/*/bin") if (Path(p) / "initdb").exists()]
    folders.sort(key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    return folders[-1] if folders else None


@dataclass
class PostgresServer:
    folder: Path
    counter: Iterator[int]

    def url(self, schema: str | None = None) -> str:
        url = f"postgresql:///postgres?host={self.folder}&port={PORT}&user=postgres"
        return url + (f"&options=-csearch_path%3D{schema}" if schema else "")

    def new_database(self) -> str:
        """A schema of its own (what a team's server may give dmlconform too): CREATE DATABASE takes half a
        second, CREATE SCHEMA none."""
        import psycopg

        name = f"history_{next(self.counter)}"
        with psycopg.connect(self.url(), autocommit=True) as admin:
            admin.execute(f"CREATE SCHEMA {name}")
        return self.url(name)


def _unavailable(reason: str) -> None:
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{reason}; {REQUIRE}=1 says these PostgreSQL tests must run here")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _unavailable("psycopg is not installed (pip install 'dmlconform[postgres]')")
    binaries = postgres_binaries()
    if binaries is None:
        _unavailable("no PostgreSQL server binaries (Debian: apt-get install postgresql)")
    assert binaries is not None
    prefix: list[str] = []
    folder = Path(tempfile.mkdtemp(prefix="dmlconform-pg-"))
    if os.geteuid() == 0:  # initdb refuses root: the server runs as the postgres user
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            shutil.rmtree(folder)
            _unavailable("running as root and there is no postgres user to run the server as")
        os.chown(folder, user.pw_uid, user.pw_gid)
        prefix = ["runuser", "-u", "postgres", "--"]
    data = folder / "data"

    def run(*args: str) -> None:
        done = subprocess.run([*prefix, *args], capture_output=True, text=True, timeout=120)
        if done.returncode:
            raise RuntimeError(f"{' '.join(args)}: {done.stdout[-1500:]}{done.stderr[-1500:]}")

    try:
        run(str(binaries / "initdb"), "-D", str(data), "--auth=trust", "-U", "postgres", "--no-sync", "-E", "UTF8",
            "--locale=C")
        run(str(binaries / "pg_ctl"), "-D", str(data), "-l", str(folder / "server.log"), "-w", "-t", "60", "-o",
            f"-c listen_addresses='' -k {folder} -p {PORT} -c fsync=off -c synchronous_commit=off "
            "-c full_page_writes=off", "start")
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        shutil.rmtree(folder, ignore_errors=True)
        _unavailable(f"could not start a PostgreSQL server: {exc}")
    try:
        yield PostgresServer(folder, itertools.count(1))
    finally:
        subprocess.run([*prefix, str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                       capture_output=True, timeout=60)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def new_url(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], str]:
    """Makes an empty database of the parametrised kind and gives its URL."""
    if request.param == "sqlite":
        counter = itertools.count(1)
        return lambda: str(tmp_path / f"history-{next(counter)}.sqlite")
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.new_database


@pytest.fixture
def database_url(new_url: Callable[[], str]) -> str:
    return new_url()
