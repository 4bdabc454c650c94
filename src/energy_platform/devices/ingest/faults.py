"""Which failures lie outside a message (retry it, never drop it) and which lie in its data.

A database that restarts, refuses connections or is shutting down, and a provisioning service
that is down or refuses this cluster, are faults outside the message: it stays unacknowledged
and is retried. Only PostgreSQL's data-exception and integrity classes (22, 23) blame the data.
"""

from __future__ import annotations

import asyncpg

from energy_platform.errors import Unavailable

# SQLSTATE classes that say something about the rows, not about the server.
_DATA_CLASSES = ("22", "23")


def blames_the_data(e: BaseException) -> bool:
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
