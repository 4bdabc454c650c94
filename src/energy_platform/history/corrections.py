"""Undoing a correction, for the data API and the admin command alike (the rule is in
``cluster.undo_correction``, docs/api.md#undo).

An undo writes like an import, so it is bounded like one: over HTTP it restores at most as many
points as one import request may write (a bigger correction, a removal of up to 1,000,000 points
or an admin import of any size, is undone with the admin command), and every value it puts back
passes the bound of its stream's quantity (core/bounds.py), as any write does: a value stored
before the bounds existed would otherwise come back and stop the engine's statement again.
"""

from __future__ import annotations

import asyncpg
import msgspec

from energy_platform.core import bounds
from energy_platform.core.errors import Conflict, NotFound, PayloadTooLarge
from energy_platform.history import queries


class Undone(msgspec.Struct):
    undone: str
    """The correction undone."""
    restored: int
    """Points put back as they were before it."""
    correction: str | None
    """The undo's own correction (undo it to redo), null when there was nothing to put back."""


async def undo(
    conn: asyncpg.Connection | asyncpg.Pool, number: int, actor: str, *, most: int | None = None
) -> Undone:
    """Undo correction ``number``: 404 when there is none (any more), 413 when it changed more
    than ``most`` points (None: any number), 400 when a value it would put back is out of its
    stream's bounds, 409 naming the points that hold something else now (nothing changes in
    any of these)."""
    size = await conn.fetchrow(queries.CORRECTION_SIZE, number)
    if size is None:
        raise _gone(number)
    if most is not None and size["points"] > most:
        raise PayloadTooLarge(
            f"correction {number} changed {size['points']:,} points; one undo over HTTP restores"
            f" at most {most:,}, as many as one import writes: the operator undoes it with"
            f" `energy-platform admin corrections undo {number}`"
        )
    # What an undo writes is fixed by the correction (its points are never changed): checked
    # before, outside the undo's transaction. The largest magnitude (NaN and infinities sort
    # above every number) and the smallest one other than 0 are the only ones that can fail.
    extremes = await conn.fetchrow(queries.RESTORED_EXTREMES, number)
    assert extremes is not None  # noqa: S101 - a query of subselects answers one row
    bound = bounds.of_medium(size["medium"])
    for at, value in (
        (extremes["largest_at"], extremes["largest"]),
        (extremes["smallest_at"], extremes["smallest"]),
    ):
        if value is not None:
            bounds.check(bound, value, f"correction {number}'s value at {at.isoformat()}")
    try:
        row = await conn.fetchrow(queries.UNDO, number, actor)
    except asyncpg.NoDataFoundError:
        raise _gone(number) from None
    except asyncpg.ObjectNotInPrerequisiteStateError as e:
        raise Conflict(str(e)) from None
    assert row is not None  # noqa: S101 - the function answers one row
    correction = None if row["correction"] is None else str(row["correction"])
    return Undone(str(number), row["restored"], correction)


def _gone(number: int) -> NotFound:
    return NotFound(f"no correction {number} (kept EP_HISTORY_CORRECTIONS_DAYS)")
