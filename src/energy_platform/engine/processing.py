"""The 90 s processing as named SQL, and the transactions that run it.

Work flows through two queues. Ingest records written point times per raw stream in
``cluster.dirty_ranges``; :data:`INTAKE` moves them into ``cluster.engine_work`` as bucket-aligned
periods per channel, widened to every bucket whose result the new points can change, and creates
the processed streams of channels seen for the first time. :data:`CLAIM` takes the closed part of
the queued work of a bounded number of feeds under an advisory lock per feed, and
:data:`COMPUTE` recomputes those buckets for all their channels in one statement: it upserts the
points that qualify and deletes those that no longer do. docs/engine.md explains the rules.
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
from energy_platform.engine.parking import CLEARED, narrowed, park

# cluster.bucket_seconds(); a test holds the two equal.
BUCKET = timedelta(seconds=90)

# Claims a bounded batch of ingest's dirty ranges (SKIP LOCKED: workers take disjoint rows).
# Per raw stream the written periods are merged, then widened: to the bucket of the previous
# point when the segment from it is bridged (cluster.bridge_limit()), always to the bucket of the
# next point (a meter reading's consumption is counted at the later reading), and across bridged
# gaps; a register's across every gap.
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
    SELECT s.feed_id, s.channel, s.id AS raw_id, m.method,
           unnest(range_agg(tstzrange(c.ts_from, c.ts_to, '[]'))) AS written
      FROM claimed c
      JOIN cluster.streams s ON s.id = c.stream_id AND s.type = 'raw'
      JOIN cluster.processable_media m ON m.medium_id = s.medium
     GROUP BY s.feed_id, s.channel, s.id, m.method
), neighbours AS (
    -- A register reaches its neighbours across any gap: its span (COMPUTE) decides between it
    -- and the channel's power in every bucket between them.
    SELECT t.feed_id, t.channel, lower(t.written) AS ts_from, upper(t.written) AS ts_to,
           n.before AS prev, n.after AS next, t.method = 'register' AS spans
      FROM touched t
     CROSS JOIN LATERAL cluster.point_neighbours(
               t.raw_id, lower(t.written), upper(t.written) + interval '1 microsecond') n
), affected AS (
    SELECT feed_id, channel, tstzrange(
               time_bucket(cluster.bucket_width(),
                           CASE WHEN ts_from - prev <= cluster.bridge_limit()
                                  OR (spans AND prev IS NOT NULL)
                                THEN prev ELSE ts_from END),
               time_bucket(cluster.bucket_width(),
                           CASE WHEN next - ts_to <= cluster.bridge_limit()
                                  OR (spans AND next IS NOT NULL)
                                THEN next ELSE ts_to END) + cluster.bucket_width()) AS buckets
      FROM neighbours
    UNION ALL
    SELECT feed_id, channel,
           tstzrange(time_bucket(cluster.bucket_width(), next),
                     time_bucket(cluster.bucket_width(), next) + cluster.bucket_width())
      FROM neighbours WHERE next IS NOT NULL
), queued AS (
    INSERT INTO cluster.engine_work (feed_id, channel, buckets)
    SELECT feed_id, channel, unnest(range_agg(buckets)) FROM affected GROUP BY feed_id, channel
    RETURNING 1
), channel_media AS (
    -- The processed streams a channel's raw media call for: one per quantity and index, where
    -- a register's index is a tariff (1-0:1.8.2: tariff 2), never a phase.
    SELECT DISTINCT ON (s.feed_id, s.channel, m.quantity, t.idx, t.tariff)
           s.feed_id, s.channel, m.quantity, t.idx, t.tariff, m.medium, m.title, m.unit,
           m.index_label
      FROM (SELECT DISTINCT feed_id, channel FROM touched) c
      JOIN cluster.streams s ON s.feed_id = c.feed_id AND s.channel = c.channel AND s.type = 'raw'
      JOIN cluster.processable_media m ON m.medium_id = s.medium
     CROSS JOIN LATERAL cluster.processed_target(m.method, s.idx) t
     ORDER BY s.feed_id, s.channel, m.quantity, t.idx, t.tariff, m.medium_id
), wanted AS (
    SELECT feed_id, channel, quantity, idx, tariff, false AS combined, medium, title, unit,
           index_label
      FROM channel_media
    UNION ALL
    SELECT feed_id, channel, quantity, NULL, NULL, true, min(medium), min(title), min(unit), ''
      FROM channel_media WHERE idx IS NOT NULL OR tariff IS NOT NULL
     GROUP BY feed_id, channel, quantity HAVING count(*) >= 2
), missing AS (
    -- Consumption is priced and export credited: a cost or credit stream beside each.
    SELECT w.*, k.cost, q.stream_quantity
      FROM wanted w CROSS JOIN (VALUES (false), (true)) AS k (cost)
     CROSS JOIN LATERAL (
           SELECT CASE WHEN NOT k.cost THEN w.quantity
                       WHEN w.quantity = 'export' THEN 'credit' ELSE 'cost' END
                  AS stream_quantity) q
     WHERE (NOT k.cost OR w.quantity IN ('consumption', 'export'))
       AND NOT EXISTS (
           SELECT 1 FROM cluster.streams s
            WHERE s.type = 'processed' AND s.feed_id = w.feed_id AND s.channel = w.channel
              AND s.idx IS NOT DISTINCT FROM w.idx AND s.tariff IS NOT DISTINCT FROM w.tariff
              AND s.combined = w.combined
              AND s.quantity = q.stream_quantity)
), created AS (
    INSERT INTO cluster.streams (feed_id, type, channel, idx, tariff, combined, quantity)
    SELECT feed_id, 'processed', channel, idx, tariff, combined, stream_quantity FROM missing
    ON CONFLICT DO NOTHING
    RETURNING id, feed_id, channel, idx, tariff, combined, quantity
), configured AS (
    INSERT INTO cluster.stream_configs (stream_id, title, medium, unit, validity)
    SELECT c.id,
           m.title || CASE WHEN m.cost THEN ' ' || c.quantity ELSE '' END || ', channel '
               || c.channel
               || CASE WHEN c.combined THEN ', total'
                       WHEN c.tariff IS NOT NULL THEN ', tariff ' || c.tariff
                       WHEN c.idx IS NULL THEN ''
                       ELSE m.index_label || c.idx END,
           m.medium, CASE WHEN m.cost THEN $2 ELSE m.unit END, tstzrange(NULL, NULL)
      FROM created c
      JOIN missing m ON m.feed_id = c.feed_id AND m.channel = c.channel
                    AND m.idx IS NOT DISTINCT FROM c.idx
                    AND m.tariff IS NOT DISTINCT FROM c.tariff AND m.combined = c.combined
                    AND m.stream_quantity = c.quantity
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
# queued by a configuration change is mostly empty). The part from the open bucket on ($1 is
# its start) and beyond $3 of the start is queued again; the rest is returned, with whether its
# feed was parked and retried (its parked rows go once it computes).
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
               SELECT min(n.after)
                 FROM cluster.streams s
                 JOIN cluster.processable_media pm ON pm.medium_id = s.medium
                CROSS JOIN LATERAL cluster.point_neighbours(s.id, '-infinity', lower(m.buckets)) n
                WHERE s.feed_id = m.feed_id AND s.channel = m.channel AND s.type = 'raw'
                  AND n.after < upper(m.buckets) + cluster.bridge_limit()
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

# Recomputes the buckets [wfrom, wto) of the given channels. Per raw stream the points from the
# last one before wfrom to the first one at or after wto form segments. A bridged segment
# (cluster.bridged) adds its trapezoid (value·s) and its length (s) to the buckets it overlaps,
# cut at their edges (cluster.segment_integral, cluster.segment_covered); a register's segment
# is first made its constant rate of rise (Wh/s), so that its trapezoid is its rise in the
# bucket. A meter reading's segment, and a register's unbridged one, adds its step (never
# negative: a decrease is a reset or rollover) to the bucket of its later point. Times are
# float epoch seconds; bucket k starts at k·cluster.bucket_seconds(). Each segment is first
# added whole to the bucket it starts in ("heads", one hash aggregate over the points); the one
# segment per bucket that crosses its end is carried along and spread over the following
# buckets afterwards ("tails", a row per bucket, not per point). Per processed stream and
# bucket the register's value is taken from its first reading's bucket to its last one's
# ("spans"), the other media's outside them: each Wh counted once. Configurations, tariffs and
# time zones are joined as ranges of k (cluster.validity_buckets): hash joins on keys. The
# numbers and the expressions used twice are named by functions of
# sql/functions/20_engine.sql that the planner inlines: the plan is the one the expressions
# written out gave.
COMPUTE = """
WITH work AS (
    SELECT * FROM unnest($1::bigint[], $2::integer[], $3::timestamptz[], $4::timestamptz[])
        AS w (feed_id, channel, wfrom, wto)
), sources AS MATERIALIZED (
    SELECT s.id AS raw_id, m.method = 'register' AS register, m.method = 'reading' AS reading,
           date_part('epoch', w.wfrom) AS wf,
           date_part('epoch', w.wto) AS wt,
           coalesce(n.before, w.wfrom) AS lo, coalesce(n.after, w.wto) AS hi
      FROM work w
      JOIN cluster.streams s ON s.feed_id = w.feed_id AND s.channel = w.channel AND s.type = 'raw'
      JOIN cluster.processable_media m ON m.medium_id = s.medium
     CROSS JOIN LATERAL cluster.point_neighbours(s.id, w.wfrom, w.wto) n
), segments AS (
    -- OFFSET 0 keeps each expression computed once per point, not once per use.
    SELECT raw_id, wt, e0, v0, e1, v1, step, k, a, least(e1, kend) AS c, e1 >= kend AS crosses,
           bridged
      FROM (SELECT raw_id, wt, e0, v0, e1, v1, step, bridged, k, a,
                   cluster.bucket_seconds() * k + cluster.bucket_seconds() AS kend
              FROM (SELECT raw_id, wt, e0, e1, cluster.bridged(e0, e1) AS bridged,
                           greatest(e0, wf) AS a, cluster.bucket_of(greatest(e0, wf)) AS k,
                           CASE WHEN register THEN greatest(v1 - v0, 0) / (e1 - e0)
                                ELSE v0 END AS v0,
                           CASE WHEN register THEN greatest(v1 - v0, 0) / (e1 - e0)
                                ELSE v1 END AS v1,
                           CASE WHEN reading OR (register AND NOT cluster.bridged(e0, e1))
                                THEN greatest(v1 - v0, 0) END AS step
                      FROM (SELECT src.raw_id, src.register, src.reading, src.wf, src.wt,
                                   date_part('epoch', g.ts) AS e0, g.v0,
                                   date_part('epoch', g.t1) AS e1, g.v1
                              FROM sources src
                              CROSS JOIN LATERAL (
                                  SELECT p.ts, p.value AS v0,
                                         lead(p.ts) OVER w AS t1, lead(p.value) OVER w AS v1
                                    FROM cluster.stream_points(src.raw_id, src.lo,
                                             src.hi + interval '1 microsecond') p
                                  WINDOW w AS (ORDER BY p.ts)
                              ) g
                             WHERE g.t1 IS NOT NULL
                            OFFSET 0) points
                    OFFSET 0) x
            OFFSET 0) y
), heads AS MATERIALIZED (
    SELECT raw_id, k, min(wt) AS wt,
           sum(cluster.segment_integral(e0, v0, e1, v1, bridged, a, c)) AS integral,
           sum(cluster.segment_covered(bridged, a, c)) AS covered,
           sum(step) FILTER (WHERE NOT crosses) AS delta,
           max(e0) FILTER (WHERE crosses) AS ce0,
           max(v0) FILTER (WHERE crosses) AS cv0,
           max(e1) FILTER (WHERE crosses) AS ce1,
           max(v1) FILTER (WHERE crosses) AS cv1,
           max(step) FILTER (WHERE crosses) AS cstep
      FROM segments
     GROUP BY raw_id, k
), tails AS (
    SELECT raw_id, k,
           cluster.segment_integral(e0, v0, e1, v1, bridged, a, c) AS integral,
           cluster.segment_covered(bridged, a, c) AS covered,
           CASE WHEN cluster.bucket_of(e1) = k THEN step END AS delta
      FROM (SELECT raw_id, k, e0, v0, e1, v1, step, bridged,
                   greatest(e0, cluster.bucket_seconds() * k) AS a,
                   least(e1, cluster.bucket_seconds() * k + cluster.bucket_seconds()) AS c
              FROM (SELECT raw_id, ce0 AS e0, cv0 AS v0, ce1 AS e1, cv1 AS v1, cstep AS step,
                           cluster.bridged(ce0, ce1) AS bridged,
                           generate_series(
                               CASE WHEN cluster.bridged(ce0, ce1) THEN k + 1
                                    ELSE cluster.bucket_of(ce1) END,
                               least(cluster.bucket_of(ce1),
                                     (wt / cluster.bucket_seconds())::bigint - 1)) AS k
                      FROM heads WHERE ce1 IS NOT NULL) spread) t
), per_raw AS (
    SELECT raw_id, k, sum(integral) AS integral, sum(covered) AS covered, sum(delta) AS delta
      FROM (SELECT raw_id, k, integral, covered, delta FROM heads
            UNION ALL
            SELECT raw_id, k, integral, covered, delta FROM tails) parts
     GROUP BY raw_id, k
), per_index AS (
    -- Registers apart from the rest: which of the two a bucket takes is decided per stream.
    SELECT s.feed_id, s.channel, m.quantity, t.idx, t.tariff, r.k,
           sum(CASE WHEN r.covered > 0 OR r.delta IS NOT NULL
                    THEN r.integral + coalesce(r.delta, 0) END)
               FILTER (WHERE m.method = 'register') AS register,
           sum(CASE m.method WHEN 'integral' THEN CASE WHEN r.covered > 0
                                                       THEN r.integral / 3600 END
                             WHEN 'reading' THEN r.delta END)
               FILTER (WHERE m.method IN ('integral', 'reading')) AS measured,
           sum(r.integral) FILTER (WHERE m.method = 'mean') AS integral,
           sum(r.covered) FILTER (WHERE m.method = 'mean') AS covered
      FROM per_raw r
      JOIN cluster.streams s ON s.id = r.raw_id
      JOIN cluster.processable_media m ON m.medium_id = s.medium
     CROSS JOIN LATERAL cluster.processed_target(m.method, s.idx) t
     GROUP BY s.feed_id, s.channel, m.quantity, t.idx, t.tariff, r.k
), per_target AS (
    SELECT feed_id, channel, quantity, coalesce(idx, 0) AS idx, coalesce(tariff, 0) AS tariff,
           false AS combined, k, register, measured, integral, covered
      FROM per_index
    UNION ALL
    SELECT feed_id, channel, quantity, 0, 0, true, k, sum(register), sum(measured),
           sum(integral), sum(covered)
      FROM per_index WHERE idx IS NOT NULL OR tariff IS NOT NULL
     GROUP BY feed_id, channel, quantity, k
), registers AS MATERIALIZED (
    SELECT s.feed_id, s.channel, m.quantity, s.idx, e.kfirst, e.klast
      FROM (SELECT DISTINCT raw_id FROM sources WHERE register) r
      JOIN cluster.streams s ON s.id = r.raw_id
      JOIN cluster.processable_media m ON m.medium_id = s.medium
     CROSS JOIN LATERAL cluster.register_span(r.raw_id) e
), spans AS MATERIALIZED (
    -- The buckets from a register's first reading to its last, over its whole history: per
    -- stream it counts in (its own; the unindexed one's; the combined one's for a tariff).
    SELECT feed_id, channel, quantity, 0 AS idx, coalesce(idx, 0) AS tariff, false AS combined,
           min(kfirst) AS kfirst, max(klast) AS klast
      FROM registers GROUP BY feed_id, channel, quantity, idx
    UNION ALL
    SELECT feed_id, channel, quantity, 0, 0, true, min(kfirst), max(klast)
      FROM registers WHERE idx IS NOT NULL GROUP BY feed_id, channel, quantity
), targets AS MATERIALIZED (
    -- Each stream's register span joins here, a row per configuration: joined to the buckets
    -- (a CTE of unknown size) it became a nested loop over both.
    SELECT ps.id AS stream_id, ps.feed_id, ps.channel, ps.idx AS stream_idx,
           ps.tariff AS stream_tariff, coalesce(ps.idx, 0) AS idx,
           coalesce(ps.tariff, 0) AS tariff, ps.combined, ps.quantity, c.medium, k.kfrom, k.kto,
           sp.kfirst, sp.klast, w.window
      FROM (SELECT feed_id, channel, range_agg(tstzrange(wfrom, wto)) AS window
              FROM work GROUP BY feed_id, channel) w
      JOIN cluster.streams ps
        ON ps.feed_id = w.feed_id AND ps.channel = w.channel AND ps.type = 'processed'
      JOIN cluster.stream_configs c ON c.stream_id = ps.id
     CROSS JOIN LATERAL cluster.validity_buckets(c.validity) k
      LEFT JOIN spans sp
        ON sp.feed_id = ps.feed_id AND sp.channel = ps.channel AND sp.quantity = ps.quantity
       AND sp.idx = coalesce(ps.idx, 0) AND sp.tariff = coalesce(ps.tariff, 0)
       AND sp.combined = ps.combined
     WHERE c.medium IS NOT NULL
), periods AS MATERIALIZED (
    -- Per value stream: the stretches of k with one configuration, and those that also have a
    -- cost configuration, a tariff and a time zone (consumption: its cost, priced by the tariff
    -- of the cost stream's medium; export: its credit, by the tariff of medium export). The
    -- cost side is looked up from each value period through the tables' indexes: joined as
    -- CTEs, whose sizes the planner cannot know, it became a nested loop over every pair of
    -- periods (4 s for a batch of 1,000 channels).
    SELECT c.feed_id, c.channel, c.quantity, c.idx, c.tariff, c.combined, c.stream_id,
           c.medium, c.kfrom, c.kto, c.kfirst, c.klast, NULL::bigint AS tariff_id,
           NULL::text AS timezone, 0::float8 AS market
      FROM targets c WHERE c.quantity IN ('consumption', 'export', 'mean')
    UNION ALL
    -- A dynamic tariff's period is cut at its area's slots in the channel's work periods (a
    -- bucket in no slot has no price yet, and no cost point): market is factor x the slot's
    -- price, added to the band's price per bucket below. The periods' multirange, not their
    -- hull: yesterday's late points beside live ones would have joined a day of slots.
    SELECT c.feed_id, c.channel, c.quantity, c.idx, c.tariff, c.combined, cs.id, c.medium,
           greatest(c.kfrom, k.kfrom), least(c.kto, k.kto), c.kfirst, c.klast, tr.id,
           z.timezone, m.market
      FROM targets c
      JOIN cluster.streams cs
        ON cs.feed_id = c.feed_id AND cs.type = 'processed' AND cs.channel = c.channel
       AND cs.idx IS NOT DISTINCT FROM c.stream_idx
       AND cs.tariff IS NOT DISTINCT FROM c.stream_tariff
       AND cs.combined = c.combined
       AND cs.quantity = CASE c.quantity WHEN 'export' THEN 'credit' ELSE 'cost' END
      JOIN cluster.stream_configs cc ON cc.stream_id = cs.id
      JOIN cluster.tariffs tr
        ON tr.feed_id = c.feed_id
       AND tr.medium = CASE c.quantity WHEN 'export' THEN 'export' ELSE cc.medium END
      JOIN cluster.feed_configs z ON z.feed_id = c.feed_id
     CROSS JOIN LATERAL (
           SELECT '(,)'::tstzrange AS slot, 0::float8 AS market WHERE tr.area IS NULL
           UNION ALL
           SELECT p.slot, tr.factor * p.price FROM cluster.prices p
            WHERE tr.area IS NOT NULL AND p.area = tr.area AND p.slot && c.window) m
     CROSS JOIN LATERAL (SELECT cc.validity * tr.validity * z.validity * m.slot AS valid) v
     CROSS JOIN LATERAL cluster.validity_buckets(v.valid) k
     WHERE c.quantity IN ('consumption', 'export') AND NOT isempty(v.valid)
       AND greatest(c.kfrom, k.kfrom) < least(c.kto, k.kto)
), valued AS MATERIALIZED (
    -- The stream's quantity per bucket; for cost rows in kWh or m³, to be priced.
    SELECT pd.stream_id, t.k, pd.tariff_id, pd.timezone, pd.market,
           CASE WHEN pd.quantity = 'mean'
                THEN CASE WHEN t.covered > 0 THEN t.integral / t.covered END
                WHEN t.k BETWEEN pd.kfirst AND pd.klast THEN t.register
                ELSE t.measured END
           * CASE WHEN pd.tariff_id IS NOT NULL AND pd.medium = 'power' THEN 0.001::float8
                  ELSE 1 END AS value
      FROM per_target t
      JOIN periods pd
        ON pd.feed_id = t.feed_id AND pd.channel = t.channel AND pd.quantity = t.quantity
       AND pd.idx = t.idx AND pd.tariff = t.tariff AND pd.combined = t.combined
       AND t.k >= pd.kfrom AND t.k < pd.kto
), results AS (
    SELECT stream_id, to_timestamp(cluster.bucket_seconds() * k) AS ts, value
      FROM valued WHERE tariff_id IS NULL AND value IS NOT NULL
    UNION ALL
    SELECT v.stream_id, x.ts, v.value * (b.price + v.market)
      FROM valued v
      CROSS JOIN LATERAL (SELECT to_timestamp(cluster.bucket_seconds() * v.k) AS ts) x
      CROSS JOIN LATERAL (SELECT (x.ts AT TIME ZONE v.timezone)::time AS local) l
      JOIN cluster.tariff_bands b
        ON b.tariff_id = v.tariff_id AND b.starts <= l.local AND l.local < b.ends
     WHERE v.tariff_id IS NOT NULL AND v.value IS NOT NULL
), upserted AS (
    INSERT INTO cluster.processed_points AS p (stream_id, ts, value)
    SELECT stream_id, ts, value FROM results
    ON CONFLICT (stream_id, ts) DO UPDATE SET value = EXCLUDED.value
     WHERE p.value IS DISTINCT FROM EXCLUDED.value
    RETURNING p.stream_id, p.ts, p.value
), rolled AS (
    -- The hours of every recomputed period, changed or not: cheap, and never one missed.
    INSERT INTO cluster.rollup_work (stream_id, span)
    SELECT ps.id, tstzrange(w.wfrom, w.wto)
      FROM work w
      JOIN cluster.streams ps
        ON ps.feed_id = w.feed_id AND ps.channel = w.channel AND ps.type = 'processed'
), stale AS (
    -- NOT IN over the results is one hashed subplan: joined to them (a CTE, whose size the
    -- planner cannot know) it became a nested loop over both, quadratic in the batch.
    DELETE FROM cluster.processed_points p
     USING work w
      JOIN cluster.streams ps
        ON ps.feed_id = w.feed_id AND ps.channel = w.channel AND ps.type = 'processed'
     WHERE p.stream_id = ps.id AND p.ts >= w.wfrom AND p.ts < w.wto
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
)
SELECT (SELECT count(*) FROM results) AS points,
       (SELECT count(*) FROM upserted) AS written,
       (SELECT count(*) FROM stale) AS deleted,
       (SELECT events FROM live) AS events
