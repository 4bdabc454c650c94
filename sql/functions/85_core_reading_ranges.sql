-- The analysts' points over a time range: one set-returning function per view of points, of the
-- view's name and columns, taking (time_from, time_to), both inclusive like the data endpoint's
-- (docs/schema.md#time-ranges). A filter on ts cannot reach inside the compact tier's arrays (that
-- needs the Community edition's custom scan), so the views unpack every compacted day whatever
-- the filter; these read only the row-tier chunks and the compacted days of the range.
-- The views of 90_core_views.sql are these functions over all time: one definition of each join.
-- The functions are plain SQL, STABLE and not STRICT, so PostgreSQL inlines them into the
-- query that calls them, and its filters (feed_id = ..., stream_id = ...) reach the tables.
-- Columns are spelled out rather than taken from the views, which are dropped and made again
-- on every migrate; a change of columns needs DROP FUNCTION ... CASCADE in a new numbered
-- migration, which runs before this file (as 0017 did; 90_core_views.sql then makes the views again).
-- Re-applied by every `migrate`, after the numbered migrations: the one current definition.

-- Each function goes stream by stream: the streams the caller's filters leave (feed_id = ...,
-- stream_id = ..., or all of them), then each one's points in the range: primary-key probes
-- into the row-tier chunks of the range, and the compacted days of the range only
-- (cluster.compact_points, half-open). A hash join of all streams' points of the range would read
-- every feed's rows to keep one feed's. The upper bound is inclusive: a time has whole
-- microseconds, so ts <= time_to is ts < time_to + 1 microsecond (infinity stays infinity).

CREATE OR REPLACE FUNCTION cluster.raw_readings(time_from timestamptz, time_to timestamptz)
RETURNS TABLE (ts timestamptz, value double precision, feed_id bigint, homebase_sn text,
               feed_title text, timezone text, stream_id bigint, channel integer,
               device integer, medium_id integer, index integer)
LANGUAGE sql STABLE AS $$
    SELECT p.ts, p.value, f.id, f.homebase_sn, fc.title, fc.timezone,
           s.id, s.channel, s.device, s.medium, s.idx
      FROM cluster.streams s
      JOIN cluster.feeds f ON f.id = s.feed_id
     CROSS JOIN LATERAL (
           SELECT r.ts, r.value FROM cluster.raw_points r
            WHERE r.stream_id = s.id AND r.ts >= time_from AND r.ts <= time_to
           UNION ALL
           SELECT c.ts, c.value
             FROM cluster.compact_points(s.id, time_from, time_to + interval '1 microsecond') c) p
      LEFT JOIN cluster.feed_configs fc ON fc.feed_id = f.id AND fc.validity @> p.ts
     WHERE s.type = 'raw'
$$;
COMMENT ON FUNCTION cluster.raw_readings(timestamptz, timestamptz) IS
    'cluster.raw_readings within [time_from, time_to] (both inclusive), reading only that range of both tiers.';

CREATE OR REPLACE FUNCTION cluster.processed_readings(time_from timestamptz, time_to timestamptz)
RETURNS TABLE (ts timestamptz, value double precision, feed_id bigint, homebase_sn text,
               feed_title text, timezone text, stream_id bigint, channel integer,
               index integer, register integer, combined boolean, quantity text,
               stream_title text, medium text, unit text)
LANGUAGE sql STABLE AS $$
    SELECT p.ts, p.value, f.id, f.homebase_sn, fc.title, fc.timezone,
           s.id, s.channel, s.idx, s.register, s.combined, s.quantity, sc.title, sc.medium, sc.unit
      FROM cluster.streams s
      JOIN cluster.feeds f ON f.id = s.feed_id
     CROSS JOIN LATERAL (
           SELECT r.ts, r.value FROM cluster.processed_points r
            WHERE r.stream_id = s.id AND r.ts >= time_from AND r.ts <= time_to
           UNION ALL
           SELECT c.ts, c.value
             FROM cluster.compact_points(s.id, time_from, time_to + interval '1 microsecond') c) p
      LEFT JOIN cluster.feed_configs fc ON fc.feed_id = f.id AND fc.validity @> p.ts
      LEFT JOIN cluster.stream_configs sc ON sc.stream_id = s.id AND sc.validity @> p.ts
     WHERE s.type = 'processed'
$$;
COMMENT ON FUNCTION cluster.processed_readings(timestamptz, timestamptz) IS
    'cluster.processed_readings within [time_from, time_to] (both inclusive), reading only that range of both tiers.';

CREATE OR REPLACE FUNCTION cluster.system_readings(time_from timestamptz, time_to timestamptz)
RETURNS TABLE (ts timestamptz, value double precision, feed_id bigint, homebase_sn text,
               feed_title text, timezone text, stream_id bigint, channel integer,
               device integer, source text, index integer)
LANGUAGE sql STABLE AS $$
    SELECT p.ts, p.value, f.id, f.homebase_sn, fc.title, fc.timezone,
           s.id, s.channel, s.device, s.source, s.idx
      FROM cluster.streams s
      JOIN cluster.feeds f ON f.id = s.feed_id
     CROSS JOIN LATERAL (
           SELECT r.ts, r.value FROM cluster.system_points r
            WHERE r.stream_id = s.id AND r.ts >= time_from AND r.ts <= time_to
           UNION ALL
           SELECT c.ts, c.value
             FROM cluster.compact_points(s.id, time_from, time_to + interval '1 microsecond') c) p
      LEFT JOIN cluster.feed_configs fc ON fc.feed_id = f.id AND fc.validity @> p.ts
     WHERE s.type = 'system'
$$;
COMMENT ON FUNCTION cluster.system_readings(timestamptz, timestamptz) IS
    'cluster.system_readings within [time_from, time_to] (both inclusive), reading only that range of both tiers.';

-- All three types in one pass over the streams (a union of the three functions above costs
-- several times their planning, which is most of a short query's time); the columns as
-- cluster.raw_readings, cluster.processed_readings and cluster.system_readings give them
-- (register and quantity: null for raw and system streams).
CREATE OR REPLACE FUNCTION cluster.readings(time_from timestamptz, time_to timestamptz)
RETURNS TABLE (ts timestamptz, value double precision, feed_id bigint, homebase_sn text,
               feed_title text, timezone text, stream_id bigint, stream_type text,
               channel integer, index integer, register integer, quantity text, medium text,
               stream_title text, unit text)
LANGUAGE sql STABLE AS $$
    SELECT p.ts, p.value, f.id, f.homebase_sn, fc.title, fc.timezone, s.id, s.type,
           s.channel, s.idx, s.register, s.quantity,
           CASE s.type WHEN 'raw' THEN s.medium::text WHEN 'processed' THEN sc.medium
                       ELSE s.source END,
           sc.title, sc.unit
      FROM cluster.streams s
      JOIN cluster.feeds f ON f.id = s.feed_id
     CROSS JOIN LATERAL cluster.stream_points(s.id, time_from, time_to + interval '1 microsecond') p
      LEFT JOIN cluster.feed_configs fc ON fc.feed_id = f.id AND fc.validity @> p.ts
      LEFT JOIN cluster.stream_configs sc
             ON s.type = 'processed' AND sc.stream_id = s.id AND sc.validity @> p.ts
$$;
COMMENT ON FUNCTION cluster.readings(timestamptz, timestamptz) IS
    'cluster.readings within [time_from, time_to] (both inclusive), reading only that range of both tiers.';
