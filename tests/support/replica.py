"""A real hot standby of the private PostgreSQL: ``pg_basebackup -R`` of the running server into a
temporary directory, started on a free port, streaming from the primary."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import SplitResult, urlsplit

import psycopg

from tests.support.services import free_port, with_port


def _bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not found:
        raise RuntimeError(f"{name} not found (PostgreSQL's server package)")
    return found[-1]


def _as_postgres(command: list[str]) -> list[str]:
    # The private server runs as the postgres user when the tests run as root.
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


BACKUP_ATTEMPTS = 3


def _base_backup(primary: SplitResult, primary_url: str, data: Path, slot: str) -> None:
    """``pg_basebackup -R`` into ``data``, with a slot of its own. The suite's other workers
    create and drop databases on the same server meanwhile; a backup that fails among them is
    taken again from scratch (a new directory, the half-made slot dropped), and the last
    failure says what pg_basebackup said."""
    command = _as_postgres(
        [
            _bin("pg_basebackup"),
            "-h", primary.hostname or "127.0.0.1",
            "-p", str(primary.port or 5432),
            "-U", primary.username or "postgres",
            "-D", str(data),
            "-R",  # standby.signal and primary_conninfo: a streaming hot standby
            # A slot of its own: the primary keeps the WAL the standby has not received.
            # Without one, a primary busy with the suite's other tests recycled a segment
            # before the standby asked for it ("requested WAL segment ... has already been
            # removed"), and the standby never caught up.
            "-C", "-S", slot,
            "-X", "stream",
            "-c", "fast",  # checkpoint now, not at the next spread one (minutes)
        ]
    )  # fmt: skip
    for attempt in range(1, BACKUP_ATTEMPTS + 1):
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode == 0:
            return
        shutil.rmtree(data, ignore_errors=True)
        _drop_slot(primary_url, slot)
        if attempt == BACKUP_ATTEMPTS:
            raise AssertionError(f"pg_basebackup failed {attempt} times: {done.stderr.strip()}")


def _drop_slot(primary_url: str, slot: str) -> None:
    with psycopg.connect(primary_url, autocommit=True) as primary_conn:
        primary_conn.execute(
            "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots"
            " WHERE slot_name = %s",
            (slot,),
        )


@contextmanager
def hot_standby(primary_url: str) -> Iterator[str]:
    """The URL (same database and user) of a hot standby of the server behind ``primary_url``."""
    primary = urlsplit(primary_url)
    port = free_port()
    slot = f"ep_test_replica_{port}"
    directory = Path(tempfile.mkdtemp(prefix="ep-replica-"))
    data = directory / "data"
    if os.geteuid() == 0:
        shutil.chown(directory, "postgres", "postgres")
    _base_backup(primary, primary_url, data, slot)
    ctl = _bin("pg_ctl")
    options = f"-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={directory}"
    subprocess.run(
        _as_postgres(
            [ctl, "-D", str(data), "-l", str(directory / "log"), "-o", options, "-w", "start"]
        ),
        check=True,
        capture_output=True,
    )
    try:
        yield with_port(primary_url, port)
    finally:
        subprocess.run(
            _as_postgres([ctl, "-D", str(data), "-m", "immediate", "-w", "stop"]),
            check=False,
            capture_output=True,
        )
        _drop_slot(primary_url, slot)
        shutil.rmtree(directory, ignore_errors=True)
