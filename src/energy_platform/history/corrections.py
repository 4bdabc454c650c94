"""Undoing a correction, for the data API and the admin command alike (the rule is in
``cluster.undo_correction``, docs/api.md#undo)."""

from __future__ import annotations

import asyncpg
import msgspec

from energy_platform.core.errors import Conflict, NotFound
from energy_platform.history import queries


class Undone(msgspec.Struct):
    undone: str
    """The correction undone."""
    restored: int
    """Points put back as they were before it."""
    correction: str | None
    """The undo's own correction (undo it to redo), null when there was nothing to put back."""


async def undo(conn: asyncpg.Connection | asyncpg.Pool, number: int, actor: str) -> Undone:
    """Undo correction ``number``: 404 when there is none (any more), 409 naming the points
    that hold something else now (nothing changes then)."""
    try:
        row = await conn.fetchrow(queries.UNDO, number, actor)
    except asyncpg.NoDataFoundError:
        raise NotFound(f"no correction {number} (kept EP_HISTORY_CORRECTIONS_DAYS)") from None
    except asyncpg.ObjectNotInPrerequisiteStateError as e:
        raise Conflict(str(e)) from None
    assert row is not None  # noqa: S101 - the function answers one row
    correction = None if row["correction"] is None else str(row["correction"])
    return Undone(str(number), row["restored"], correction)
