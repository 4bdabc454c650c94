"""The 90 s processing as named SQL, and the transactions that run it.

Work flows through two queues. Ingest records written point times per raw stream in
``cluster.dirty_ranges``; :data:`INTAKE` moves them into ``cluster.engine_work`` as bucket-aligned
periods per channel, widened to every bucket whose result the new points can change, and creates
the processed streams of channels seen for the first time. :data:`CLAIM` takes the closed part of
the queued work of a bounded number of feeds under an advisory lock per feed, and
:data:`COMPUTE` recomputes those buckets for all their channels in one statement: it upserts the
points that qualify and deletes those that no longer do. The statements are short chains over
named SQL stages (sql/functions/22_engine_intake.sql, 24_engine_energy.sql and
25_engine_results.sql; docs/engine.md#the-statements-stages); docs/engine.md explains the rules.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime, timedelta

import asyncpg
import msgspec

from energy_platform.core.db.live_log import LIVE_PUBLISH
from energy_platform.core.db.locks import LockKey
from energy_platform.core.db.pool import Connection
from energy_platform.core.settings import EngineSettings
from energy_platform.engine.parking import CLEARED, SUCCEEDED, narrowed, set_aside

# cluster.bucket_seconds(); a test holds the two equal.
BUCKET = timedelta(seconds=90)

# Claims a bounded batch of ingest's dirty ranges (SKIP LOCKED: workers take disjoint rows).
# Per raw stream the written periods are merged, and each is widened to the buckets its points
# can change (cluster.affected_buckets); a channel seen for the first time gets the processed
# streams its media call for (cluster.channel_streams, titles and units included). The stages
# are in sql/functions/22_engine_intake.sql; what writes stays here.
INTAKE = """
WITH claimed AS (
    DELETE FROM cluster.dirty_ranges
     WHERE ctid = ANY (ARRAY(SELECT ctid FROM cluster.dirty_ranges ORDER BY recorded_at
                             LIMIT $1 FOR UPDATE SKIP LOCKED))
    RETURNING stream_id, ts_from, ts_to
), rolled AS (
    -- Every raw stream's hours, processable or not (engine/rollups.py).
    INSERT INTO cluster.rollup_work (stream_id, span)
    SELECT stream_id, tstzrange(ts_from, ts_to, '[]') FROM claimed
), touched AS (
    -- Written periods of a stream at most a bridged gap apart are one: their buckets are
    -- affected as one stretch anyway, and a backlog of a year (a range per day) costs one
    -- probe of its neighbours, not 365 (each probe starts a scan of every chunk before it).
    SELECT w.feed_id, w.channel, w.raw_id, w.method,
           tstzrange(lower(w.joined), upper(w.joined) - cluster.bridge_limit(), '[]') AS written
      FROM (SELECT s.feed_id, s.channel, s.id AS raw_id, m.method,
                   unnest(range_agg(tstzrange(c.ts_from, c.ts_to + cluster.bridge_limit(),
                                              '[]'))) AS joined
              FROM claimed c
              JOIN cluster.streams s ON s.id = c.stream_id AND s.type = 'raw'
              JOIN cluster.processable_media m ON m.medium_id = s.medium
             GROUP BY s.feed_id, s.channel, s.id, m.method) w
), queued AS (
    INSERT INTO cluster.engine_work (feed_id, channel, buckets)
    SELECT t.feed_id, t.channel, unnest(range_agg(a.buckets))
      FROM touched t
     CROSS JOIN LATERAL cluster.affected_buckets(t.raw_id, t.method IN ('register', 'reading'),
                                                 t.written) a
     GROUP BY t.feed_id, t.channel
    RETURNING 1
), channels AS (
    SELECT array_agg(feed_id ORDER BY feed_id, channel) AS feeds,
           array_agg(channel ORDER BY feed_id, channel) AS channels
      FROM (SELECT DISTINCT feed_id, channel FROM touched) c
), missing AS (
    SELECT w.*
      FROM channels c CROSS JOIN LATERAL cluster.channel_streams(c.feeds, c.channels, $2) w
     WHERE NOT EXISTS (
           SELECT 1 FROM cluster.streams s
            WHERE s.type = 'processed' AND s.feed_id = w.feed_id AND s.channel = w.channel
              AND s.idx IS NOT DISTINCT FROM w.idx AND s.register IS NOT DISTINCT FROM w.register
              AND s.combined = w.combined AND s.quantity = w.quantity)
), created AS (
    INSERT INTO cluster.streams (feed_id, type, channel, idx, register, combined, quantity)
    SELECT feed_id, 'processed', channel, idx, register, combined, quantity FROM missing
    ON CONFLICT DO NOTHING
    RETURNING id, feed_id, channel, idx, register, combined, quantity
), configured AS (
    INSERT INTO cluster.stream_configs (stream_id, title, medium, unit, validity)
    SELECT c.id, m.title, m.medium, m.unit, tstzrange(NULL, NULL)
      FROM created c
      JOIN missing m ON m.feed_id = c.feed_id AND m.channel = c.channel
                    AND m.idx IS NOT DISTINCT FROM c.idx
                    AND m.register IS NOT DISTINCT FROM c.register AND m.combined = c.combined
                    AND m.quantity = c.quantity
    RETURNING stream_id
), history AS (
    -- A new stream gets the channel's whole raw history, not only this batch.
    SELECT cluster.engine_invalidate(feed_id, channel, '{(,)}'::tstzmultirange)
      FROM (SELECT DISTINCT feed_id, channel FROM created) n
)
SELECT (SELECT count(*) FROM claimed) AS claimed,
       (SELECT count(*) FROM configured) AS created,
       (SELECT count(*) FROM history) AS new_channels,
       (SELECT count(*) FROM queued) AS queued
