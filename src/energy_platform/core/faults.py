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

Between the two, a statement may fail on its own work: a program limit (54001, statement too
complex), out of memory (53200), a statement timeout (57014). The server is fine, and so may be
the next try: such an error is the world's for a loop that retries its round, but where the
engine narrows it down to one feed, that feed's work fails so again and again, and after
``EP_ENGINE_PARK_AFTER`` failures in a row the same way it is parked like a data error
(:func:`blames_the_work`). What the server's own state says (a lost connection, a shutdown, a
deadlock, a full disk, a busy lock) is never blamed on one feed.
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


# SQLSTATEs of the server's state, whatever statement meets them: connection exceptions (08),
# transaction rollbacks (40: serialization failures, deadlocks), the server shutting down or
# restarting (57P01-57P05), resources every statement lacks alike (53100 disk full, 53300 too
# many connections, 53400 a configuration limit), a lock not had in time (55P03), system and
# internal errors (58, XX).
_WORLD_STATES = ("08", "40", "57P", "53100", "53300", "53400", "55P03", "58", "XX")


def blames_the_work(e: BaseException) -> bool:
    """A PostgreSQL error about a statement's own work, neither the data's (class 22, 23) nor
    the server's state: 54001, 53200, 57014 (a statement timeout) and the like."""
    if not isinstance(e, asyncpg.PostgresError) or blames_the_data(e):
        return False
    state = str(e.sqlstate or "")
    return bool(state) and not state.startswith(_WORLD_STATES)


def fails_alone(e: BaseException) -> bool:
    """An error that one feed's or stream's work may raise alone: the data's or the work's own,
    not the server's state. A shared loop narrows such a failure down to what raised it."""
    return blames_the_data(e) or blames_the_work(e)


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