"""

# Before COMPUTE writes into old buckets: the UTC days of the periods' processed streams that
# the compaction may have taken go back to the row tier (cluster.thaw_days skips younger days).
THAW = """
SELECT cluster.thaw_days(array_agg(ps.id), array_agg(d.day::date))
  FROM unnest($1::bigint[], $2::integer[], $3::timestamptz[], $4::timestamptz[])
       AS w (feed_id, channel, wfrom, wto)
  JOIN cluster.streams ps
    ON ps.feed_id = w.feed_id AND ps.channel = w.channel AND ps.type = 'processed'
 CROSS JOIN LATERAL generate_series((w.wfrom AT TIME ZONE 'UTC')::date,
                                    (w.wto AT TIME ZONE 'UTC')::date, interval '1 day') AS d (day)
 WHERE w.wfrom < now() - interval '1 day'"""

# Hash aggregates need memory; JIT compilation costs more (about 1 s) than these batches gain.
TUNE = "SELECT set_config('work_mem', $1, true), set_config('jit', 'off', true)"


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
    claim_s: float = 0.0
    """Seconds taking the work (the claim statement)."""
    compute_s: float = 0.0
    """Seconds recomputing it (thaw and compute statements)."""
    commit_s: float = 0.0
    """Seconds committing."""


async def intake(conn: Connection, *, batch: int, currency: str, work_mem: str) -> IntakeResult:
    """Move up to ``batch`` dirty ranges into the engine's queue, in one transaction."""
    async with conn.transaction():
        await conn.execute(TUNE, work_mem)
        (row,) = await conn.fetch(INTAKE, batch, currency)
    return IntakeResult(claimed=row["claimed"], created=row["created"])


