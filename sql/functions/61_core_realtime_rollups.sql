-- Real-time rollups, like TimescaleDB's real-time continuous aggregates (which the Apache build
-- lacks): the hours and days of a stream whose points changed but whose rollups the engine has
-- not recomputed yet are answered from the points at read time, the rest from the materialised
-- cluster.hourly_rollups and cluster.daily_rollups. Read at once or after the engine caught
-- up, an answer is the same (docs/engine.md#real-time-rollups).
-- Re-applied by every `migrate`, after the numbered migrations: the one current definition.
--
-- They are PL/pgSQL so that their plans are kept for the session (a SQL function's statement is
-- planned at every call: 1-2 ms, more than the look-up itself), and the two readers use generic
-- plans, as the data API's connections do (re-planning the look-up each call cost 0.4 ms). The points of pending hours are
-- read by EXECUTE with the window's bounds as parameters, planned for those values: the
-- hypertables' chunks are then excluded while planning, where a cached generic plan set up
-- every chunk's scan at each call (2-5 ms with a year of chunks). JIT is off: the planner's
-- guess for a year of chunks made it compile for about 200 ms a query that runs in 2 ms.
-- Every function here is STABLE, so all its statements read the caller's one snapshot: a queued
-- period and the rollups it leaves stale are seen together, or neither (the engine deletes the
-- queued row and writes the new rollups in one transaction; ingest writes points and their
-- dirty range in one transaction; intake moves a dirty range into the rollup queue in one).

-- The local hours of a stream whose rollups are stale: every period in cluster.rollup_work, and
-- for a raw stream every range ingest recorded in cluster.dirty_ranges that the engine has not
-- taken in yet, widened to whole local hours as cluster.rollup_recompute widens them (a null
-- bound: unbounded). Null when nothing is pending: the materialised rollups are the answer.
-- A processed stream's pending hours are those whose processed points the engine rewrote; a
-- raw range not yet processed has not changed any processed point, so it leaves the processed
-- stream's hours as they are (they answer what the processed points say, docs/api.md).
CREATE OR REPLACE FUNCTION cluster.rollup_pending(p_stream_id bigint)
RETURNS tstzmultirange LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_pending tstzmultirange;
BEGIN
    -- Widened as cluster.rollup_recompute widens them: to the whole local hours of every point
    -- they hold, each in its zone (cluster.whole_hours; a null bound stays unbounded).
    SELECT range_agg(cluster.whole_hours(
               s.feed_id, tstzrange(q.lo, q.hi + interval '1 microsecond')))
      INTO v_pending
      -- An exclusive upper bound (a recomputed period of 90 s buckets) does not reach into the
      -- hour it ends at: its last changed point is a microsecond earlier at the latest.
      FROM (SELECT nullif(lower(span), '-infinity') AS lo,
                   nullif(upper(span), 'infinity')
                       - CASE WHEN upper_inc(span) THEN interval '0' ELSE interval '1 microsecond'
                         END AS hi
              FROM cluster.rollup_work WHERE stream_id = p_stream_id
            UNION ALL
            SELECT ts_from, ts_to FROM cluster.dirty_ranges WHERE stream_id = p_stream_id) q
      JOIN cluster.streams s ON s.id = p_stream_id;
    RETURN v_pending;
END $$;
COMMENT ON FUNCTION cluster.rollup_pending(bigint) IS
    'The local hours of a stream whose rollups are not yet recomputed (queued rollup work, ingest''s ranges not yet taken in); null when none.';

-- "Are this stream's rollups pending?", asked once here: a stream with a row has work the engine
-- has not done (queued rollup work, or ingest's ranges not yet taken in), so its readers (the
-- data API's buckets, billing's reading of a period, the baseload) read its hours and days in
-- real time (cluster.realtime_hours, realtime_days), and every other stream's straight from
-- the rollups. A view, not a function, so that each reader's
-- `EXISTS (SELECT FROM cluster.stale_rollups s WHERE s.stream_id = ...)` is planned inline as
-- the two index probes it was written as before (a SQL function holding EXISTS is never
-- inlined: it would be planned again at every call). Its rows say nothing of which hours:
-- cluster.rollup_pending does.
CREATE OR REPLACE VIEW cluster.stale_rollups AS
    SELECT w.stream_id FROM cluster.rollup_work w
    UNION ALL
    SELECT d.stream_id FROM cluster.dirty_ranges d;
COMMENT ON VIEW cluster.stale_rollups IS
    'A row per piece of work the engine has not done for a stream (queued rollup work, ingest''s ranges not yet taken in): a stream with one has stale rollups, read in real time.';

-- The hours (start in [p_from, p_to]) of a stream with the given pending hours: materialised
-- hours outside them, and the pending ones summed from the points (both tiers,
-- cluster.stream_points) exactly as cluster.rollup_recompute sums them. An hour is summed
-- from the points when it lies whole in a pending window, as every hour holding a pending
-- point does; an hour of another zone that a window holds in part is the materialised one, as
-- cluster.rollup_recompute leaves it.
CREATE OR REPLACE FUNCTION cluster.hours_with_pending(
    p_stream_id bigint, p_feed_id bigint, p_pending tstzmultirange,
    p_from timestamptz, p_to timestamptz
) RETURNS TABLE (hour timestamptz, total double precision, points bigint)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    w tstzrange;
    v_timezone text;
    v_shift bigint;
BEGIN
    RETURN QUERY
        SELECT r.hour, r.total, r.points::bigint FROM cluster.hourly_rollups r
         WHERE r.stream_id = p_stream_id AND r.hour >= p_from AND r.hour <= p_to
           AND NOT p_pending @> tstzrange(r.hour, r.hour + interval '1 hour');
    -- An hour starting at or before p_to ends within an hour after it.
    FOR w IN SELECT unnest(p_pending * tstzmultirange(tstzrange(p_from, p_to + interval '1 hour')))
    LOOP
        -- Mostly one zone holds the whole window: no join per point then.
        SELECT CASE WHEN count(*) = 1 AND bool_and(validity @> w) THEN min(timezone)
                    WHEN count(*) = 0 THEN 'UTC' END
          INTO v_timezone
          FROM cluster.feed_configs WHERE feed_id = p_feed_id AND validity && w;
        -- Where the zone's offset modulo an hour is the same at every hour of a window of at
        -- most a month (every zone whose clocks move by whole hours), each local hour starts
        -- at that minute of a UTC hour: the key is a time_bucket with that shift, the very
        -- instant cluster.local_hour gives, without converting each point to local time
        -- (which took most of the time of a queued day's 960 points).
        v_shift := NULL;
        IF v_timezone IS NOT NULL AND NOT isempty(w) AND NOT lower_inf(w) AND NOT upper_inf(w)
           AND upper(w) - lower(w) <= interval '31 days' THEN
            SELECT CASE WHEN count(DISTINCT o) = 1 THEN min(o) END INTO v_shift
              FROM (SELECT mod(mod((extract(epoch FROM h AT TIME ZONE v_timezone)
                                    - extract(epoch FROM h))::bigint, 3600) + 3600, 3600) AS o
                      FROM generate_series(lower(w), upper(w), interval '1 hour') h) x;
        END IF;
        IF v_shift IS NOT NULL THEN
            RETURN QUERY EXECUTE $q$
                SELECT h.hour, h.total, h.points
                  FROM (SELECT time_bucket('1 hour', p.ts, $4) AS hour,
                               sum(p.value) AS total, count(*) AS points
                          FROM cluster.stream_points($1, $2, $3) p
                         GROUP BY 1) h
                 WHERE h.hour >= $5 AND h.hour <= $6
                   AND $7 @> tstzrange(h.hour, h.hour + interval '1 hour')$q$
                USING p_stream_id, lower(w), upper(w),
                      make_interval(secs => mod(3600 - v_shift, 3600)), p_from, p_to, w;
            CONTINUE;
        END IF;
        IF v_timezone IS NOT NULL THEN
            RETURN QUERY EXECUTE $q$
                SELECT h.hour, h.total, h.points
                  FROM (SELECT cluster.local_hour(p.ts, $4) AS hour,
                               sum(p.value) AS total, count(*) AS points
                          FROM cluster.stream_points($1, $2, $3) p
                         GROUP BY 1) h
                 WHERE h.hour >= $5 AND h.hour <= $6
                   AND $7 @> tstzrange(h.hour, h.hour + interval '1 hour')$q$
                USING p_stream_id, lower(w), upper(w), v_timezone, p_from, p_to, w;
            CONTINUE;
        END IF;
        RETURN QUERY EXECUTE $q$
            SELECT h.hour, h.total, h.points
              FROM (SELECT cluster.local_hour(p.ts, coalesce(z.timezone, 'UTC')) AS hour,
                           sum(p.value) AS total, count(*) AS points
                      FROM cluster.stream_points($1, $2, $3) p
                      LEFT JOIN cluster.feed_configs z ON z.feed_id = $4 AND z.validity @> p.ts
                     GROUP BY 1) h
             WHERE h.hour >= $5 AND h.hour <= $6
               AND $7 @> tstzrange(h.hour, h.hour + interval '1 hour')$q$
            USING p_stream_id, lower(w), upper(w), p_feed_id, p_from, p_to, w;
    END LOOP;
END $$;
COMMENT ON FUNCTION cluster.hours_with_pending(bigint, bigint, tstzmultirange, timestamptz, timestamptz) IS
    'A stream''s hourly rollups (start in [p_from, p_to]) with the given pending hours summed from its points; the part cluster.realtime_hours and cluster.realtime_days share.';

-- A stream's hours whose start lies in [p_from, p_to], as the engine will have them once it
-- caught up.
CREATE OR REPLACE FUNCTION cluster.realtime_hours(
    p_stream_id bigint, p_from timestamptz, p_to timestamptz
) RETURNS TABLE (hour timestamptz, total double precision, points bigint)
LANGUAGE plpgsql STABLE SET jit = off SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_pending tstzmultirange := cluster.rollup_pending(p_stream_id);
BEGIN
    IF v_pending IS NULL THEN
        RETURN QUERY
            SELECT r.hour, r.total, r.points::bigint FROM cluster.hourly_rollups r
             WHERE r.stream_id = p_stream_id AND r.hour >= p_from AND r.hour <= p_to;
        RETURN;
    END IF;
    RETURN QUERY
        SELECT h.hour, h.total, h.points
          FROM cluster.streams s
         CROSS JOIN LATERAL cluster.hours_with_pending(s.id, s.feed_id, v_pending, p_from, p_to) h
         WHERE s.id = p_stream_id;
END $$;
COMMENT ON FUNCTION cluster.realtime_hours(bigint, timestamptz, timestamptz) IS
    'A stream''s hourly rollups (hour start in [p_from, p_to]) with the hours not yet recomputed answered from its points: what the engine will materialise.';

-- A stream's local days whose start lies in [p_from, p_to], likewise: the materialised days
-- no pending hour falls on, and the others made from their hours exactly as
-- cluster.rollup_days makes them (an hour belongs to the local date it starts on; a day's start
-- and zone are its first hour's).
CREATE OR REPLACE FUNCTION cluster.realtime_days(
    p_stream_id bigint, p_from timestamptz, p_to timestamptz
) RETURNS TABLE (day date, start timestamptz, timezone text, total double precision,
                 points bigint)
LANGUAGE plpgsql STABLE SET jit = off SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_pending tstzmultirange := cluster.rollup_pending(p_stream_id);
    v_feed_id bigint;
    v_dates datemultirange;
BEGIN
    IF v_pending IS NOT NULL THEN
        SELECT feed_id INTO v_feed_id FROM cluster.streams WHERE id = p_stream_id;
        -- The local dates of the pending hours near the asked days (a day lasts at most 25
        -- hours; a day of margin either side keeps every asked day's hours).
        SELECT range_agg(daterange((lower(w) AT TIME ZONE coalesce(zl.timezone, 'UTC'))::date,
                                   ((upper(w) - interval '1 microsecond')
                                       AT TIME ZONE coalesce(zh.timezone, 'UTC'))::date, '[]'))
          INTO v_dates
          FROM unnest(v_pending * tstzmultirange(
                   tstzrange(p_from - interval '1 day', p_to + interval '2 days'))) w
          LEFT JOIN cluster.feed_configs zl ON zl.feed_id = v_feed_id AND zl.validity @> lower(w)
          LEFT JOIN cluster.feed_configs zh
            ON zh.feed_id = v_feed_id AND zh.validity @> upper(w) - interval '1 microsecond';
    END IF;
    IF v_dates IS NULL THEN
        RETURN QUERY
            SELECT d.day, d.start, d.timezone, d.total, d.points FROM cluster.daily_rollups d
             WHERE d.stream_id = p_stream_id AND d.start >= p_from AND d.start <= p_to;
        RETURN;
    END IF;
    RETURN QUERY
        SELECT d.day, d.start, d.timezone, d.total, d.points FROM cluster.daily_rollups d
         WHERE d.stream_id = p_stream_id AND d.start >= p_from AND d.start <= p_to
           AND NOT v_dates @> d.day
        UNION ALL
        SELECT g.day, g.day::timestamp AT TIME ZONE g.tz, g.tz, g.total, g.points
          FROM (SELECT (h.hour AT TIME ZONE coalesce(z.timezone, 'UTC'))::date AS day,
                       (array_agg(coalesce(z.timezone, 'UTC') ORDER BY h.hour))[1] AS tz,
                       sum(h.total ORDER BY h.hour) AS total, sum(h.points)::bigint AS points
                  -- Two days of margin in UTC hold every local date's hours in any zone.
                  FROM cluster.hours_with_pending(
                           p_stream_id, v_feed_id, v_pending,
                           lower(v_dates)::timestamp AT TIME ZONE 'UTC' - interval '2 days',
                           upper(v_dates)::timestamp AT TIME ZONE 'UTC' + interval '2 days') h
                  LEFT JOIN cluster.feed_configs z
                    ON z.feed_id = v_feed_id AND z.validity @> h.hour
                 WHERE v_dates @> (h.hour AT TIME ZONE coalesce(z.timezone, 'UTC'))::date
                 GROUP BY 1) g
         WHERE g.day::timestamp AT TIME ZONE g.tz >= p_from
           AND g.day::timestamp AT TIME ZONE g.tz <= p_to;
END $$;
COMMENT ON FUNCTION cluster.realtime_days(bigint, timestamptz, timestamptz) IS
    'A stream''s daily rollups (day start in [p_from, p_to]) with the days holding hours not yet recomputed made from their points: what the engine will materialise.';

-- A stream's UTC days among [p_from, p_to] whose quarter hours (cluster.quarter_days) the
-- engine has yet to recompute, as it will have them once it caught up: each day its pending
-- hours touch, with those quarters (widened to whole quarters, as cluster.rollup_quarters
-- widens its periods) summed from the points into the stored day (cluster.quarter_array, the
-- engine's own merge); totals null where no quarter of the day is left. Every other day of the
-- stream is as stored. What-if's reading of a household's quarters
-- (sql/functions/98_billing_what_if.sql); a stream with no work queued has no row.
CREATE OR REPLACE FUNCTION cluster.pending_quarter_days(
    p_stream_id bigint, p_from date, p_to date
) RETURNS TABLE (day date, totals double precision[])
LANGUAGE plpgsql STABLE ROWS 2 SET jit = off SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
DECLARE
    v_pending tstzmultirange := cluster.rollup_pending(p_stream_id);
    v_starts timestamptz[] := '{}';
    v_totals double precision[] := '{}';
    w tstzrange;
BEGIN
    IF v_pending IS NULL THEN
        RETURN;
    END IF;
    SELECT range_agg(tstzrange(time_bucket('15 minutes', lower(x.r)),
                               time_bucket('15 minutes', upper(x.r) - interval '1 microsecond')
                                   + interval '15 minutes'))
      INTO v_pending
      FROM unnest(v_pending * tstzmultirange(tstzrange(
               p_from::timestamp AT TIME ZONE 'UTC',
               (p_to + 1)::timestamp AT TIME ZONE 'UTC'))) x (r);
    IF v_pending IS NULL OR isempty(v_pending) THEN
        RETURN;
    END IF;
    -- The points of each pending window, planned for its bounds (chunks excluded while
    -- planning), as cluster.hours_with_pending reads them.
    FOR w IN SELECT unnest(v_pending) LOOP
        EXECUTE $q$
            SELECT $4 || array_agg(q.start ORDER BY q.start), $5 || array_agg(q.total ORDER BY q.start)
              FROM (SELECT time_bucket('15 minutes', p.ts) AS start, sum(p.value) AS total
                      FROM cluster.stream_points($1, $2, $3) p
                     GROUP BY 1) q$q$
            INTO v_starts, v_totals
            USING p_stream_id, lower(w), upper(w), v_starts, v_totals;
    END LOOP;
    RETURN QUERY
        SELECT c.day, cluster.quarter_array(q.totals, c.numbers, s.numbers, s.totals)
          FROM (SELECT (g AT TIME ZONE 'UTC')::date AS day,
                       array_agg(cluster.quarter_number(g)) AS numbers
                  FROM unnest(v_pending) AS x (r)
                 CROSS JOIN LATERAL generate_series(lower(x.r), upper(x.r) - interval '15 minutes',
                                                    interval '15 minutes') AS g
                 GROUP BY 1) c
          LEFT JOIN cluster.quarter_days q ON q.stream_id = p_stream_id AND q.day = c.day
          LEFT JOIN (SELECT (u.start AT TIME ZONE 'UTC')::date AS day,
                            array_agg(cluster.quarter_number(u.start)) AS numbers,
                            array_agg(u.total) AS totals
                       FROM unnest(v_starts, v_totals) AS u (start, total)
                      GROUP BY 1) s ON s.day = c.day
         WHERE c.day >= p_from AND c.day <= p_to;
END $$;
COMMENT ON FUNCTION cluster.pending_quarter_days(bigint, date, date) IS
    'A quarter-rolled stream''s UTC days in [p_from, p_to] with quarters not yet recomputed, their quarter sums (cluster.quarter_days; null: none left) answered from its points: what the engine will materialise. Other days are as stored.';