"""

# Takes all queued work of up to $2 feeds whose advisory lock ($4 with the feed id) this
# transaction gets (other workers skip those feeds) and merges it per channel. A parked feed's
# work waits (engine/parking.py): NOT IN is one hashed subplan over a table that is empty while
# every feed computes. Each period starts where raw data is: buckets more than
# cluster.bridge_limit() before the channel's next point can hold no value (a long period
# queued by a configuration change is mostly empty), unless a register read before the period
# too and its next reading is at most EP_ENGINE_MAX_SPREAD after that one (its rise is spread
# over the gap, docs/engine.md#registers-wh; over a longer gap it is not, and the period is
# skipped up to the next reading: a register reading from 2000 beside today's would otherwise
# be walked for 26 years in pieces of EP_ENGINE_MAX_SPAN). The part from the open
# bucket on ($1 is its start) and beyond $3 of the start is queued again; the rest is returned,
# with whether its feed was parked and retried (its parked rows go once it computes).
CLAIM = """
WITH feeds AS (
    SELECT feed_id,
           EXISTS (SELECT FROM cluster.parked_work p
                    WHERE p.feed_id = candidates.feed_id AND p.stage = 'processing') AS retried
      FROM (SELECT feed_id, min(recorded_at) AS oldest FROM cluster.engine_work
             WHERE lower(buckets) < $1
               AND feed_id NOT IN (SELECT feed_id FROM cluster.parked_work
                                    WHERE stage = 'processing' AND retried_at IS NULL)
             GROUP BY feed_id ORDER BY oldest) candidates
     WHERE pg_try_advisory_xact_lock($4, (feed_id % 2147483648)::integer)
     LIMIT $2
), claimed AS (
    DELETE FROM cluster.engine_work w USING feeds f WHERE w.feed_id = f.feed_id
    RETURNING w.feed_id, w.channel, w.buckets
), merged AS (
    SELECT feed_id, channel, unnest(range_agg(buckets)) AS buckets
      FROM claimed GROUP BY feed_id, channel
), starts AS MATERIALIZED (
    -- Materialised: inlined, the planner copied the look-up below into each use of wfrom. A
    -- period of up to an hour (live data: a bucket or two) is taken as it is; a longer one
    -- starts where the channel's raw data does.
    SELECT m.feed_id, m.channel, upper(m.buckets) AS queued_to,
           CASE WHEN upper(m.buckets) - lower(m.buckets) <= interval '1 hour' THEN lower(m.buckets)
           ELSE greatest(lower(m.buckets), coalesce(time_bucket(cluster.bucket_width(), (
               SELECT min(CASE WHEN pm.method = 'register' AND n.before IS NOT NULL
                                    AND date_part('epoch', n.after - n.before)
                                        <= cluster.max_spread_seconds()
                               THEN lower(m.buckets) + cluster.bridge_limit() ELSE n.after END)
                 FROM cluster.streams s
                 JOIN cluster.processable_media pm ON pm.medium_id = s.medium
                CROSS JOIN LATERAL cluster.point_neighbours(
                    s.id, CASE WHEN pm.method = 'register' THEN lower(m.buckets)
                               ELSE '-infinity' END, lower(m.buckets)) n
                WHERE s.feed_id = m.feed_id AND s.channel = m.channel AND s.type = 'raw'
                  AND (n.after < upper(m.buckets) + cluster.bridge_limit()
                       OR (pm.method = 'register' AND n.before IS NOT NULL
                           AND date_part('epoch', n.after - n.before)
                               <= cluster.max_spread_seconds()))
           ) - cluster.bridge_limit()), upper(m.buckets))) END AS wfrom
      FROM merged m
), parts AS (
    SELECT feed_id, channel, queued_to, wfrom,
           greatest(wfrom, least(queued_to, $1, wfrom + $3)) AS wto
      FROM starts
), requeued AS (
    INSERT INTO cluster.engine_work (feed_id, channel, buckets)
    SELECT feed_id, channel, tstzrange(wto, queued_to) FROM parts WHERE wto < queued_to
)
SELECT p.feed_id, p.channel, p.wfrom, p.wto, f.retried
  FROM parts p JOIN feeds f ON f.feed_id = p.feed_id WHERE p.wfrom < p.wto