async def process_batch(
    conn: Connection,
    *,
    now: datetime,
    feeds: int,
    max_span: timedelta,
    work_mem: str,
) -> BatchResult:
    """Claim the closed work of up to ``feeds`` feeds and recompute it, in one transaction. A
    feed whose work fails on its data is found by halving and parked; the others commit."""
    horizon = bucket_start(now)
    started = time.perf_counter()
    async with conn.transaction():
        await conn.execute(TUNE, work_mem)
        work: Sequence[asyncpg.Record] = await conn.fetch(
            CLAIM, horizon, feeds, max_span, LockKey.ENGINE_FEED
        )
        if not work:
            return BatchResult(periods=0, points=0, written=0, deleted=0)
        claimed = time.perf_counter()
        by_feed: dict[int, list[asyncpg.Record]] = {}
        for w in work:
            by_feed.setdefault(w["feed_id"], []).append(w)

        async def compute(chosen: Sequence[int]) -> tuple[Sequence[int], asyncpg.Record]:
            rows = work if len(chosen) == len(by_feed) else [w for f in chosen for w in by_feed[f]]
            periods = (
                [w["feed_id"] for w in rows],
                [w["channel"] for w in rows],
                [w["wfrom"] for w in rows],
                [w["wto"] for w in rows],
            )
            await conn.execute(THAW, *periods)
            (row,) = await conn.fetch(COMPUTE, *periods)
            return chosen, row

        outcome = await narrowed(conn, list(by_feed), compute)
        for failure in outcome.failed:
            rows = by_feed[failure.feed_id]
            spans = [asyncpg.Range(w["wfrom"], w["wto"]) for w in rows]
            await park(conn, "processing", failure, [w["channel"] for w in rows], spans)
        retried = [f for chosen, _ in outcome.done for f in chosen if by_feed[f][0]["retried"]]
        if retried:
            await conn.execute(CLEARED, "processing", retried)
        results = [row for _, row in outcome.done]
        if any(row["events"] for row in results):
            # Last: its lock is held from here to the commit.
            await conn.execute(LIVE_PUBLISH)
        computed = time.perf_counter()
    return BatchResult(
        periods=sum(len(by_feed[f]) for chosen, _ in outcome.done for f in chosen),
        points=sum(row["points"] for row in results),
        written=sum(row["written"] for row in results),
        deleted=sum(row["deleted"] for row in results),
        parked=len(outcome.failed),
        claim_s=claimed - started,
        compute_s=computed - claimed,
        commit_s=time.perf_counter() - computed,
    )


def bucket_start(t: datetime) -> datetime:
    """Start of the epoch-aligned 90 s bucket holding ``t``."""
    seconds = t.timestamp()
    return datetime.fromtimestamp(seconds - seconds % BUCKET.total_seconds(), tz=t.tzinfo)
