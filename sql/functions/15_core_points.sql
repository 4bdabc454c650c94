-- Reading points from both tiers: the row tier (raw_points, processed_points, system_points, one
-- row per point) and the compact tier (point_days, one row per stream and UTC day). Every reader
-- of point values goes through these functions or the *_readings views, so none needs to know
-- which tier holds a day (docs/schema.md#tiers).
-- Re-applied by every `migrate`, after the numbered migrations: the one current definition.

-- 10^scale as a float8, exactly (scale 0 to 6): the divisor of the decimal codec.
CREATE OR REPLACE FUNCTION cluster.decimal_divisor(p_scale smallint)
RETURNS double precision LANGUAGE sql IMMUTABLE AS $$
    SELECT ('{1,10,100,1000,10000,100000,1000000}'::float8[])[p_scale + 1]
$$;
COMMENT ON FUNCTION cluster.decimal_divisor(smallint) IS
    'The decimal codec''s divisor 10^scale (scale 0 to 6), exact as a float8.';

-- Whether v comes back to the bit as round(v * 10^scale) (an integer) divided by 10^scale, the
-- way cluster.unpack decodes it. False for -0.0 (the integer has no sign), NaN, infinities and
-- magnitudes whose scaled integer would reach 2^52. For a finite value other than zero, float8
-- equality is equality of the bits; a zero is checked by its bits (0.0 and -0.0 are equal).
CREATE OR REPLACE FUNCTION cluster.decimal_fits(v double precision, p_scale smallint)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN abs(v) < 4503599627370496 / cluster.decimal_divisor(p_scale)
                THEN round(v * cluster.decimal_divisor(p_scale))::bigint::float8
                     / cluster.decimal_divisor(p_scale) = v
                     AND (v <> 0 OR float8send(v) = '\x0000000000000000'::bytea)
                ELSE false END
$$;
COMMENT ON FUNCTION cluster.decimal_fits(double precision, smallint) IS
    'True when the value is exactly an integer divided by 10^scale, as the decimal codec stores it.';

-- The fewest decimal digits (0 to 6) with which v fits the decimal codec; null: none does.
CREATE OR REPLACE FUNCTION cluster.decimal_digits(v double precision)
RETURNS smallint LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN cluster.decimal_fits(v, 0::smallint) THEN 0
                WHEN cluster.decimal_fits(v, 1::smallint) THEN 1
                WHEN cluster.decimal_fits(v, 2::smallint) THEN 2
                WHEN cluster.decimal_fits(v, 3::smallint) THEN 3
                WHEN cluster.decimal_fits(v, 4::smallint) THEN 4
                WHEN cluster.decimal_fits(v, 5::smallint) THEN 5
                WHEN cluster.decimal_fits(v, 6::smallint) THEN 6 END::smallint
$$;
COMMENT ON FUNCTION cluster.decimal_digits(double precision) IS
    'The fewest decimal digits (0 to 6) that hold the value exactly in the decimal codec; null when none do.';

-- v (whose own digits are p_digits) as an integer at p_scale >= p_digits digits: its integer
-- at its own digits times 10^(p_scale - p_digits), the same rational number, so the decoder's
-- division gives v back. The caller keeps the result below 2^52.
CREATE OR REPLACE FUNCTION cluster.decimal_scaled(v double precision, p_digits smallint,
                                                  p_scale smallint)
RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
    SELECT round(v * cluster.decimal_divisor(p_digits))::bigint
           * (cluster.decimal_divisor(p_scale) / cluster.decimal_divisor(p_digits))::bigint
$$;
COMMENT ON FUNCTION cluster.decimal_scaled(double precision, smallint, smallint) IS
    'A value of p_digits decimal digits as an integer at p_scale digits (the decimal codec).';

-- The points of one compact row, in order: n from 1, its time and its value. The one decoder of
-- the compact form (docs/schema.md#codec): times from the grid (cluster.point_days.offsets_us
-- says how), exact since the microsecond count is an integer below 2^53, which a float8 holds;
-- values either the float8 array as stored (scale null) or, on the decimal path, the running
-- sum of the differences (a byte each, or the wide one at that position) from the base, as a
-- float8 divided by 10^scale: the very operation cluster.decimal_fits checked when the day
-- was encoded (the same rational number at more digits divides to the same float8), so the
-- value is the stored one to the bit. Each branch unnests nothing unless
-- the row is of its form.
CREATE OR REPLACE FUNCTION cluster.unpack(
    p_first_ts timestamptz, p_step_us bigint, p_offsets_us bigint[], p_vals double precision[],
    p_scale smallint, p_base bigint, p_deltas "char"[], p_wide_at integer[], p_wide integer[]
) RETURNS TABLE (n bigint, ts timestamptz, value double precision) LANGUAGE sql STABLE AS $$
    SELECT u.n, p_first_ts + ((u.n - 1) * p_step_us + u.o)::float8 * interval '1 microsecond', u.v
      FROM unnest(CASE WHEN p_scale IS NULL THEN p_offsets_us END, p_vals)
           WITH ORDINALITY AS u (o, v, n)
    UNION ALL
    SELECT x.n, p_first_ts + ((x.n - 1) * p_step_us + x.o)::float8 * interval '1 microsecond',
           (p_base + sum(coalesce(w.d, x.c::integer)) OVER (ORDER BY x.n ROWS UNBOUNDED PRECEDING))::float8
           / cluster.decimal_divisor(p_scale)
      FROM unnest(CASE WHEN p_scale IS NOT NULL THEN p_offsets_us END, p_deltas)
           WITH ORDINALITY AS x (o, c, n)
      LEFT JOIN unnest(p_wide_at, p_wide) AS w (at, d) ON w.at = x.n
$$;
COMMENT ON FUNCTION cluster.unpack(timestamptz, bigint, bigint[], double precision[], smallint, bigint, "char"[], integer[], integer[]) IS
    'The points (position, time, value) of one compact row of cluster.point_days: unpack(first_ts, step_us, offsets_us, vals, scale, base, deltas, wide_at, wide).';

-- No point at or after this instant is in the compact tier: the compaction takes only whole
-- UTC days that ended at least EP_COMPACTION_AFTER_DAYS (>= 2) days ago, and a write into a day
-- that ended at least a day ago moves it back to the row tier first (cluster.thaw_days, which
-- judges by the same bound). The compact tier's readers below skip it for a window from here
-- on: a condition on their parameters alone, tested once per call before any chunk is opened.
-- Without it, every live read and neighbour probe of every stream paid for each chunk of
-- cluster.point_days, whose first chunk one homebase with its clock in 2000 made (issue 59).
CREATE OR REPLACE FUNCTION cluster.compact_horizon() RETURNS timestamptz
LANGUAGE sql STABLE PARALLEL SAFE AS $$ SELECT now() - interval '1 day' $$;
COMMENT ON FUNCTION cluster.compact_horizon() IS
    'No point at or after this instant (now() - 1 day) is in the compact tier: the compaction takes days that ended at least 2 days ago, and writes into a day that ended over a day ago thaw it first.';

-- The points of one stream in the compact tier within [p_from, p_to). Only the days that
-- overlap the range are read (primary key), and only their arrays are decompressed; a range
-- from the compact horizon on reads nothing (cluster.compact_horizon).
CREATE OR REPLACE FUNCTION cluster.compact_points(p_stream_id bigint, p_from timestamptz, p_to timestamptz)
RETURNS TABLE (ts timestamptz, value double precision) LANGUAGE sql STABLE AS $$
    SELECT x.ts, x.value
      FROM cluster.point_days d
     CROSS JOIN LATERAL cluster.unpack(d.first_ts, d.step_us, d.offsets_us, d.vals, d.scale,
                                       d.base, d.deltas, d.wide_at, d.wide) x
     WHERE d.stream_id = p_stream_id
       AND d.day >= (p_from AT TIME ZONE 'UTC')::date AND d.day <= (p_to AT TIME ZONE 'UTC')::date
       AND d.last_ts >= p_from AND d.first_ts < p_to
       AND x.ts >= p_from AND x.ts < p_to
       AND p_from < cluster.compact_horizon()
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

-- A stream's neighbours of a period, in either tier: the time of its last point before p_from
-- and of its first point at or after p_to (null: none). In the compact tier the latest day
-- starting before p_from holds the one, the first day ending at or after p_to the other (none
-- from the compact horizon on: cluster.compact_horizon). A
-- table function of one SELECT, so that the planner inlines it into the statement that uses it
-- (LATERAL): called per row as a function, the same probes took three times as long.
CREATE OR REPLACE FUNCTION cluster.point_neighbours(p_stream_id bigint, p_from timestamptz, p_to timestamptz)
RETURNS TABLE (before timestamptz, after timestamptz) LANGUAGE sql STABLE AS $$
    SELECT greatest(
        (SELECT max(ts) FROM cluster.raw_points WHERE stream_id = p_stream_id AND ts < p_from),
        (SELECT max(ts) FROM cluster.processed_points WHERE stream_id = p_stream_id AND ts < p_from),
        (SELECT max(ts) FROM cluster.system_points WHERE stream_id = p_stream_id AND ts < p_from),
        (SELECT CASE WHEN d.last_ts < p_from THEN d.last_ts
                     ELSE (SELECT max(c.ts) FROM cluster.compact_points(p_stream_id, d.first_ts, p_from) c) END
           FROM cluster.point_days d
          WHERE d.stream_id = p_stream_id AND d.day <= (p_from AT TIME ZONE 'UTC')::date
            AND d.first_ts < p_from
          ORDER BY d.day DESC LIMIT 1)),
    least(
        (SELECT min(ts) FROM cluster.raw_points WHERE stream_id = p_stream_id AND ts >= p_to),
        (SELECT min(ts) FROM cluster.processed_points WHERE stream_id = p_stream_id AND ts >= p_to),
        (SELECT min(ts) FROM cluster.system_points WHERE stream_id = p_stream_id AND ts >= p_to),
        (SELECT CASE WHEN d.first_ts >= p_to THEN d.first_ts
                     ELSE (SELECT min(c.ts) FROM cluster.compact_points(
                               p_stream_id, p_to, d.last_ts + interval '1 microsecond') c) END
           FROM cluster.point_days d
          WHERE d.stream_id = p_stream_id AND d.day >= (p_to AT TIME ZONE 'UTC')::date
            AND d.last_ts >= p_to AND p_to < cluster.compact_horizon()
          ORDER BY d.day LIMIT 1))
$$;
COMMENT ON FUNCTION cluster.point_neighbours(bigint, timestamptz, timestamptz) IS
    'The time of a stream''s last point before p_from and of its first point at or after p_to, in either tier; null when there is none.';

CREATE OR REPLACE FUNCTION cluster.point_before(p_stream_id bigint, p_ts timestamptz)
RETURNS timestamptz LANGUAGE sql STABLE AS $$
    SELECT before FROM cluster.point_neighbours(p_stream_id, p_ts, 'infinity')
$$;
COMMENT ON FUNCTION cluster.point_before(bigint, timestamptz) IS
    'The time of a stream''s last point before p_ts, in either tier; null when there is none.';

CREATE OR REPLACE FUNCTION cluster.point_from(p_stream_id bigint, p_ts timestamptz)
RETURNS timestamptz LANGUAGE sql STABLE AS $$
    SELECT after FROM cluster.point_neighbours(p_stream_id, '-infinity', p_ts)
$$;
COMMENT ON FUNCTION cluster.point_from(bigint, timestamptz) IS
    'The time of a stream''s first point at or after p_ts, in either tier; null when there is none.';

-- What a write queues for the engine and the rollups: per stream, one range per UTC day that
-- holds written points, from the day's first to its last. One range over everything a batch
-- wrote made a point from 2000 beside one from now cost the 26 years between: the engine walked
-- them, thawed every compacted day of the channel and recomputed its whole history's rollups.
-- The one definition for ingest (devices/ingest/store.py) and for history's imports, removals
-- and undo (17_history.sql). Rows in no order; a day of one stream is one row.
CREATE OR REPLACE FUNCTION cluster.day_ranges(p_streams bigint[], p_ts timestamptz[])
RETURNS TABLE (stream_id bigint, ts_from timestamptz, ts_to timestamptz)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT u.s, min(u.t), max(u.t)
      FROM unnest(p_streams, p_ts) AS u (s, t)
     GROUP BY u.s, (u.t AT TIME ZONE 'UTC')::date
$$;
COMMENT ON FUNCTION cluster.day_ranges(bigint[], timestamptz[]) IS
    'Per stream and UTC day holding the given points (p_streams[i] at p_ts[i]), the first and last point time: what a write queues for the engine and the rollups.';

-- A quarter hour's number in its UTC day (1 to 96), as cluster.quarter_days and
-- cluster.price_days index them: the one rule their writers and what-if number quarters by.
-- STABLE as date_part on a timestamptz is: declared IMMUTABLE, the planner would not inline
-- it, and a call would cost 30 us instead of nothing.
CREATE OR REPLACE FUNCTION cluster.quarter_number(p_start timestamptz) RETURNS integer
LANGUAGE sql STABLE PARALLEL SAFE
RETURN (date_part('epoch', p_start)::bigint % 86400 / 900 + 1)::integer;
COMMENT ON FUNCTION cluster.quarter_number(timestamptz) IS
    'The number (1 to 96) of the quarter hour starting at p_start in its UTC day.';