"""

# Recomputes the buckets [wfrom, wto) of the given channels ($1..$4: a period each) and writes
# them back: the points that qualify (cluster.engine_results, a chain of stages in
# sql/functions/24_engine_energy.sql and 25_engine_results.sql that the planner inlines: energy
# per bucket, register spans, pricing) are upserted, those that no longer do deleted, and what
# changed staged as live events. The writes stay here: a function that writes is planned apart,
# where this statement's EXPLAIN (docs/engine.md#the-statements-stages) would not see it.
COMPUTE = """
WITH results AS (
    SELECT stream_id, ts, value, faults FROM cluster.engine_results($1, $2, $3, $4)
), upserted AS (
    INSERT INTO cluster.processed_points AS p (stream_id, ts, value)
    SELECT stream_id, ts, value FROM results
    ON CONFLICT (stream_id, ts) DO UPDATE SET value = EXCLUDED.value
     WHERE p.value IS DISTINCT FROM EXCLUDED.value
    RETURNING p.stream_id, p.ts, p.value
), rolled AS (
    -- The hours of every recomputed period, changed or not: cheap, and never one missed.
    INSERT INTO cluster.rollup_work (stream_id, span)
    SELECT stream_id, tstzrange(period_from, period_to) FROM cluster.work_streams($1, $2, $3, $4)
), stale AS (
    -- NOT IN over the results is one hashed subplan: joined to them (a CTE, whose size the
    -- planner cannot know) it became a nested loop over both, quadratic in the batch.
    DELETE FROM cluster.processed_points p
     USING cluster.work_streams($1, $2, $3, $4) w
     WHERE p.stream_id = w.stream_id AND p.ts >= w.period_from AND p.ts < w.period_to
       AND (p.stream_id, p.ts) NOT IN (SELECT stream_id, ts FROM results)
    RETURNING p.stream_id, p.ts
), live AS (
    -- What changed becomes the streams' live events (a removed bucket's value is null; over
    -- 1,000 buckets of a stream, rare with periods of at most max_span, a reload of their
    -- range), numbered by LIVE_PUBLISH before the commit.
    SELECT cluster.live_stage('buckets', array_agg(stream_id),
                              array_agg(date_part('epoch', ts)::bigint), array_agg(value),
                              1000) AS events
      FROM (SELECT stream_id, ts, value FROM upserted
            UNION ALL
            SELECT stream_id, ts, NULL FROM stale) changed
), faulted AS (
    -- The buckets where a meter counter's fault was judged, for FAULTS (rare: a scan of the
    -- results, which are materialised for their three readers anyway).
    SELECT array_agg(stream_id) AS streams, array_agg(ts) AS buckets
      FROM results WHERE faults > 0
)
SELECT (SELECT count(*) FROM results) AS points,
       (SELECT count(*) FROM upserted) AS written,
       (SELECT count(*) FROM stale) AS deleted,
       (SELECT events FROM live) AS events,
       f.streams AS fault_streams, f.buckets AS fault_buckets
  FROM faulted f
