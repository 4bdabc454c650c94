"""The one fault policy: is an error the world's fault (retry, never drop) or the data's?

A database that restarts, refuses connections or is shutting down, a network that fails, and a
provisioning service that is down or refuses this cluster are faults of the world: whatever was
being done is retried, a message stays unacknowledged. PostgreSQL's data-exception and
integrity classes (SQLSTATE 22, 23) blame the data, and so does everything else: a loop never
retries those as if the world had failed. Ingest drops such a message into its dead letters;
a loop whose own statements fail on data (which is a bug: the data was checked at the edge)
fails, and the lifecycle logs it with its traceback and restarts it with backoff, counted in
``ep_service_restarts_total``. The engine's batches, which compute many feeds at once, narrow
such an error down to its feed and park that feed instead (``engine/parking.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import asyncpg
import structlog

from energy_platform.core.errors import Unavailable

log = structlog.get_logger()

# SQLSTATE classes that say something about the rows, not about the server.
_DATA_CLASSES = ("22", "23")


def blames_the_data(e: BaseException) -> bool:
    """A PostgreSQL data-exception or integrity error (SQLSTATE class 22 or 23)."""
    if isinstance(e, asyncpg.PostgresError):
        return str(e.sqlstate or "")[:2] in _DATA_CLASSES
    return False


def is_outside_fault(e: BaseException) -> bool:
    """A fault of the database, the network or provisioning: worth waiting for."""
    if isinstance(e, Unavailable | OSError | TimeoutError | asyncpg.InterfaceError):
        return True
    # Every other server error (connection lost, admin shutdown, cannot connect now, too many
    # connections, serialization...) is the server's state, not the message's.
    return isinstance(e, asyncpg.PostgresError) and not blames_the_data(e)


@contextmanager
def world_faults_logged(message: str) -> Iterator[None]:
    """Inside a loop's round: a fault of the world is logged as ``message`` and swallowed (the
    loop's next round retries); any other error propagates."""
    try:
        yield
    except Exception as e:
        if not is_outside_fault(e):
            raise
        log.warning(message, error=f"{type(e).__name__}: {e}")
