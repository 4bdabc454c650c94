"""A poisoned feed is set aside, the rest go on (docs/engine.md#parked-feeds).

A batch of the engine's processing or rollups computes the work of many feeds in one
statement. When that statement fails on data (``core/faults.py::blames_the_data``: a value out
of range, say), :func:`narrowed` runs it again on halves of the batch's feeds, each in a
savepoint of the batch's transaction, down to the feeds that fail alone; the others' results
commit with the batch. The failing feeds' work is then parked
(``sql/functions/21_engine_parking.sql``): recorded in ``cluster.parked_work``, queued again,
its owner notified, and skipped by the claims until ``admin engine retry`` releases it. When
nothing fails, a batch costs one savepoint more than before: its statement runs once.

A statement that fails on its own work (``core/faults.py::blames_the_work``: 54001, 53200, a
statement timeout) is narrowed down the same way, but a feed that fails so is parked only once
it has failed the same way ``EP_ENGINE_PARK_AFTER`` times in a row (:func:`set_aside`); until
then its work is queued again for the next round. Errors of the server's state (a lost
connection, a shutdown) still fail the whole batch, whose transaction the next round retries.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Generic, NamedTuple, TypeVar

import asyncpg
import structlog

from energy_platform.core.db.pool import Connection
from energy_platform.core.faults import blames_the_data, blames_the_work

log = structlog.get_logger()

PARK = "SELECT cluster.park($1, $2, $3::bigint[], $4::tstzrange[], $5, $6)"
# A retried feed whose work of the stage succeeded: its parked rows go, its notice closes.
CLEARED = "SELECT cluster.parked_cleared($1, $2::bigint[])"
RETRY = "SELECT cluster.engine_retry($1)"
# A failure outside the data's classes: counted, and parked at the stage's limit.
FAILED = "SELECT cluster.work_failed($1, $2, $3::bigint[], $4::tstzrange[], $5, $6, $7)"
# The feeds whose work of a stage succeeded: their failures in a row are forgotten.
SUCCEEDED = "SELECT cluster.work_succeeded($1, $2::bigint[])"
# Compaction's and retention's streams (skip_stream).
PARK_STREAM = "SELECT cluster.park_stream($1, $2, $3::tstzrange, $4, $5)"
STREAMS_CLEARED = "SELECT cluster.parked_streams_cleared($1, $2::bigint[])"

R = TypeVar("R")


class Failure(NamedTuple):
    feed_id: int
    error: asyncpg.PostgresError


class Narrowed(NamedTuple, Generic[R]):
    done: list[R]
    """The results of the subsets that succeeded (one, the whole batch, when none failed)."""
    failed: list[Failure]
    """The feeds that failed alone, with their errors."""


async def narrowed(
    conn: Connection, feeds: Sequence[int], attempt: Callable[[Sequence[int]], Awaitable[R]]
) -> Narrowed[R]:
    """``attempt(feeds)`` in a savepoint; on a data error or one of the work's own, the same
    for each half of ``feeds``, recursively, until the feeds that fail alone are found. Any
    other error propagates (the world's fault: the batch's transaction is retried whole)."""
    try:
        async with conn.transaction():
            return Narrowed([await attempt(feeds)], [])
    except asyncpg.PostgresError as e:
        if not (blames_the_data(e) or blames_the_work(e)):
            raise
        if len(feeds) == 1:
            return Narrowed([], [Failure(feeds[0], e)])
    middle = len(feeds) // 2
    done: list[R] = []
    failed: list[Failure] = []
    for half in (feeds[:middle], feeds[middle:]):
        result = await narrowed(conn, half, attempt)
        done += result.done
        failed += result.failed
    return Narrowed(done, failed)


async def set_aside(
    conn: Connection,
    stage: str,
    failure: Failure,
    keys: Sequence[int],
    spans: Sequence[asyncpg.Range[datetime]],
    park_after: int,
) -> bool:
    """One feed's failed work of ``stage``: parked at once on a data error, else counted and
    parked at ``park_after`` failures in a row the same way (queued again until then). True
    when parked."""
    if blames_the_data(failure.error):
        await park(conn, stage, failure, keys, spans)
        return True
    e = failure.error
    try:
        async with conn.transaction():
            parked: bool = await conn.fetchval(
                FAILED,
                stage,
                failure.feed_id,
                list(keys),
                list(spans),
                e.sqlstate,
                str(e),
                park_after,
            )
    except asyncpg.ForeignKeyViolationError:
        log.info("failed feed gone", stage=stage, feed=failure.feed_id)
        return False
    log.warning(
        "feed parked" if parked else "feed's work failed; retrying",
        stage=stage,
        feed=failure.feed_id,
        sqlstate=e.sqlstate,
        error=str(e),
    )
    return parked


async def park(
    conn: Connection,
    stage: str,
    failure: Failure,
    keys: Sequence[int],
    spans: Sequence[asyncpg.Range[datetime]],
) -> None:
    """Park one feed's failed work of ``stage``: its channels (processing) or streams (rollups)
    with their periods, in the batch's transaction."""
    e = failure.error
    try:
        async with conn.transaction():
            await conn.execute(
                PARK, stage, failure.feed_id, list(keys), list(spans), e.sqlstate, str(e)
            )
    except asyncpg.ForeignKeyViolationError:
        # The feed was deleted since its work was claimed: nothing is left to park.
        log.info("parked feed gone", stage=stage, feed=failure.feed_id)
        return
    log.warning("feed parked", stage=stage, feed=failure.feed_id, sqlstate=e.sqlstate, error=str(e))


async def skip_stream(
    pool: asyncpg.Pool,
    stage: str,
    stream: int,
    span: asyncpg.Range[datetime],
    e: asyncpg.PostgresError,
) -> None:
    """Compaction or retention (``stage``) failed on one stream's days: park the stream for the
    stage (its rounds skip it until ``admin engine retry``; the parked gauge counts it), and let
    the round go on."""
    await pool.execute(PARK_STREAM, stage, stream, span, e.sqlstate, str(e))
    log.warning(f"{stage} skipped a stream", stream=stream, sqlstate=e.sqlstate, error=str(e))
