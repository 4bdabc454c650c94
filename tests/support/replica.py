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
from urllib.parse import urlsplit

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
    subprocess.run(
        _as_postgres(
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
        ),
        check=True,
        capture_output=True,
    )  # fmt: skip
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
        with psycopg.connect(primary_url, autocommit=True) as primary_conn:
            primary_conn.execute(
                "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots"
                " WHERE slot_name = %s",
                (slot,),
            )
        shutil.rmtree(directory, ignore_errors=True)
