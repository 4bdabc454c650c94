"""A PostgreSQL cluster of a test's own (initdb in a temporary directory, its own port,
timescaledb preloaded as scripts/local-stack.sh does), archiving its WAL to a pgBackRest
repository beside it: the restore drill destroys and restores it, never the shared server."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import psycopg
from psycopg import sql

from tests.support.services import free_port, tmpfs, until

ROOT = Path(__file__).resolve().parents[2]
BACKUP = str(ROOT / "deploy/pgbackrest/backup.sh")
PG_BIN = Path("/usr/lib/postgresql/15/bin")
STANZA = "drill"
OS_USER = "postgres"
ARCHIVED = "SELECT last_archived_wal >= %s FROM pg_stat_archiver"


def _as_user(*command: str) -> list[str]:
    """PostgreSQL refuses to run as root: as root, commands run as the postgres user."""
    return ["runuser", "-u", OS_USER, "--", *command] if os.getuid() == 0 else list(command)


class DrillCluster:
    """``start``/``stop``/``destroy`` a private cluster; ``backup``/``restore`` it through
    deploy/pgbackrest/backup.sh with a pgBackRest configuration of its own."""

    def __init__(self) -> None:
        # In memory where there is a tmpfs: pgBackRest syncs every file it writes (2,152 for
        # the drill's databases); on this machine's disk its restore alone took 9 s.
        self.dir = Path(tempfile.mkdtemp(prefix="ep-drill-", dir=tmpfs()))
        self.dir.chmod(0o755)
        self.port = free_port()
        self.data = self.dir / "data"
        self.socket = self.dir / "run"
        self.config = self.dir / "pgbackrest.conf"
        for part in ("run", "repo", "log", "spool", "lock"):
            (self.dir / part).mkdir()
        self.config.write_text(
            f"""[global]
repo1-path={self.dir}/repo
repo1-retention-full=2
log-path={self.dir}/log
lock-path={self.dir}/lock
spool-path={self.dir}/spool
log-level-console=warn
start-fast=y
compress-type=lz4
process-max=2
archive-timeout=30

[{STANZA}]
pg1-path={self.data}
pg1-port={self.port}
pg1-socket-path={self.socket}
pg1-user=postgres
"""
        )
        if os.getuid() == 0:
            user = pwd.getpwnam(OS_USER)
            for path in [self.dir, *self.dir.rglob("*")]:
                os.chown(path, user.pw_uid, user.pw_gid)
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def env(self) -> dict[str, str]:
        return {**os.environ, "PGBACKREST_CONFIG": str(self.config), "PGBACKREST_STANZA": STANZA}

    def _run(self, *command: str) -> str:
        done = subprocess.run(command, env=self.env(), capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"{command}: {done.stdout}{done.stderr}"
        return done.stdout + done.stderr

    def initdb(self) -> None:
        self._run(*_as_user(str(PG_BIN / "initdb"), "-D", str(self.data), "-U", "postgres",
                            "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync"))  # fmt: skip
        archive = f"pgbackrest --config={self.config} --stanza={STANZA} archive-push %p"
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(
                f"""
listen_addresses = '127.0.0.1'
unix_socket_directories = '{self.socket}'
shared_preload_libraries = 'timescaledb'
timescaledb.telemetry_level = off
max_locks_per_transaction = 256
archive_mode = on
archive_command = '{archive}'
# The drill proves backup and restore, not this disk's durability: without syncs the
# migrations, checkpoints and the restore take a fraction of the time. Nothing here crashes.
fsync = off
synchronous_commit = off
"""
            )

    def start(self) -> None:
        self._run(*_as_user(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-l",
                            str(self.dir / "log/postgres.log"), "-o", f"-p {self.port}",
                            "-w", "-t", "60", "start"))  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        if (self.data / "postmaster.pid").exists():
            self._run(*_as_user(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", mode,
                                "-w", "stop"))  # fmt: skip

    def destroy(self) -> None:
        """The disk is lost: the data directory goes, WAL and all."""
        self.stop()
        shutil.rmtree(self.data)

    def drop_templates(self) -> None:
        """Drop the migrated template the test databases were cloned from: it would only make
        every backup and restore bigger."""
        with psycopg.connect(self.url, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT datname FROM pg_database WHERE datname LIKE 'ep\\_template\\_%'"
            ).fetchall()
            for (name,) in rows:
                conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))

    def backup(self, *args: str) -> str:
        return self._run(BACKUP, *args)

    def archive_current_wal(self) -> None:
        """What archive_timeout does within its period: the WAL written so far goes to the
        repository (waits until pgBackRest has it)."""
        with psycopg.connect(self.url, autocommit=True) as conn:
            row = conn.execute("SELECT pg_walfile_name(pg_switch_wal())").fetchone()
            assert row is not None
            until(
                lambda: conn.execute(ARCHIVED, (row[0],)).fetchone(),
                120,
                f"WAL {row[0]} archived",
                holds=lambda archived: archived and archived[0],
            )

    def wait_promoted(self) -> None:
        until(self._in_recovery, 120, "the restored cluster finishes recovery", holds=False.__eq__)

    def _in_recovery(self) -> bool | str:
        """Whether the cluster still recovers (or why it does not answer)."""
        try:
            with psycopg.connect(self.url, autocommit=True, connect_timeout=2) as conn:
                row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
                return bool(row and row[0])
        except psycopg.OperationalError as e:
            return str(e).strip()

    def close(self) -> None:
        try:
            # Discarded anyway: no shutdown checkpoint, no wait for the archiver.
            self.stop("immediate")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
