-- Moving stream-days between the tiers (docs/schema.md#tiers). Both moves run under an advisory
-- lock on the stream (cluster.lock_key('compaction_stream')): compaction takes it exclusively,
-- writers into an old day share it, so a write is either seen by the compaction or lands after
-- the day was moved back.
-- Both are plpgsql (VOLATILE): each statement takes a fresh snapshot, so the statement after
-- the lock sees everything committed before the lock was granted. Their plans are made per call
-- (plan_cache_mode): a cached generic plan of these data-modifying CTEs over hypertables fails
-- in TimescaleDB's planner ("variable not found in subplan target list"), and the chunks to
-- read differ per day anyway.
-- Re-applied by every `migrate`, after the numbered migrations: the one current definition.

-- Moves one stream's points of one UTC day from the row tier into one compact row (merged with
-- a compact row already there, the row tier winning a time held by both), in the caller's
-- transaction; returns the number of points in the compact row (0: the day had none). The row
-- is written with the current codec (docs/schema.md#codec), so calling it on a compacted day
-- alone re-encodes that day.
CREATE OR REPLACE FUNCTION cluster.compact_day(p_stream_id bigint, p_day date)
RETURNS integer LANGUAGE plpgsql SET plan_cache_mode = force_custom_plan AS $$
DECLARE
    v_type text;
    v_lo timestamptz := p_day::timestamp AT TIME ZONE 'UTC';
    v_hi timestamptz := (p_day + 1)::timestamp AT TIME ZONE 'UTC';
    v_points integer;
BEGIN
    PERFORM pg_advisory_xact_lock(cluster.lock_key('compaction_stream')::integer,
                                  (p_stream_id % 2147483648)::integer);
    -- Chunks of the hypertable may not carry the column setting: lz4 for what this writes.
    PERFORM set_config('default_toast_compression', 'lz4', true);
    SELECT type INTO v_type FROM cluster.streams WHERE id = p_stream_id;
    WITH raw AS (
        DELETE FROM cluster.raw_points
         WHERE v_type = 'raw' AND stream_id = p_stream_id AND ts >= v_lo AND ts < v_hi
        RETURNING ts, value
    ), processed AS (
        DELETE FROM cluster.processed_points
         WHERE v_type = 'processed' AND stream_id = p_stream_id AND ts >= v_lo AND ts < v_hi
        RETURNING ts, value
    ), system AS (
        DELETE FROM cluster.system_points
         WHERE v_type = 'system' AND stream_id = p_stream_id AND ts >= v_lo AND ts < v_hi
        RETURNING ts, value
    ), prior AS (
        DELETE FROM cluster.point_days WHERE stream_id = p_stream_id AND day = p_day
        RETURNING first_ts, step_us, offsets_us, vals, scale, base, deltas, wide_at, wide
    ), merged AS (
        SELECT DISTINCT ON (ts) ts, value
          FROM (SELECT ts, value, 0 AS tier FROM raw
                UNION ALL SELECT ts, value, 0 FROM processed
                UNION ALL SELECT ts, value, 0 FROM system
                UNION ALL
                SELECT u.ts, u.value, 1
                  FROM prior p
                 CROSS JOIN LATERAL cluster.unpack(p.first_ts, p.step_us, p.offsets_us, p.vals,
                                                   p.scale, p.base, p.deltas, p.wide_at, p.wide) u) a
         ORDER BY ts, tier
    ), numbered AS (
        -- Each point with its position, the interval from the one before, and its decimal
        -- digits (null: none) and those of the one before. Intervals in microseconds through
        -- float8 seconds (date_part; extract's numeric costs several times more): exact after
        -- rounding for anything within a day, 2^53 microseconds being 285 years.
        SELECT ts, value, k, row_number() OVER w AS n,
               round(date_part('epoch', ts - lag(ts) OVER w) * 1000000)::bigint AS delta,
               lag(value) OVER w AS prev_value, lag(k) OVER w AS prev_k
          FROM (SELECT ts, value, cluster.decimal_digits(value) AS k FROM merged) m
        WINDOW w AS (ORDER BY ts)
    ), grid AS (
        -- The grid of the times; the fewest digits that hold every value (null: the float path).
        SELECT min(ts) AS first_ts, max(ts) AS last_ts, count(*)::integer AS points,
               coalesce(mode() WITHIN GROUP (ORDER BY delta), 0) AS step_us,
               CASE WHEN bool_and(k IS NOT NULL) THEN max(k) END AS scale,
               max(abs(value)) AS top
          FROM numbered
    ), form AS (
        -- The decimal path when every value's integer at that scale stays below 2^52 (exact
        -- sums) and every difference fits an integer; else the float path (scale null).
        SELECT CASE WHEN bool_and(abs(cluster.decimal_scaled(n.value, n.k, g.scale)
                                      - cluster.decimal_scaled(n.prev_value, n.prev_k, g.scale))
                                  < 2147483648 OR n.n = 1)
                    THEN min(g.scale) END AS scale
          FROM numbered n CROSS JOIN grid g
         WHERE g.scale IS NOT NULL AND g.top < 4503599627370496 / cluster.decimal_divisor(g.scale)
    ), scaled AS (
        SELECT n.n, n.ts, n.value, s.i, s.i - coalesce(s.prev_i, s.i) AS d
          FROM numbered n
         CROSS JOIN LATERAL (
               SELECT cluster.decimal_scaled(n.value, n.k, f.scale) AS i,
                      cluster.decimal_scaled(n.prev_value, n.prev_k, f.scale) AS prev_i
                 FROM form f) s
    ), packed AS (
        -- One aggregation, no grouping; each array from the rows of its path only.
        INSERT INTO cluster.point_days (stream_id, day, first_ts, last_ts, points, step_us,
                                        offsets_us, vals, codec, scale, base, deltas, wide_at,
                                        wide)
        SELECT p_stream_id, p_day, (SELECT first_ts FROM grid), (SELECT last_ts FROM grid),
               (SELECT points FROM grid), (SELECT step_us FROM grid),
               array_agg(round(date_part('epoch', x.ts - (SELECT first_ts FROM grid)) * 1000000)::bigint
                         - (x.n - 1) * (SELECT step_us FROM grid) ORDER BY x.n),
               array_agg(x.value ORDER BY x.n) FILTER (WHERE (SELECT scale FROM form) IS NULL),
               2, (SELECT scale FROM form),
               min(x.i) FILTER (WHERE x.n = 1),
               array_agg((CASE WHEN x.d BETWEEN -127 AND 127 THEN x.d ELSE -128 END)::integer::"char"
                         ORDER BY x.n) FILTER (WHERE (SELECT scale FROM form) IS NOT NULL),
               array_agg(x.n::integer ORDER BY x.n) FILTER (WHERE x.d NOT BETWEEN -127 AND 127),
               array_agg(x.d::integer ORDER BY x.n) FILTER (WHERE x.d NOT BETWEEN -127 AND 127)
          FROM scaled x
        HAVING count(*) > 0
        RETURNING points
    )
    SELECT coalesce((SELECT points FROM packed), 0) INTO v_points;
    RETURN v_points;
END
$$;
COMMENT ON FUNCTION cluster.compact_day(bigint, date) IS
    'Move a stream''s points of one UTC day from the row tier into its compact row (cluster.point_days); returns the points it holds.';

-- Moves the given stream-days back from the compact tier into the row tier, so that a write
-- into them (a late point, a recomputed bucket) meets one tier only; the compaction takes them
-- again later. Days that compaction cannot have taken yet are skipped without a lock: the
-- compaction age is at least 2 days (settings), so a day ending less than one day ago is safe.
-- Returns the number of points moved.
CREATE OR REPLACE FUNCTION cluster.thaw_days(p_streams bigint[], p_days date[])
RETURNS integer LANGUAGE plpgsql SET plan_cache_mode = force_custom_plan AS $$
DECLARE
    v_streams bigint[];
    v_days date[];
    v_moved integer;
BEGIN
    SELECT array_agg(s ORDER BY s, d), array_agg(d ORDER BY s, d) INTO v_streams, v_days
      FROM (SELECT DISTINCT s, d FROM unnest(p_streams, p_days) AS u (s, d)
             WHERE (d + 1)::timestamp AT TIME ZONE 'UTC' <= now() - interval '1 day') old;
    IF v_streams IS NULL THEN
        RETURN 0;
    END IF;
    -- In stream order, so that writers and the compaction cannot deadlock.
    PERFORM pg_advisory_xact_lock_shared(cluster.lock_key('compaction_stream')::integer,
                                         (s % 2147483648)::integer)
       FROM (SELECT DISTINCT unnest(v_streams) AS s ORDER BY 1) x;
    WITH gone AS (
        DELETE FROM cluster.point_days d
         USING unnest(v_streams, v_days) AS w (s, day)
         WHERE d.stream_id = w.s AND d.day = w.day
        RETURNING d.stream_id, d.first_ts, d.step_us, d.offsets_us, d.vals, d.scale, d.base,
                  d.deltas, d.wide_at, d.wide
    ), unpacked AS (
        SELECT g.stream_id, s.type, u.ts, u.value
          FROM gone g
          JOIN cluster.streams s ON s.id = g.stream_id
         CROSS JOIN LATERAL cluster.unpack(g.first_ts, g.step_us, g.offsets_us, g.vals, g.scale,
                                           g.base, g.deltas, g.wide_at, g.wide) u
    ), raw AS (
        INSERT INTO cluster.raw_points (stream_id, ts, value)
        SELECT stream_id, ts, value FROM unpacked WHERE type = 'raw'
        ON CONFLICT DO NOTHING
    ), processed AS (
        INSERT INTO cluster.processed_points (stream_id, ts, value)
        SELECT stream_id, ts, value FROM unpacked WHERE type = 'processed'
        ON CONFLICT DO NOTHING
    ), system AS (
        INSERT INTO cluster.system_points (stream_id, ts, value)
        SELECT stream_id, ts, value FROM unpacked WHERE type = 'system'
        ON CONFLICT DO NOTHING
    )
    SELECT count(*)::integer INTO v_moved FROM unpacked;
    RETURN v_moved;
END
$$;
COMMENT ON FUNCTION cluster.thaw_days(bigint[], date[]) IS
    'Move the given stream-days from the compact tier back into the row tier before a write into them; returns the points moved.';

-- Drops one row-tier chunk if no row is left in it (compaction emptied it), in the caller's
-- transaction; returns whether it went. It looks first without a lock (a chunk with rows costs
-- nothing more), then locks the chunk's hypertable ONLY in SHARE mode, so that no insert can
-- pick the chunk while it goes (reads go on), and the chunk itself, and looks again. Waiting for
-- either lock is bounded by the caller's lock_timeout: a chunk another session holds (a long
-- read, an open write, VACUUM) raises lock_not_available and is left for a later round. An
-- autovacuum worker in the way is cancelled by PostgreSQL itself once the wait passes
-- deadlock_timeout (1 s by default), hence a lock_timeout longer than that.
CREATE OR REPLACE FUNCTION cluster.drop_emptied_chunk(p_chunk regclass)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    v_hypertable regclass;
    v_start timestamptz;
    v_end timestamptz;
    v_rows boolean;
