"""Hourly rollups: the engine recomputes the local hours of ``cluster.rollup_work``.

Work is queued in the transactions that change points: ingest's raw ranges as the engine takes
them in (``processing.INTAKE``), system points as ingest stores them, processed buckets as
``processing.COMPUTE`` writes them, and a feed's time zone change (``cluster.set_feed_config``).
A batch takes every queued period of the streams whose oldest period waited ``rollup_delay``
seconds, locks those streams (two workers never write one stream's hours at once, and the
recomputation, a later statement, sees everything committed before the lock), and recomputes
their hours and then their local days with ``cluster.rollup_streams``
(sql/functions/60_core_rollups.sql).
"""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg
import msgspec

from energy_platform.core.db.locks import LockKey
from energy_platform.core.db.pool import Connection
from energy_platform.engine.parking import CLEARED, SUCCEEDED, Narrowed, narrowed, set_aside

# Every queued period of up to $1 streams whose oldest period waited $2 seconds, oldest first:
# a stream's work is taken together (rows other workers hold are skipped), so that the points a
# live stream got during the delay cost one recomputation of their hour, not one per period.
# The streams of a feed parked in this stage wait (engine/parking.py): one hashed subplan over
# a table that is empty while every feed computes. Each period comes with its stream's feed
# (none: the stream is gone) and whether that feed was parked and retried.
CLAIM = """
WITH taken AS (
    DELETE FROM cluster.rollup_work
     WHERE ctid = ANY (ARRAY(
         SELECT ctid FROM cluster.rollup_work
          WHERE stream_id IN (
                SELECT stream_id FROM cluster.rollup_work
                 WHERE recorded_at <= now() - make_interval(secs => $2)
                   AND stream_id NOT IN (
                       SELECT s.id FROM cluster.parked_work p
                         JOIN cluster.streams s ON s.feed_id = p.feed_id
                        WHERE p.stage = 'rollups' AND p.retried_at IS NULL)
                 GROUP BY stream_id ORDER BY min(recorded_at) LIMIT $1)
            FOR UPDATE SKIP LOCKED))
    RETURNING stream_id, span
)
SELECT t.stream_id, t.span, nullif(lower(t.span), '-infinity') AS lo,
       nullif(upper(t.span), 'infinity') AS hi, s.feed_id,
       EXISTS (SELECT FROM cluster.parked_work p
                WHERE p.feed_id = s.feed_id AND p.stage = 'rollups') AS retried
  FROM taken t LEFT JOIN cluster.streams s ON s.id = t.stream_id"""
# In stream order, so that two workers wanting the same streams cannot deadlock.
LOCK = """
SELECT pg_advisory_xact_lock($2, (stream_id % 2147483648)::integer)
  FROM (SELECT DISTINCT unnest($1::bigint[]) AS stream_id ORDER BY 1) s"""
RECOMPUTE = "SELECT hours, written, deleted FROM cluster.rollup_streams($1, $2, $3)"
# EP_ENGINE_STATEMENT_TIMEOUT (milliseconds) for the batch's transaction.
TIMEOUT = "SELECT set_config('statement_timeout', $1, true)"


class RollupResult(msgspec.Struct, frozen=True):
    streams: int
    """Streams whose queued work was taken."""
    periods: int
    """Queued periods taken."""
    hours: int
    """Hours with points in them, recomputed."""
    written: int
    """Hours inserted or changed."""
    deleted: int
    """Hours left without points, deleted."""
    parked: int = 0
    """Feeds whose streams failed on their data, parked (engine/parking.py)."""
    failed: int = 0
    """Feeds whose streams failed otherwise, queued again (parked at EP_ENGINE_PARK_AFTER)."""


async def rollup_batch(
    conn: Connection, *, batch: int, delay: float, timeout_ms: str, park_after: int
) -> RollupResult:
    """Recompute the hours of the queued periods of up to ``batch`` streams, in one
    transaction. A feed whose streams fail on their data is found by halving and parked; one
    whose streams fail otherwise is queued again, and parked at ``park_after`` such failures in
    a row; the others commit."""
    async with conn.transaction():
        await conn.execute(TIMEOUT, timeout_ms)
        work = await conn.fetch(CLAIM, batch, delay)
        if not work:
            return RollupResult(streams=0, periods=0, hours=0, written=0, deleted=0)
        streams = [w["stream_id"] for w in work]
        await conn.execute(LOCK, streams, LockKey.ROLLUP_STREAM)
        # A stream deleted since its work was queued has no hours left to compute.
        by_feed: dict[int, list[asyncpg.Record]] = {}
        for w in work:
            if w["feed_id"] is not None:
                by_feed.setdefault(w["feed_id"], []).append(w)

        async def recompute(chosen: Sequence[int]) -> tuple[Sequence[int], asyncpg.Record]:
            rows = [w for f in chosen for w in by_feed[f]]
            row = await conn.fetchrow(
                RECOMPUTE,
                [w["stream_id"] for w in rows],
                [w["lo"] for w in rows],
                [w["hi"] for w in rows],
            )
            assert row is not None  # noqa: S101 - an aggregate row is always answered
            return chosen, row

        outcome = await narrowed(conn, list(by_feed), recompute) if by_feed else Narrowed([], [])
        parked = 0
        for failure in outcome.failed:
            rows = by_feed[failure.feed_id]
            streams_of = [w["stream_id"] for w in rows]
            spans = [w["span"] for w in rows]
            parked += await set_aside(conn, "rollups", failure, streams_of, spans, park_after)
        done = [f for chosen, _ in outcome.done for f in chosen]
        if done:
            await conn.execute(SUCCEEDED, "rollups", done)
        retried = [f for f in done if by_feed[f][0]["retried"]]
        if retried:
            await conn.execute(CLEARED, "rollups", retried)
    results = [row for _, row in outcome.done]
    return RollupResult(
        streams=len(set(streams)),
        periods=len(work),
        hours=sum(row["hours"] for row in results),
        written=sum(row["written"] for row in results),
        deleted=sum(row["deleted"] for row in results),
        parked=parked,
        failed=len(outcome.failed) - parked,
    )
