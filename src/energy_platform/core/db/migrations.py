"""Schema migrations: ``sql/NNNN_name.sql`` applied in order, each file in one transaction;
then the definitions ``sql/functions/NN_name.sql``, all re-applied in name order on every run.

Applied migrations are recorded with their SHA-256; re-running applies only new files, and an
applied file that changed since is an error. A failing file leaves the database as it was.
Migrations change tables; functions and views live in the definitions, whose files are their
one current text (``CREATE OR REPLACE``), so changing one is editing its file.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import msgspec
import psycopg
import sqlparse
import structlog
from psycopg.errors import Diagnostic

from energy_platform.core.db.locks import LockKey
from energy_platform.core.errors import PlatformError

log = structlog.get_logger()

FILE_PATTERN = re.compile(r"^(?P<version>\d{4})_(?P<name>[a-z0-9_]+)\.sql$")
DEFINITIONS = "functions"
DEFINITION_PATTERN = re.compile(r"^\d{2}_[a-z0-9_]+\.sql$")

CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS public.schema_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    checksum   text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)"""
SELECT_APPLIED = "SELECT version, name, checksum, applied_at FROM public.schema_migrations"
INSERT_APPLIED = (
    "INSERT INTO public.schema_migrations (version, name, checksum) VALUES (%s, %s, %s)"
)


class MigrationError(PlatformError):
    slug = "migration"
    title = "Migration failed"


class Migration(msgspec.Struct, frozen=True):
    version: int
    name: str
    path: Path
    checksum: str

    @property
    def filename(self) -> str:
        return self.path.name


class Definition(msgspec.Struct, frozen=True):
    """A file of ``sql/functions/``: functions or views, re-applied on every run."""

    path: Path
    checksum: str

    @property
    def filename(self) -> str:
        return f"{DEFINITIONS}/{self.path.name}"


class AppliedMigration(msgspec.Struct, frozen=True):
    version: int
    name: str
    checksum: str
    applied_at: datetime


def discover(directory: Path) -> list[Migration]:
    """The migration files of ``directory`` in version order; bad names are an error."""
    migrations: dict[int, Migration] = {}
    for path in sorted(directory.glob("*.sql")):
        match = FILE_PATTERN.match(path.name)
        if match is None:
            raise MigrationError(f"{path.name}: name must look like 0001_some_name.sql")
        version = int(match["version"])
        if version in migrations:
            raise MigrationError(f"{path.name}: version {version} is used twice")
        checksum = hashlib.sha256(path.read_bytes()).hexdigest()
        migrations[version] = Migration(version, match["name"], path, checksum)
    return [migrations[v] for v in sorted(migrations)]


def definitions(directory: Path) -> list[Definition]:
    """The files of ``directory/functions`` in name order; bad names are an error."""
    found = []
    for path in sorted((directory / DEFINITIONS).glob("*.sql")):
        if DEFINITION_PATTERN.match(path.name) is None:
            raise MigrationError(f"{DEFINITIONS}/{path.name}: name must look like 10_some_name.sql")
        found.append(Definition(path, hashlib.sha256(path.read_bytes()).hexdigest()))
    return found


def applied(conninfo: str) -> list[AppliedMigration]:
    """What the database has recorded, oldest first (empty before the first run)."""
    with psycopg.connect(conninfo, autocommit=True) as conn:
        exists = conn.execute("SELECT to_regclass('public.schema_migrations')").fetchone()
        if exists is None or exists[0] is None:
            return []
        rows = conn.execute(SELECT_APPLIED + " ORDER BY version").fetchall()
    return [AppliedMigration(*row) for row in rows]


def migrate(conninfo: str, directory: Path) -> list[Migration]:
    """Apply the pending migrations of ``directory``, then all its definitions (one
    transaction); return the migrations applied by this call."""
    available = discover(directory)
    current = definitions(directory)
    done: list[Migration] = []
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.add_notice_handler(_log_warning)
        conn.execute("SELECT pg_advisory_lock(%s)", (int(LockKey.MIGRATIONS),))
        try:
            conn.execute(CREATE_TABLE)
            recorded = {row[0]: row for row in conn.execute(SELECT_APPLIED).fetchall()}
            _check_recorded(available, recorded)
            for migration in available:
                if migration.version not in recorded:
                    _apply(conn, migration)
                    done.append(migration)
            with conn.transaction():
                for definition in current:
                    _execute(conn, definition.filename, definition.path.read_text())
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (int(LockKey.MIGRATIONS),))
    return done


def _log_warning(diagnostic: Diagnostic) -> None:
    """A file's RAISE WARNING, for the operator (sql/functions/10_core_kernels.sql: the array
    kernels missing on this server). Notices are left out: every `IF EXISTS` makes one."""
    if diagnostic.severity_nonlocalized == "WARNING":
        log.warning("migrate", message=diagnostic.message_primary)


def _check_recorded(
    available: Sequence[Migration], recorded: dict[int, tuple[object, ...]]
) -> None:
    by_version = {m.version: m for m in available}
    for version, (_, name, checksum, _) in sorted(recorded.items()):
        migration = by_version.get(version)
        if migration is None:
            raise MigrationError(f"{version:04d}_{name}.sql is applied but missing from sql/")
        if migration.checksum != checksum:
            raise MigrationError(
                f"{migration.filename} changed after it was applied; add a new migration instead"
            )


def _apply(conn: psycopg.Connection, migration: Migration) -> None:
    with conn.transaction():
        _execute(conn, migration.filename, migration.path.read_text())
        conn.execute(INSERT_APPLIED, (migration.version, migration.name, migration.checksum))


def _execute(conn: psycopg.Connection, filename: str, text: str) -> None:
    """Run the statements of a file; a failure names the file and the statement."""
    statements = [s for s in sqlparse.split(text) if _has_code(s)]
    for number, statement in enumerate(statements, start=1):
        try:
            conn.execute(statement.encode())
        except psycopg.Error as e:
            error = str(e).strip().splitlines()[0]
            raise MigrationError(
                f"{filename}: statement {number} failed ({error}): {_summary(statement)}"
            ) from e


def _has_code(statement: str) -> bool:
    return bool(sqlparse.format(statement, strip_comments=True).strip().rstrip(";").strip())


def _summary(statement: str, width: int = 120) -> str:
    code = " ".join(sqlparse.format(statement, strip_comments=True).split())
    return code if len(code) <= width else code[: width - 3] + "..."
