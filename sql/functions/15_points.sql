-- Reading points from both tiers: the row tier (raw_points, processed_points, system_points, one
-- row per point) and the compact tier (point_days, one row per stream and UTC day). Every reader
-- of point values goes through these functions or the *_readings views, so none needs to know
-- which tier holds a day (docs/schema.md#tiers).
-- Re-applied by every `migrate`, after the numbered migrations: the one current definition.

-- The points of one compact row, in order: n from 1, its time and its value. The one decoder of
-- the compact form (cluster.point_days.offsets_us says how); exact, since the microsecond count
-- is an integer below 2^53, which a float8 holds.
CREATE OR REPLACE FUNCTION cluster.unpack(
    p_first_ts timestamptz, p_step_us bigint, p_offsets_us bigint[], p_vals double precision[]
) RETURNS TABLE (n bigint, ts timestamptz, value double precision) LANGUAGE sql STABLE AS $$
    SELECT u.n, p_first_ts + ((u.n - 1) * p_step_us + u.o)::float8 * interval '1 microsecond', u.v
      FROM unnest(p_offsets_us, p_vals) WITH ORDINALITY AS u (o, v, n)
$$;
COMMENT ON FUNCTION cluster.unpack(timestamptz, bigint, bigint[], double precision[]) IS
    'The points (position, time, value) of one compact row of cluster.point_days.';

-- The points of one stream in the compact tier within [p_from, p_to). Only the days that
-- overlap the range are read (primary key), and only their arrays are decompressed.
CREATE OR REPLACE FUNCTION cluster.compact_points(p_stream_id bigint, p_from timestamptz, p_to timestamptz)
RETURNS TABLE (ts timestamptz, value double precision) LANGUAGE sql STABLE AS $$
    SELECT x.ts, x.value
      FROM cluster.point_days d
     CROSS JOIN LATERAL cluster.unpack(d.first_ts, d.step_us, d.offsets_us, d.vals) x
     WHERE d.stream_id = p_stream_id
       AND d.day >= (p_from AT TIME ZONE 'UTC')::date AND d.day <= (p_to AT TIME ZONE 'UTC')::date
       AND d.last_ts >= p_from AND d.first_ts < p_to
       AND x.ts >= p_from AND x.ts < p_to
$$;
COMMENT ON FUNCTION cluster.compact_points(bigint, timestamptz, timestamptz) IS
    'The points of a stream in the compact tier (cluster.point_days) in [p_from, p_to), unordered.';

-- Every point of one stream in [p_from, p_to), whatever its type and tier: stream ids are
-- unique across the point tables, so all but one of the row scans find nothing at once
-- (primary key probes). Unordered; callers order.
CREATE OR REPLACE FUNCTION cluster.stream_points(p_stream_id bigint, p_from timestamptz, p_to timestamptz)
RETURNS TABLE (ts timestamptz, value double precision) LANGUAGE sql STABLE AS $$
    SELECT ts, value FROM cluster.raw_points
     WHERE stream_id = p_stream_id AND ts >= p_from AND ts < p_to
    UNION ALL
    SELECT ts, value FROM cluster.processed_points
     WHERE stream_id = p_stream_id AND ts >= p_from AND ts < p_to
    UNION ALL
    SELECT ts, value FROM cluster.system_points
     WHERE stream_id = p_stream_id AND ts >= p_from AND ts < p_to
    UNION ALL
    SELECT ts, value FROM cluster.compact_points(p_stream_id, p_from, p_to)
$$;
COMMENT ON FUNCTION cluster.stream_points(bigint, timestamptz, timestamptz) IS
    'The points of a raw, processed or system stream in [p_from, p_to), from both tiers, unordered.';

-- The earliest or latest point time of a stream (p_last), or null when it has none.
CREATE OR REPLACE FUNCTION cluster.stream_point_edge(p_stream_id bigint, p_last boolean)
RETURNS timestamptz LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN p_last THEN greatest(
                    (SELECT max(ts) FROM cluster.raw_points WHERE stream_id = p_stream_id),
                    (SELECT max(ts) FROM cluster.processed_points WHERE stream_id = p_stream_id),
                    (SELECT max(ts) FROM cluster.system_points WHERE stream_id = p_stream_id),
                    (SELECT last_ts FROM cluster.point_days WHERE stream_id = p_stream_id
                      ORDER BY day DESC LIMIT 1))
                ELSE least(
                    (SELECT min(ts) FROM cluster.raw_points WHERE stream_id = p_stream_id),
                    (SELECT min(ts) FROM cluster.processed_points WHERE stream_id = p_stream_id),
                    (SELECT min(ts) FROM cluster.system_points WHERE stream_id = p_stream_id),
                    (SELECT first_ts FROM cluster.point_days WHERE stream_id = p_stream_id
                      ORDER BY day LIMIT 1)) END
$$;
COMMENT ON FUNCTION cluster.stream_point_edge(bigint, boolean) IS
    'The first (p_last false) or last point time of a stream of any type, in either tier; null without points.';

-- The time of a stream's last point before p_ts (null: none). In the compact tier the latest
-- day starting before p_ts holds it: its last point, or one inside it.
CREATE OR REPLACE FUNCTION cluster.point_before(p_stream_id bigint, p_ts timestamptz)
RETURNS timestamptz LANGUAGE sql STABLE AS $$
    SELECT greatest(
        (SELECT max(ts) FROM cluster.raw_points WHERE stream_id = p_stream_id AND ts < p_ts),
        (SELECT max(ts) FROM cluster.processed_points WHERE stream_id = p_stream_id AND ts < p_ts),
        (SELECT max(ts) FROM cluster.system_points WHERE stream_id = p_stream_id AND ts < p_ts),
        (SELECT CASE WHEN d.last_ts < p_ts THEN d.last_ts
                     ELSE (SELECT max(c.ts) FROM cluster.compact_points(p_stream_id, d.first_ts, p_ts) c) END
           FROM cluster.point_days d
          WHERE d.stream_id = p_stream_id AND d.day <= (p_ts AT TIME ZONE 'UTC')::date
            AND d.first_ts < p_ts
          ORDER BY d.day DESC LIMIT 1))
$$;
COMMENT ON FUNCTION cluster.point_before(bigint, timestamptz) IS
    'The time of a stream''s last point before p_ts, in either tier; null when there is none.';

-- The time of a stream's first point at or after p_ts (null: none).
CREATE OR REPLACE FUNCTION cluster.point_from(p_stream_id bigint, p_ts timestamptz)
RETURNS timestamptz LANGUAGE sql STABLE AS $$
    SELECT least(
        (SELECT min(ts) FROM cluster.raw_points WHERE stream_id = p_stream_id AND ts >= p_ts),
        (SELECT min(ts) FROM cluster.processed_points WHERE stream_id = p_stream_id AND ts >= p_ts),
        (SELECT min(ts) FROM cluster.system_points WHERE stream_id = p_stream_id AND ts >= p_ts),
        (SELECT CASE WHEN d.first_ts >= p_ts THEN d.first_ts
                     ELSE (SELECT min(c.ts) FROM cluster.compact_points(
                               p_stream_id, p_ts, d.last_ts + interval '1 microsecond') c) END
           FROM cluster.point_days d
          WHERE d.stream_id = p_stream_id AND d.day >= (p_ts AT TIME ZONE 'UTC')::date
            AND d.last_ts >= p_ts
          ORDER BY d.day LIMIT 1))
$$;
COMMENT ON FUNCTION cluster.point_from(bigint, timestamptz) IS
    'The time of a stream''s first point at or after p_ts, in either tier; null when there is none.';