BEGIN
    SELECT format('%I.%I', c.hypertable_schema, c.hypertable_name)::regclass,
           c.range_start, c.range_end
      INTO v_hypertable, v_start, v_end
      FROM timescaledb_information.chunks c
     WHERE format('%I.%I', c.chunk_schema, c.chunk_name)::regclass = p_chunk;
    IF v_hypertable IS NULL THEN
        RETURN false;  -- gone already
    END IF;
    EXECUTE format('SELECT EXISTS (SELECT FROM %s)', p_chunk) INTO v_rows;
    IF v_rows THEN
        RETURN false;
    END IF;
    EXECUTE format('LOCK TABLE ONLY %s IN SHARE MODE', v_hypertable);
    EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', p_chunk);
    EXECUTE format('SELECT EXISTS (SELECT FROM %s)', p_chunk) INTO v_rows;
    IF v_rows THEN
        RETURN false;  -- a late point came in: compacted next round
    END IF;
    -- Exactly this chunk: the chunks of a hypertable do not overlap.
    PERFORM drop_chunks(v_hypertable, older_than => v_end, newer_than => v_start);
    RETURN true;
END
$$;
COMMENT ON FUNCTION cluster.drop_emptied_chunk(regclass) IS
    'Drop a row-tier chunk that compaction emptied; false when it still holds rows. Waits for its locks as long as lock_timeout allows.';
