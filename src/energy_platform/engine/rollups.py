"""Hourly rollups: the engine recomputes the local hours of ``cluster.rollup_work``.

Work is queued in the transactions that change points: ingest's raw ranges as the engine takes
them in (``processing.INTAKE``), system points as ingest stores them, processed buckets as
``processing.COMPUTE`` writes them, and a feed's time zone change (``cluster.set_feed_config``).
A batch takes every queued period of the streams whose oldest period waited ``rollup_delay``
seconds, locks those streams (two workers never write one stream's hours at once, and the
recomputation, a later statement, sees everything committed before the lock), and recomputes
their hours and then their local days with ``cluster.rollup_streams``
(sql/functions/60_rollups.sql).
"""

from __future__ import annotations

import msgspec

from energy_platform.core.db.locks import LockKey
from energy_platform.core.db.pool import Connection

# Every queued period of up to $1 streams whose oldest period waited $2 seconds, oldest first:
# a stream's work is taken together (rows other workers hold are skipped), so that the points a
# live stream got during the delay cost one recomputation of their hour, not one per period.
CLAIM = """
DELETE FROM cluster.rollup_work
 WHERE ctid = ANY (ARRAY(
     SELECT ctid FROM cluster.rollup_work
      WHERE stream_id IN (SELECT stream_id FROM cluster.rollup_work
                           WHERE recorded_at <= now() - make_interval(secs => $2)
                           GROUP BY stream_id ORDER BY min(recorded_at) LIMIT $1)
        FOR UPDATE SKIP LOCKED))
RETURNING stream_id, nullif(lower(span), '-infinity') AS lo,
          nullif(upper(span), 'infinity') AS hi"""
# In stream order, so that two workers wanting the same streams cannot deadlock.
LOCK = """
SELECT pg_advisory_xact_lock($2, (stream_id % 2147483648)::integer)
  FROM (SELECT DISTINCT unnest($1::bigint[]) AS stream_id ORDER BY 1) s"""
RECOMPUTE = "SELECT hours, written, deleted FROM cluster.rollup_streams($1, $2, $3)"


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


async def rollup_batch(conn: Connection, *, batch: int, delay: float) -> RollupResult:
    """Recompute the hours of the queued periods of up to ``batch`` streams, in one
    transaction."""
    async with conn.transaction():
        work = await conn.fetch(CLAIM, batch, delay)
        if not work:
            return RollupResult(streams=0, periods=0, hours=0, written=0, deleted=0)
        streams = [w["stream_id"] for w in work]
        await conn.execute(LOCK, streams, LockKey.ROLLUP_STREAM)
        row = await conn.fetchrow(
            RECOMPUTE, streams, [w["lo"] for w in work], [w["hi"] for w in work]
        )
    assert row is not None  # noqa: S101 - an aggregate row is always answered
    return RollupResult(
        streams=len(set(streams)),
        periods=len(work),
        hours=row["hours"],
        written=row["written"],
        deleted=row["deleted"],
    )
