"""Test databases: a fresh one per test module, cloned from a migrated template, from a test
process's ``Databases`` (made one ahead, dropped behind); scratch databases, and dropping any:
``energy_platform.seeding``.

The server is ``EP_TEST_DATABASE_URL`` if set, else a testcontainers TimescaleDB when a Docker
engine answers, else the private cluster of ``make test`` (``EP_DATABASE_URL``).
"""

from __future__ import annotations

import hashlib
import os
import secrets
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager

import psycopg
from psycopg import sql

from energy_platform.core.db.migrations import definitions, discover, migrate
from energy_platform.core.paths import migrations_dir
from energy_platform.core.settings import Settings
from energy_platform.seeding import drop_database, with_database

TEMPLATE_LOCK = 0x45505F54504C  # "EP_TPL": one session builds the template, the others wait
TIMESCALE_IMAGE = "timescale/timescaledb:2.19.3-pg17"


def _docker_answers() -> bool:
    try:
        import docker

        docker.from_env(timeout=3).ping()
    except Exception:
        return False
    return True


@contextmanager
def database_server() -> Iterator[str]:
    """The URL of a server the tests may create databases on."""
    if url := os.environ.get("EP_TEST_DATABASE_URL"):
        yield url
        return
    if _docker_answers():
        from testcontainers.postgres import PostgresContainer

        with PostgresContainer(TIMESCALE_IMAGE, driver=None) as container:
            yield container.get_connection_url()
        return
    yield Settings.from_env(os.environ).database.url


def _template_name() -> str:
    digest = hashlib.sha256()
    for migration in discover(migrations_dir()):
        digest.update(migration.checksum.encode())
    for definition in definitions(migrations_dir()):
        digest.update(definition.checksum.encode())
    return f"ep_template_{digest.hexdigest()[:12]}"


def _create_database(conn: psycopg.Connection, name: str, template: str) -> None:
    statement = sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
        sql.Identifier(name), sql.Identifier(template)
    )
    for attempt in range(20):
        try:
            conn.execute(statement)
        except psycopg.errors.ObjectInUse:
            # TimescaleDB's scheduler may hold a connection to the template for a moment.
            _disconnect(conn, template)
            time.sleep(0.1 * (attempt + 1))
        else:
            return
    conn.execute(statement)


def _disconnect(conn: psycopg.Connection, name: str) -> None:
    conn.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
        " WHERE datname = %s AND pid <> pg_backend_pid()",
        (name,),
    )


def _ensure_template(conn: psycopg.Connection, server: str) -> str:
    template = _template_name()
    exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (template,)).fetchone()
    if exists:
        return template
    stale = conn.execute(
        "SELECT datname FROM pg_database WHERE datname LIKE 'ep\\_template\\_%%'"
    ).fetchall()
    for (name,) in stale:
        conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
    building = template + "_building"
    conn.execute(
        sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(building))
    )
    conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(building)))
    migrate(with_database(server, building), migrations_dir())
    # No connections to a template: nothing (not even TimescaleDB's scheduler) may block cloning.
    conn.execute(
        sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS false").format(sql.Identifier(building))
    )
    _disconnect(conn, building)
    conn.execute(
        sql.SQL("ALTER DATABASE {} RENAME TO {}").format(
            sql.Identifier(building), sql.Identifier(template)
        )
    )
    return template


def create_session_database(server: str) -> str:
    """A new database migrated to the current ``sql/``; its URL. Copies are made side by side
    (the template lock shared); building or replacing the template takes it alone. Made one
    at a time, the copies of a whole run (a database per module) waited 25 s in all for the
    lock, at a load of 7."""
    name = f"ep_test_{int(time.time())}_{secrets.token_hex(3)}"
    template = _template_name()
    with psycopg.connect(with_database(server, "postgres"), autocommit=True) as conn:
        while True:
            conn.execute("SELECT pg_advisory_lock_shared(%s)", (TEMPLATE_LOCK,))
            try:
                if conn.execute(
                    "SELECT 1 FROM pg_database WHERE datname = %s", (template,)
                ).fetchone():
                    _create_database(conn, name, template)
                    return with_database(server, name)
            finally:
                conn.execute("SELECT pg_advisory_unlock_shared(%s)", (TEMPLATE_LOCK,))
            conn.execute("SELECT pg_advisory_lock(%s)", (TEMPLATE_LOCK,))
            try:
                _ensure_template(conn, server)
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (TEMPLATE_LOCK,))


class Databases:
    """A test process's module databases, made one ahead and dropped behind in a thread of its
    own. Under the whole suite a copy of the template took 0.6 s and a drop 1 s on average
    (0.13 s and 0.06 s on an idle server: a drop waits for a checkpoint of every database's
    writes), and a worker waited for both at every module (pg_stat_statements over a run: 64 s
    and 98 s). Now its next module's copy is made while the current one runs, and a drop
    while the next one does."""

    def __init__(self, server: str) -> None:
        self._server = server
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="databases")
        self._next: Future[str] | None = None
        self._drops: list[Future[None]] = []

    def take(self) -> str:
        """A new database migrated to the current ``sql/`` (``create_session_database``)."""
        url = self._next.result() if self._next else create_session_database(self._server)
        self._next = self._thread.submit(create_session_database, self._server)
        return url

    def drop(self, url: str) -> None:
        """Drop ``url``'s database, later; ``close`` reports a drop that failed."""
        self._drops.append(self._thread.submit(drop_database, url))

    def close(self) -> None:
        """Drop the database made ahead, and wait for every drop."""
        if self._next is not None:
            self.drop(self._next.result())
            self._next = None
        self._thread.shutdown(wait=True)
        for drop in self._drops:
            drop.result()