"""

# After COMPUTE, where it named buckets with meter faults ($1 processed streams, $2 bucket
# starts): the faults judged there (cluster.meter_faults_in) are recorded, each once however
# often its buckets are recomputed. The engine writes no text: notifications' trigger on the
# table tells the feed's owner of each new one (rule meter_fault, docs/notifications.md;
# sql/functions/91_notifications_meter_faults.sql), in this transaction. Returns the new faults
# per kind, for the operators' counter.
FAULTS = """
WITH windows AS (
    SELECT array_agg(feed_id) AS feeds, array_agg(channel) AS channels, array_agg(ts) AS froms,
           array_agg(ts + cluster.bucket_width()) AS tos
      FROM (SELECT DISTINCT s.feed_id, s.channel, f.ts
              FROM unnest($1::bigint[], $2::timestamptz[]) AS f (stream_id, ts)
              JOIN cluster.streams s ON s.id = f.stream_id) w
), recorded AS (
    INSERT INTO cluster.meter_faults (stream_id, ts, kind, value, before_ts, before_value,
                                      after_ts, after_value)
    SELECT f.raw_id, f.ts, f.kind, f.value, f.before_ts, f.before_value, f.after_ts,
           f.after_value
      FROM windows w
     CROSS JOIN LATERAL cluster.meter_faults_in(w.feeds, w.channels, w.froms, w.tos) f
    ON CONFLICT DO NOTHING
    RETURNING *
)
SELECT kind, count(*) AS found FROM recorded GROUP BY kind
"""

# Before COMPUTE writes into old buckets: the UTC days of the periods' processed streams that
# the compaction may have taken go back to the row tier (cluster.thaw_days skips younger days).
THAW = """
SELECT cluster.thaw_days(array_agg(w.stream_id), array_agg(d.day::date))
  FROM cluster.work_streams($1, $2, $3, $4) w
 CROSS JOIN LATERAL generate_series((w.period_from AT TIME ZONE 'UTC')::date,
                                    (w.period_to AT TIME ZONE 'UTC')::date,
                                    interval '1 day') AS d (day)
 WHERE w.period_from < now() - interval '1 day'"""

# Hash aggregates need memory; JIT compilation costs more (about 1 s) than these batches gain.
# $2 is the plan cache mode (docs/engine.md#plans): CLAIM and COMPUTE are planned once per
# connection (GENERIC), where PostgreSQL would plan them again at every call, 20 to 70 ms each,
# more than a quiet round runs; INTAKE keeps its custom plans (CUSTOM_OR_GENERIC), whose LIMIT
# and batch sizes the planner reads. $3 is EP_ENGINE_STATEMENT_TIMEOUT in milliseconds: a feed
# whose work runs past it fails (57014) and is narrowed down like any failure of its own
# (intake, which cannot be narrowed down, runs without it).
TUNE = """
SELECT set_config('work_mem', $1, true), set_config('jit', 'off', true),
       set_config('plan_cache_mode', $2, true), set_config('statement_timeout', $3, true)"""
GENERIC = "force_generic_plan"
NO_TIMEOUT = "0"
CUSTOM_OR_GENERIC = "auto"
# The meter counters' limits (EngineSettings), read by the stages through
# cluster.max_spread_seconds and cluster.default_max_rate: set per transaction, as work_mem is.
METER_LIMITS = """
SELECT set_config('ep.engine_max_spread', $1, true),
       set_config('ep.engine_max_rate_power', $2, true),
       set_config('ep.engine_max_rate_gas', $3, true),
       set_config('ep.engine_max_rate_water', $4, true),
       set_config('ep.engine_max_rate_heat', $5, true)"""


class MeterLimits(msgspec.Struct, frozen=True):
    """What the rules of meter counters read (docs/engine.md#registers-wh)."""

    max_spread: int
    """EngineSettings.max_spread."""
    max_rate_power: float
    """EngineSettings.max_rate_power."""
    max_rate_gas: float
    """EngineSettings.max_rate_gas."""
    max_rate_water: float
    """EngineSettings.max_rate_water."""
    max_rate_heat: float
    """EngineSettings.max_rate_heat."""

    @classmethod
    def of(cls, engine: EngineSettings) -> MeterLimits:
        return cls(
            engine.max_spread,
            engine.max_rate_power,
            engine.max_rate_gas,
            engine.max_rate_water,
            engine.max_rate_heat,
        )

    async def apply(self, conn: Connection) -> None:
        """Set them for the rest of the transaction."""
        await conn.execute(
            METER_LIMITS,
            *(repr(float(v)) for v in msgspec.structs.astuple(self)),
        )


class IntakeResult(msgspec.Struct, frozen=True):
    claimed: int
    """Dirty ranges taken from ingest's queue."""
    created: int
    """Processed streams created."""


class BatchResult(msgspec.Struct, frozen=True):
    periods: int
    """Channel periods recomputed."""
    points: int
    """Processed points that qualify in them."""
    written: int
    """Points inserted or changed."""
    deleted: int
    """Points that no longer qualify, deleted."""
    parked: int = 0
    """Feeds whose work failed on their data, parked (engine/parking.py)."""
    failed: int = 0
    """Feeds whose work failed otherwise, queued again (parked at EP_ENGINE_PARK_AFTER)."""
    claim_s: float = 0.0
    """Seconds taking the work (the claim statement)."""
    compute_s: float = 0.0
    """Seconds recomputing it (thaw and compute statements)."""
    commit_s: float = 0.0
    """Seconds committing."""
    faults: dict[str, int] = msgspec.field(default_factory=dict)
    """Meter faults found and told, per kind (glitch, reset, replacement)."""


async def intake(
    conn: Connection, *, batch: int, currency: str, work_mem: str, limits: MeterLimits
) -> IntakeResult:
    """Move up to ``batch`` dirty ranges into the engine's queue, in one transaction. It runs
    without the statement timeout: intake cannot be narrowed down to a feed, so a timeout
    would only fail it again and again; on a loaded machine it did (the parking test). The
    meter counters' ``limits`` say which gaps a counter's reading does not reach into
    (cluster.affected_buckets)."""
    async with conn.transaction():
        await conn.execute(TUNE, work_mem, CUSTOM_OR_GENERIC, NO_TIMEOUT)
        await limits.apply(conn)
        (row,) = await conn.fetch(INTAKE, batch, currency)
    return IntakeResult(claimed=row["claimed"], created=row["created"])


async def process_batch(
    conn: Connection,
    *,
    now: datetime,
    feeds: int,
    max_span: timedelta,
    work_mem: str,
    limits: MeterLimits,
    timeout_ms: str,
    park_after: int,
) -> BatchResult:
    """Claim the closed work of up to ``feeds`` feeds and recompute it, in one transaction. A
    feed whose work fails on its data is found by halving and parked; one whose work fails
    otherwise (a statement timeout, say) is queued again, and parked at ``park_after`` such
    failures in a row; the others commit."""
    horizon = bucket_start(now)
    started = time.perf_counter()
    async with conn.transaction():
        await conn.execute(TUNE, work_mem, GENERIC, timeout_ms)
        await limits.apply(conn)
        work: Sequence[asyncpg.Record] = await conn.fetch(
            CLAIM, horizon, feeds, max_span, LockKey.ENGINE_FEED
        )
        if not work:
            return BatchResult(periods=0, points=0, written=0, deleted=0)
        claimed = time.perf_counter()
        by_feed: dict[int, list[asyncpg.Record]] = {}
        for w in work:
            by_feed.setdefault(w["feed_id"], []).append(w)

        async def compute(
            chosen: Sequence[int],
        ) -> tuple[Sequence[int], asyncpg.Record, Sequence[asyncpg.Record]]:
            rows = work if len(chosen) == len(by_feed) else [w for f in chosen for w in by_feed[f]]
            periods = (
                [w["feed_id"] for w in rows],
                [w["channel"] for w in rows],
                [w["wfrom"] for w in rows],
                [w["wto"] for w in rows],
            )
            await conn.execute(THAW, *periods)
            (row,) = await conn.fetch(COMPUTE, *periods)
            faults: Sequence[asyncpg.Record] = []
            if row["fault_streams"]:
                faults = await conn.fetch(FAULTS, row["fault_streams"], row["fault_buckets"])
            return chosen, row, faults

        outcome = await narrowed(conn, list(by_feed), compute)
        parked = 0
        for failure in outcome.failed:
            rows = by_feed[failure.feed_id]
            spans = [asyncpg.Range(w["wfrom"], w["wto"]) for w in rows]
            channels = [w["channel"] for w in rows]
            parked += await set_aside(conn, "processing", failure, channels, spans, park_after)
        done = [f for chosen, _, _ in outcome.done for f in chosen]
        if done:
            await conn.execute(SUCCEEDED, "processing", done)
        retried = [f for f in done if by_feed[f][0]["retried"]]
        if retried:
            await conn.execute(CLEARED, "processing", retried)
        results = [row for _, row, _ in outcome.done]
        faults: dict[str, int] = {}
        for _, _, found in outcome.done:
            for f in found:
                faults[f["kind"]] = faults.get(f["kind"], 0) + f["found"]
        if any(row["events"] for row in results):
            # Last: its lock is held from here to the commit.
            await conn.execute(LIVE_PUBLISH)
        computed = time.perf_counter()
    return BatchResult(
        periods=sum(len(by_feed[f]) for chosen, _, _ in outcome.done for f in chosen),
        points=sum(row["points"] for row in results),
        written=sum(row["written"] for row in results),
        deleted=sum(row["deleted"] for row in results),
        parked=parked,
        failed=len(outcome.failed) - parked,
        claim_s=claimed - started,
        compute_s=computed - claimed,
        commit_s=time.perf_counter() - computed,
        faults=faults,
    )


def bucket_start(t: datetime) -> datetime:
    """Start of the epoch-aligned 90 s bucket holding ``t``."""
    seconds = t.timestamp()
    return datetime.fromtimestamp(seconds - seconds % BUCKET.total_seconds(), tz=t.tzinfo)
