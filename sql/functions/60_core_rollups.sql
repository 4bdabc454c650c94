-- Hourly rollups (cluster.hourly_rollups): where a point's local hour starts, and the
-- recomputation the engine runs from cluster.rollup_work (points read through
-- cluster.stream_points, 15_core_points.sql). docs/engine.md#rollups.
-- Re-applied by every `migrate`, after the numbered migrations: the one current definition.

-- The start of the local hour holding ts in zone tz: ts minus the minutes and seconds the local
-- clock shows. Unlike date_trunc on the local time it keeps the two 02:00 hours of an autumn
-- night apart, and in zones offset by a half or quarter hour it lands on :30 or :45 UTC.
CREATE OR REPLACE FUNCTION cluster.local_hour(ts timestamptz, tz text) RETURNS timestamptz
LANGUAGE sql STABLE PARALLEL SAFE
RETURN ts - make_interval(secs => mod(extract(epoch FROM ts AT TIME ZONE tz), 3600)::float8);
COMMENT ON FUNCTION cluster.local_hour(timestamptz, text) IS
    'Start of the local hour (in time zone tz) that holds ts; distinct for the repeated hour of a DST change.';

-- The parts of a window with one time zone each: cut where the feed's configuration changes,
-- a part no configuration covers in UTC. Windows and validities are '[)' ranges, and so are
-- the parts. One SELECT, so that the planner inlines it where it is joined LATERAL. Looked up
-- point by point instead, the zone was a join of every point of a batch with every
-- configuration of its feeds, planned from a guess of the points' number: a nested loop over
-- both, quadratic in the batch (a day of 200 feeds' rollups took 72.8 s).
CREATE OR REPLACE FUNCTION cluster.zone_pieces(p_feed_id bigint, p_window tstzrange)
RETURNS TABLE (piece tstzrange, tz text) LANGUAGE sql STABLE AS $$
    SELECT p_window * z.validity, coalesce(z.timezone, 'UTC')
      FROM cluster.feed_configs z
     WHERE z.feed_id = p_feed_id AND z.validity && p_window
    UNION ALL
    SELECT g.piece, 'UTC'
      FROM unnest(tstzmultirange(p_window) - coalesce(
               (SELECT range_agg(z.validity) FROM cluster.feed_configs z
                 WHERE z.feed_id = p_feed_id),
               '{}'::tstzmultirange)) AS g (piece)
$$;
COMMENT ON FUNCTION cluster.zone_pieces(bigint, tstzrange) IS
    'The parts of a window of a feed''s time with one time zone each (UTC where no configuration covers it).';

-- The whole local hours that the points of a window fall in: each of its parts with one zone
-- widened to whole hours of that zone. Where a feed moves to a zone whose hours start at other
-- minutes (UTC to Asia/Kolkata, +05:30), the hours on both sides of the change are whole in
-- it: widened by the zones at the window's two ends alone, the UTC hour before a change at
-- 01:00Z was read from 00:30 on, and its rollup overwritten with half its points.
CREATE OR REPLACE FUNCTION cluster.whole_hours(p_feed_id bigint, p_window tstzrange)
RETURNS tstzrange LANGUAGE plpgsql STABLE AS $$
BEGIN
    -- PL/pgSQL: its plan is kept for the session, where a SQL function's would be made again
    -- at every statement that calls it (a real-time reader's, rollup_pending). One range: the
    -- parts are contiguous, and so are their hours.
    RETURN (SELECT range_merge(range_agg(tstzrange(
                       cluster.local_hour(lower(z.piece), z.tz),
                       cluster.local_hour(upper(z.piece) - interval '1 microsecond', z.tz)
                           + interval '1 hour')))
              FROM cluster.zone_pieces(p_feed_id, p_window) z);
END $$;
COMMENT ON FUNCTION cluster.whole_hours(bigint, tstzrange) IS
    'The span of whole local hours (each in the zone valid at its points) that the points of a window of a feed''s time fall in.';

-- Recomputes the hourly rollups of the given streams over the local hours that the given point
-- periods touch (a null bound: the stream's first or last point or rollup). Each hour gets the
-- sum and count of its points; hours left without points are deleted. The caller holds the
-- streams' rollup locks (engine/rollups.py), so no two workers write one stream at once.
CREATE OR REPLACE FUNCTION cluster.rollup_recompute(
    p_streams bigint[], p_from timestamptz[], p_to timestamptz[]
) RETURNS TABLE (hours bigint, written bigint, deleted bigint) LANGUAGE sql AS $$
WITH asked AS (
    SELECT u.stream_id, s.feed_id, u.lo, u.hi
      FROM unnest(p_streams, p_from, p_to) AS u (stream_id, lo, hi)
      JOIN cluster.streams s ON s.id = u.stream_id
), extent AS (
    SELECT a.stream_id, a.feed_id,
           coalesce(a.lo, least(cluster.stream_point_edge(a.stream_id, false),
                                (SELECT min(hour) FROM cluster.hourly_rollups r
                                  WHERE r.stream_id = a.stream_id))) AS lo,
           coalesce(a.hi, greatest(cluster.stream_point_edge(a.stream_id, true),
                                   (SELECT max(hour) + interval '1 hour'
                                      FROM cluster.hourly_rollups r
                                     WHERE r.stream_id = a.stream_id))) AS hi
      FROM asked a
), windows AS (
    -- Widened to the whole local hours of every point they hold, each in its zone
    -- (cluster.whole_hours), then merged: two periods in one hour read it once. An hour of
    -- another zone that a window holds only in part is read, but neither written nor deleted
    -- (it holds no point of the periods: each of those has its hour whole in the window).
    SELECT e.stream_id, e.feed_id, unnest(range_agg(cluster.whole_hours(
               e.feed_id, tstzrange(e.lo, e.hi + interval '1 microsecond')))) AS w
      FROM extent e
     WHERE e.lo IS NOT NULL AND e.hi IS NOT NULL AND e.lo <= e.hi
     GROUP BY e.stream_id, e.feed_id
), pieces AS (
    SELECT w.stream_id, w.w AS span, z.piece, z.tz
      FROM windows w
     CROSS JOIN LATERAL cluster.zone_pieces(w.feed_id, w.w) z
), summed AS MATERIALIZED (
    -- Materialised: the filter below, pushed down to the points, made two more local hours a
    -- point (a time zone conversion each), and the year of the benchmarks' household took 14.5 s
    -- to roll up instead of 7.8.
    SELECT c.stream_id, c.span, cluster.local_hour(p.ts, c.tz) AS hour,
           sum(p.value) AS total, count(*)::integer AS points
      FROM pieces c
     CROSS JOIN LATERAL cluster.stream_points(c.stream_id, lower(c.piece), upper(c.piece)) p
     GROUP BY 1, 2, 3
), results AS MATERIALIZED (
    SELECT stream_id, hour, total, points FROM summed
     WHERE hour >= lower(span) AND hour + interval '1 hour' <= upper(span)
), upserted AS (
    INSERT INTO cluster.hourly_rollups AS r (stream_id, hour, total, points)
    SELECT stream_id, hour, total, points FROM results
    ON CONFLICT (stream_id, hour) DO UPDATE SET total = EXCLUDED.total, points = EXCLUDED.points
     WHERE (r.total, r.points) IS DISTINCT FROM (EXCLUDED.total, EXCLUDED.points)
    RETURNING 1
), stale AS (
    -- NOT IN over the results is one hashed subplan; joined to them (a CTE of a size the
    -- planner cannot know) it may become a nested loop over both, quadratic in the batch.
    -- Only hours whole in a span: all their points were read.
    DELETE FROM cluster.hourly_rollups r
     USING windows w
     WHERE r.stream_id = w.stream_id AND r.hour >= lower(w.w)
       AND r.hour <= upper(w.w) - interval '1 hour'
       AND (r.stream_id, r.hour) NOT IN (SELECT stream_id, hour FROM results)
    RETURNING 1
)
SELECT (SELECT count(*) FROM results), (SELECT count(*) FROM upserted), (SELECT count(*) FROM stale)
$$;
COMMENT ON FUNCTION cluster.rollup_recompute(bigint[], timestamptz[], timestamptz[]) IS
    'Recompute the hourly rollups of streams over the local hours touched by [p_from, p_to) (null: to the stream''s edge); returns hours computed, written and deleted.';

-- Whether a stream's hourly totals add up (energy, volume, cost) or are averaged (temperature,
-- and every raw and system quantity): the answer per calendar unit sums or averages by this.
CREATE OR REPLACE FUNCTION cluster.additive(p_type text, p_medium text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN p_type = 'processed' AND p_medium IS DISTINCT FROM 'temperature';
COMMENT ON FUNCTION cluster.additive(text, text) IS
    'True when a stream''s values are summed per hour, day or month (processed energy, volume and cost); false when averaged.';

-- Recomputes the daily rollups of the given streams over the local dates that the given point
-- periods touch, from their hourly rollups (run after cluster.rollup_recompute, in a later
-- statement of the same transaction, so that it sees the new hours). An hour belongs to the
-- local date it starts on, in the zone valid at it; the day's start and zone are its first
-- hour's. Days left without hours are deleted.
CREATE OR REPLACE FUNCTION cluster.rollup_days(
    p_streams bigint[], p_from timestamptz[], p_to timestamptz[]
) RETURNS TABLE (days bigint, written bigint, deleted bigint) LANGUAGE sql AS $$
WITH asked AS (
    SELECT u.stream_id, s.feed_id, u.lo, u.hi
      FROM unnest(p_streams, p_from, p_to) AS u (stream_id, lo, hi)
      JOIN cluster.streams s ON s.id = u.stream_id
), extent AS (
    SELECT a.stream_id, a.feed_id,
           coalesce(a.lo, least(
               (SELECT min(hour) FROM cluster.hourly_rollups r WHERE r.stream_id = a.stream_id),
               (SELECT min(start) FROM cluster.daily_rollups d WHERE d.stream_id = a.stream_id)))
               AS lo,
           coalesce(a.hi, greatest(
               (SELECT max(hour) FROM cluster.hourly_rollups r WHERE r.stream_id = a.stream_id),
               (SELECT max(start) FROM cluster.daily_rollups d WHERE d.stream_id = a.stream_id)))
               AS hi
      FROM asked a
), dates AS (
    SELECT e.stream_id, e.feed_id, unnest(range_agg(daterange(
               (e.lo AT TIME ZONE coalesce(zl.timezone, 'UTC'))::date,
               (e.hi AT TIME ZONE coalesce(zh.timezone, 'UTC'))::date, '[]'))) AS d
      FROM extent e
      LEFT JOIN cluster.feed_configs zl ON zl.feed_id = e.feed_id AND zl.validity @> e.lo
      LEFT JOIN cluster.feed_configs zh ON zh.feed_id = e.feed_id AND zh.validity @> e.hi
     WHERE e.lo IS NOT NULL AND e.hi IS NOT NULL AND e.lo <= e.hi
     GROUP BY e.stream_id, e.feed_id
), hours AS (
    -- Two days of margin in UTC hold every local date's hours in any zone (offsets < 1 day).
    SELECT x.stream_id, x.d, h.hour, h.total, h.points, coalesce(z.timezone, 'UTC') AS tz
      FROM dates x
      JOIN cluster.hourly_rollups h
        ON h.stream_id = x.stream_id
       AND h.hour >= lower(x.d)::timestamp AT TIME ZONE 'UTC' - interval '2 days'
       AND h.hour < upper(x.d)::timestamp AT TIME ZONE 'UTC' + interval '2 days'
      LEFT JOIN cluster.feed_configs z ON z.feed_id = x.feed_id AND z.validity @> h.hour
), results AS MATERIALIZED (
    SELECT stream_id, day, day::timestamp AT TIME ZONE tz AS start, tz AS timezone, total, points
      FROM (SELECT stream_id, (hour AT TIME ZONE tz)::date AS day,
                   -- Summed in the order of the hours, as real-time readers sum them
                   -- (61_core_realtime_rollups.sql): the same day total to the last bit.
                   (array_agg(tz ORDER BY hour))[1] AS tz, sum(total ORDER BY hour) AS total,
                   sum(points) AS points
              FROM hours
             WHERE d @> (hour AT TIME ZONE tz)::date
             GROUP BY 1, 2) g
), upserted AS (
    INSERT INTO cluster.daily_rollups AS r (stream_id, day, start, timezone, total, points)
    SELECT stream_id, day, start, timezone, total, points FROM results
    ON CONFLICT (stream_id, day) DO UPDATE
       SET start = EXCLUDED.start, timezone = EXCLUDED.timezone, total = EXCLUDED.total,
           points = EXCLUDED.points
     WHERE (r.start, r.timezone, r.total, r.points)
           IS DISTINCT FROM (EXCLUDED.start, EXCLUDED.timezone, EXCLUDED.total, EXCLUDED.points)
    RETURNING 1
), stale AS (
    -- As for the hours: a hashed subplan, not a join to a CTE.
    DELETE FROM cluster.daily_rollups r
     USING dates x
     WHERE r.stream_id = x.stream_id AND x.d @> r.day
       AND (r.stream_id, r.day) NOT IN (SELECT stream_id, day FROM results)
    RETURNING 1
)
SELECT (SELECT count(*) FROM results), (SELECT count(*) FROM upserted), (SELECT count(*) FROM stale)
$$;
COMMENT ON FUNCTION cluster.rollup_days(bigint[], timestamptz[], timestamptz[]) IS
    'Recompute the daily rollups of streams over the local dates touched by [p_from, p_to] (null: to the stream''s edge) from their hourly rollups; returns days computed, written and deleted.';

-- The streams whose quarter hours are kept (cluster.quarter_days): those a bill can meter,
-- processed consumption and export (cluster.feed_metered_streams picks its streams among them).
-- Every other stream is answered per hour at the finest.
CREATE OR REPLACE FUNCTION cluster.quarter_rolled(p_type text, p_quantity text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN p_type = 'processed' AND p_quantity IN ('consumption', 'export');
COMMENT ON FUNCTION cluster.quarter_rolled(text, text) IS
    'Whether a stream of this type and quantity has quarter-hour rollups: processed consumption and export.';

-- A UTC day's quarter hours as cluster.quarter_days holds them: p_base (null: none) with the
-- quarters p_cleared emptied and then the quarters p_numbers set to p_totals; null when no
-- quarter is left with a value (the day's row goes). PL/pgSQL: an element set is one step.
CREATE OR REPLACE FUNCTION cluster.quarter_array(
    p_base double precision[], p_cleared integer[], p_numbers integer[],
    p_totals double precision[]
) RETURNS double precision[] LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    v double precision[] := coalesce(p_base, array_fill(NULL::double precision, ARRAY[96]));
    n integer;
BEGIN
    FOREACH n IN ARRAY coalesce(p_cleared, '{}') LOOP
        v[n] := NULL;
    END LOOP;
    FOR i IN 1 .. coalesce(cardinality(p_numbers), 0) LOOP
        v[p_numbers[i]] := p_totals[i];
    END LOOP;
    RETURN CASE WHEN cardinality(array_remove(v, NULL)) > 0 THEN v END;
END $$;
COMMENT ON FUNCTION cluster.quarter_array(double precision[], integer[], integer[], double precision[]) IS
    'A UTC day''s 96 quarter sums: p_base (null: none) with p_cleared emptied and p_numbers set to p_totals; null when none is left.';

-- The quarter hours (time_bucket('15 minutes'): UTC quarters, local quarters in every zone
-- whose offset is a multiple of 15 minutes) of the quarter-rolled streams among the given
-- ones over the periods given (bounds as for cluster.rollup_recompute), each period widened to
-- whole quarters: every quarter it touches is summed from all its points into its UTC day's
-- row of cluster.quarter_days, a quarter left without points is emptied, and a day left
-- without any goes. No time zone is involved: a quarter is the same instant range in every
-- zone.
CREATE OR REPLACE FUNCTION cluster.rollup_quarters(
    p_streams bigint[], p_from timestamptz[], p_to timestamptz[]
) RETURNS TABLE (quarters bigint, written bigint, deleted bigint) LANGUAGE sql AS $$
WITH asked AS (
    SELECT u.stream_id, u.lo, u.hi
      FROM unnest(p_streams, p_from, p_to) AS u (stream_id, lo, hi)
      JOIN cluster.streams s ON s.id = u.stream_id
     WHERE cluster.quarter_rolled(s.type, s.quantity)
), extent AS (
    SELECT a.stream_id,
           coalesce(a.lo, least(cluster.stream_point_edge(a.stream_id, false),
                                (SELECT min(day)::timestamp AT TIME ZONE 'UTC'
                                   FROM cluster.quarter_days r
                                  WHERE r.stream_id = a.stream_id))) AS lo,
           coalesce(a.hi, greatest(cluster.stream_point_edge(a.stream_id, true),
                                   (SELECT (max(day) + 1)::timestamp AT TIME ZONE 'UTC'
                                           - interval '15 minutes'
                                      FROM cluster.quarter_days r
                                     WHERE r.stream_id = a.stream_id))) AS hi
      FROM asked a
), windows AS (
    -- hi is inclusive, as for the hours: the quarter holding it is read whole.
    SELECT e.stream_id, unnest(range_agg(tstzrange(
               time_bucket('15 minutes', e.lo),
               time_bucket('15 minutes', e.hi) + interval '15 minutes'))) AS w
      FROM extent e
     WHERE e.lo IS NOT NULL AND e.hi IS NOT NULL AND e.lo <= e.hi
     GROUP BY e.stream_id
), cleared AS (
    -- Per stream and UTC day, the quarters the windows cover: their sums are all made anew.
    SELECT w.stream_id, (g AT TIME ZONE 'UTC')::date AS day,
           array_agg(cluster.quarter_number(g)) AS numbers
      FROM windows w
     CROSS JOIN LATERAL generate_series(lower(w.w), upper(w.w) - interval '15 minutes',
                                        interval '15 minutes') AS g
     GROUP BY 1, 2
), summed AS MATERIALIZED (
    SELECT w.stream_id, time_bucket('15 minutes', p.ts) AS start, sum(p.value) AS total
      FROM windows w
     CROSS JOIN LATERAL cluster.stream_points(w.stream_id, lower(w.w), upper(w.w)) p
     GROUP BY 1, 2
), results AS MATERIALIZED (
    SELECT c.stream_id, c.day,
           cluster.quarter_array(d.totals, c.numbers, s.numbers, s.totals) AS totals
      FROM cleared c
      LEFT JOIN cluster.quarter_days d ON d.stream_id = c.stream_id AND d.day = c.day
      LEFT JOIN (SELECT stream_id, (start AT TIME ZONE 'UTC')::date AS day,
                        array_agg(cluster.quarter_number(start)) AS numbers,
                        array_agg(total) AS totals
                   FROM summed GROUP BY 1, 2) s
        ON s.stream_id = c.stream_id AND s.day = c.day
), upserted AS (
    INSERT INTO cluster.quarter_days AS r (stream_id, day, totals)
    SELECT stream_id, day, totals FROM results WHERE totals IS NOT NULL
    ON CONFLICT (stream_id, day) DO UPDATE SET totals = EXCLUDED.totals
     WHERE r.totals IS DISTINCT FROM EXCLUDED.totals
    RETURNING 1
), stale AS (
    DELETE FROM cluster.quarter_days r
     USING results x
     WHERE r.stream_id = x.stream_id AND r.day = x.day AND x.totals IS NULL
    RETURNING 1
)
SELECT (SELECT count(*) FROM summed), (SELECT count(*) FROM upserted), (SELECT count(*) FROM stale)
$$;
COMMENT ON FUNCTION cluster.rollup_quarters(bigint[], timestamptz[], timestamptz[]) IS
    'Recompute the quarter-hour sums (cluster.quarter_days) of the quarter-rolled streams among the given ones over the quarters touched by [p_from, p_to] (null: the stream''s whole history); returns quarters summed, days written and days deleted.';

-- Both, in order: the hours of the periods, then their days, which a separate statement must make
-- from the new hours; then the periods' quarter hours (cluster.rollup_quarters). What the engine
-- runs, and what an operator runs to rebuild a stream's rollups by hand (null bounds: its whole history). JIT is off, as for the engine's statement
-- (engine/processing.py) and the real-time readers (61_core_realtime_rollups.sql): the planner's
-- guess for a year of chunks made it compile for seconds a call; the year of the benchmarks'
-- household (10 streams x 350,400 points) took 41.3 s to roll up with JIT against 6.0 s without.
CREATE OR REPLACE FUNCTION cluster.rollup_streams(
    p_streams bigint[], p_from timestamptz[], p_to timestamptz[]
) RETURNS TABLE (hours bigint, written bigint, deleted bigint) LANGUAGE plpgsql SET jit = off AS $$
BEGIN
    RETURN QUERY SELECT * FROM cluster.rollup_recompute(p_streams, p_from, p_to);
    PERFORM cluster.rollup_days(p_streams, p_from, p_to);
    PERFORM cluster.rollup_quarters(p_streams, p_from, p_to);
END $$;
COMMENT ON FUNCTION cluster.rollup_streams(bigint[], timestamptz[], timestamptz[]) IS
    'Recompute the hourly and then the daily rollups of streams over [p_from, p_to] (null: the whole history), and the quarter-hour ones of those that have them; returns the hours'' counts.';
