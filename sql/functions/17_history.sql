-- Raw points written from outside a device: history imports, repairs, and undoing them
-- (docs/api.md#history-in). They enter the way late data does: compacted days go back to
-- the row tier first (cluster.thaw_days, as ingest does), then the points change, then their
-- ranges are queued for the engine in cluster.dirty_ranges, one per UTC day touched
-- (cluster.day_ranges, as ingest queues them), so that
-- processed points, costs and rollups follow and nothing else is recomputed. Each call that
-- changes a point is one correction (docs/api.md#undo): cluster.correction_log says who and
-- how many, cluster.correction_points what each point held before and after, so that undo can
-- put back exactly the state before it. Each function locks its stream's row (FOR NO KEY
-- UPDATE: ingest's inserts are not blocked), so that corrections of one stream happen one after
-- another.

-- Microseconds since the Unix epoch as instants, exactly: whole seconds (exact in float8 for
-- any timestamptz) plus the rest. How imports pass times (cheaper to send than timestamps).
CREATE OR REPLACE FUNCTION cluster.unix_instants(p_micros bigint[]) RETURNS timestamptz[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT ARRAY(SELECT to_timestamp(div(u.m, 1000000)::float8)
                        + mod(u.m, 1000000) * interval '1 microsecond'
                   FROM unnest(p_micros) WITH ORDINALITY AS u (m, n) ORDER BY u.n)
$$;
COMMENT ON FUNCTION cluster.unix_instants(bigint[]) IS
    'Microseconds since 1970-01-01T00:00Z as timestamptz, exactly, in order.';

-- Every point a correction changed, one row per point and part (what analysts read).
CREATE OR REPLACE VIEW cluster.corrections AS
SELECT l.correction, l.stream_id, u.ts, u.old_value, u.new_value, l.actor, l.made_at
  FROM cluster.correction_log l
  JOIN cluster.correction_points p ON p.correction = l.correction
 CROSS JOIN LATERAL unnest(p.ts, p.old_values, p.new_values) AS u (ts, old_value, new_value);
COMMENT ON VIEW cluster.corrections IS 'Every raw point an import, removal or undo changed: the correction, the stream, the time, the value before (null: there was no point) and after (null: removed), who and when. One row per point and part of the correction (cluster.correction_points).';

-- What correction p_correction changed, one row per point: the value before its first part and
-- after its last (an admin import's chunks may write one time twice); a point it left as it
-- found it is not there.
CREATE OR REPLACE FUNCTION cluster.correction_changes(p_correction bigint)
RETURNS TABLE (ts timestamptz, old_value double precision, new_value double precision)
LANGUAGE sql STABLE AS $$
    SELECT f.ts, f.old_value, f.new_value
      FROM (SELECT u.ts, (array_agg(u.old_value ORDER BY p.part))[1] AS old_value,
                   (array_agg(u.new_value ORDER BY p.part DESC))[1] AS new_value
              FROM cluster.correction_points p
             CROSS JOIN LATERAL unnest(p.ts, p.old_values, p.new_values) AS u (ts, old_value, new_value)
             WHERE p.correction = p_correction
             GROUP BY u.ts) f
     WHERE f.old_value IS DISTINCT FROM f.new_value
$$;
COMMENT ON FUNCTION cluster.correction_changes(bigint) IS
    'The points a correction changed: time, value before (null: none) and after (null: removed).';

-- Records what one statement of correction p_correction changed (each point's time, value
-- before and after, element by element): its points per UTC day as one part, its counts in the
-- log (added to those of its earlier parts: an admin import's chunks), and its days queued for
-- the engine. Returns p_correction, or null when nothing changed.
CREATE OR REPLACE FUNCTION cluster.record_correction(
    p_correction bigint, p_stream_id bigint, p_actor text, p_undoes bigint,
    p_ts timestamptz[], p_old double precision[], p_new double precision[]
) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    v_part bigint := nextval('cluster.correction_parts');
BEGIN
    IF coalesce(cardinality(p_ts), 0) = 0 THEN
        RETURN NULL;
    END IF;
    WITH c AS (
        SELECT u.ts, u.old_value, u.new_value
          FROM unnest(p_ts, p_old, p_new) AS u (ts, old_value, new_value)
    ), recorded AS (
        INSERT INTO cluster.correction_points (correction, part, day, ts, old_values, new_values)
        SELECT p_correction, v_part, (c.ts AT TIME ZONE 'UTC')::date, array_agg(c.ts ORDER BY c.ts),
               array_agg(c.old_value ORDER BY c.ts), array_agg(c.new_value ORDER BY c.ts)
          FROM c
         GROUP BY (c.ts AT TIME ZONE 'UTC')::date
    ), queued AS (
        INSERT INTO cluster.dirty_ranges (stream_id, ts_from, ts_to)
        SELECT d.stream_id, d.ts_from, d.ts_to
          FROM cluster.day_ranges(array_fill(p_stream_id, ARRAY[cardinality(p_ts)]), p_ts) d
    )
    INSERT INTO cluster.correction_log AS l (correction, stream_id, undoes, actor, added,
                                             replaced, removed, time_from, time_to)
    SELECT p_correction, p_stream_id, p_undoes, p_actor,
           count(*) FILTER (WHERE c.old_value IS NULL),
           count(*) FILTER (WHERE c.old_value IS NOT NULL AND c.new_value IS NOT NULL),
           count(*) FILTER (WHERE c.new_value IS NULL), min(c.ts), max(c.ts)
      FROM c
    ON CONFLICT (correction) DO UPDATE
       SET added = l.added + EXCLUDED.added, replaced = l.replaced + EXCLUDED.replaced,
           removed = l.removed + EXCLUDED.removed,
           time_from = least(l.time_from, EXCLUDED.time_from),
           time_to = greatest(l.time_to, EXCLUDED.time_to);
    RETURN p_correction;
END $$;
COMMENT ON FUNCTION cluster.record_correction(bigint, bigint, text, bigint, timestamptz[], double precision[], double precision[]) IS
    'Record what one statement of a correction changed (cluster.correction_points, cluster.correction_log) and queue its days for the engine; null when nothing changed.';

-- A stream's raw points at the given times take the given values (the last of several values
-- for one time wins): new times are inserted, others replaced where the value differs. Both are
-- recorded as one correction: a new one, or p_correction (an admin import, one per file,
-- written a chunk a call in one transaction).
CREATE OR REPLACE FUNCTION cluster.write_points(
    p_stream_id bigint, p_ts timestamptz[], p_values double precision[], p_actor text,
    p_correction bigint DEFAULT NULL
) RETURNS TABLE (inserted bigint, replaced bigint, unchanged bigint, correction bigint)
LANGUAGE plpgsql AS $$
DECLARE
    v_first timestamptz;
    v_last timestamptz;
    v_given bigint;
    v_added bigint;
    v_replaced bigint := 0;
    v_ts timestamptz[];
    v_old double precision[];
    v_new double precision[];
    v_done boolean := false;
BEGIN
    IF cardinality(p_ts) IS DISTINCT FROM cardinality(p_values) THEN
        RAISE EXCEPTION 'one value per time' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM 1 FROM cluster.streams WHERE id = p_stream_id AND type = 'raw' FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'raw stream % does not exist', p_stream_id USING ERRCODE = 'no_data_found';
    END IF;
    PERFORM cluster.thaw_days(array_agg(p_stream_id), array_agg(x.day))
       FROM (SELECT DISTINCT (t AT TIME ZONE 'UTC')::date AS day FROM unnest(p_ts) t) x;
    SELECT min(t), max(t) INTO v_first, v_last FROM unnest(p_ts) t;
    IF NOT EXISTS (SELECT FROM cluster.raw_points p
                    WHERE p.stream_id = p_stream_id AND p.ts BETWEEN v_first AND v_last) THEN
        -- History into a stretch the stream has nothing in (the usual import): every point is
        -- new, and goes in without a conflict check. A device's point arriving there meanwhile
        -- is a unique violation: then the way below, which compares.
        BEGIN
            WITH added AS (
                INSERT INTO cluster.raw_points AS r (stream_id, ts, value)
                SELECT DISTINCT ON (g.ts) p_stream_id, g.ts, g.value
                  FROM unnest(p_ts, p_values) WITH ORDINALITY AS g (ts, value, n)
                 ORDER BY g.ts, g.n DESC
                RETURNING r.ts, r.value
            )
            SELECT count(*), count(*), array_agg(a.ts), array_agg(NULL::float8),
                   array_agg(a.value)
              INTO v_given, v_added, v_ts, v_old, v_new
              FROM added a;
            v_done := true;
        EXCEPTION WHEN unique_violation THEN
            NULL;
        END;
    END IF;
    IF NOT v_done THEN
        WITH given AS (
            SELECT DISTINCT ON (g.ts) g.ts, g.value
              FROM unnest(p_ts, p_values) WITH ORDINALITY AS g (ts, value, n)
             ORDER BY g.ts, g.n DESC
        ), added AS (
            -- A history is mostly new times: they go in without looking anything up first.
            INSERT INTO cluster.raw_points AS r (stream_id, ts, value)
            SELECT p_stream_id, g.ts, g.value FROM given g
            ON CONFLICT (stream_id, ts) DO NOTHING
            RETURNING r.ts, r.value
        ), held AS (
            SELECT g.ts, g.value FROM given g
             WHERE NOT EXISTS (SELECT FROM added a WHERE a.ts = g.ts)
        ), changed AS (
            -- o is the row as the statement found it: its value is the one replaced.
            UPDATE cluster.raw_points r SET value = h.value
              FROM held h
              JOIN cluster.raw_points o ON o.stream_id = p_stream_id AND o.ts = h.ts
             WHERE r.stream_id = p_stream_id AND r.ts = h.ts AND r.value IS DISTINCT FROM h.value
            RETURNING r.ts, o.value AS old_value, h.value AS new_value
        ), written AS (
            SELECT a.ts, NULL::float8 AS old_value, a.value AS new_value FROM added a
            UNION ALL
            SELECT c.ts, c.old_value, c.new_value FROM changed c
        )
        SELECT (SELECT count(*) FROM given), (SELECT count(*) FROM added),
               (SELECT count(*) FROM changed), array_agg(w.ts), array_agg(w.old_value),
               array_agg(w.new_value)
          INTO v_given, v_added, v_replaced, v_ts, v_old, v_new
          FROM written w;
    END IF;
    RETURN QUERY SELECT v_added, v_replaced, v_given - v_added - v_replaced,
        cluster.record_correction(coalesce(p_correction, nextval('cluster.correction_numbers')),
                                  p_stream_id, p_actor, NULL, v_ts, v_old, v_new);
END $$;
COMMENT ON FUNCTION cluster.write_points(bigint, timestamptz[], double precision[], text, bigint) IS
    'Give a raw stream''s points at p_ts the values p_values (insert or replace), as late data enters, recorded as one correction (p_correction, or a new one). Returns the counts inserted, replaced and unchanged, and the correction number (null when nothing changed).';

-- Removes a raw stream's points in [p_from, p_to], at most p_limit of them (else nothing, and
-- program_limit_exceeded), as one correction.
CREATE OR REPLACE FUNCTION cluster.delete_points(
    p_stream_id bigint, p_from timestamptz, p_to timestamptz, p_actor text, p_limit bigint
) RETURNS TABLE (deleted bigint, correction bigint) LANGUAGE plpgsql AS $$
DECLARE
    v_first date := (p_from AT TIME ZONE 'UTC')::date;
    v_last date := (p_to AT TIME ZONE 'UTC')::date;
    v_count bigint;
    v_ts timestamptz[];
    v_old double precision[];
    v_new double precision[];
BEGIN
    PERFORM 1 FROM cluster.streams WHERE id = p_stream_id AND type = 'raw' FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'raw stream % does not exist', p_stream_id USING ERRCODE = 'no_data_found';
    END IF;
    -- The compaction lock first, then the days to thaw (the next statement, a later snapshot):
    -- no day can be compacted between choosing it and deleting in it.
    PERFORM pg_advisory_xact_lock_shared(cluster.lock_key('compaction_stream')::integer,
                                         (p_stream_id % 2147483648)::integer);
    -- Counted before anything moves: the row tier (no further than the bound), the compacted
    -- days inside the range whole, its first and last day point by point.
    SELECT (SELECT count(*) FROM (SELECT FROM cluster.raw_points r
                                   WHERE r.stream_id = p_stream_id AND r.ts >= p_from
                                     AND r.ts <= p_to
                                   LIMIT p_limit + 1) x)
           + (SELECT coalesce(sum(d.points), 0) FROM cluster.point_days d
               WHERE d.stream_id = p_stream_id AND d.day > v_first AND d.day < v_last)
           + (SELECT count(*)
                FROM cluster.point_days d
               CROSS JOIN LATERAL cluster.unpack(d.first_ts, d.step_us, d.offsets_us, d.vals,
                                                 d.scale, d.base, d.deltas, d.wide_at, d.wide) u
               WHERE d.stream_id = p_stream_id AND d.day IN (v_first, v_last)
                 AND u.ts >= p_from AND u.ts <= p_to)
      INTO v_count;
    IF v_count > p_limit THEN
        RAISE EXCEPTION 'at most % points a removal, and this range holds more: remove it in parts',
            to_char(p_limit, 'FM999,999,999,999') USING ERRCODE = 'program_limit_exceeded';
    END IF;
    PERFORM cluster.thaw_days(array_agg(d.stream_id), array_agg(d.day))
       FROM cluster.point_days d
      WHERE d.stream_id = p_stream_id AND d.day BETWEEN v_first AND v_last;
    WITH gone AS (
        DELETE FROM cluster.raw_points p
         WHERE p.stream_id = p_stream_id AND p.ts >= p_from AND p.ts <= p_to
        RETURNING p.ts, p.value
    )
    SELECT array_agg(g.ts), array_agg(g.value), array_agg(NULL::float8)
      INTO v_ts, v_old, v_new
      FROM gone g;
    RETURN QUERY SELECT coalesce(cardinality(v_ts), 0)::bigint,
        cluster.record_correction(nextval('cluster.correction_numbers'), p_stream_id, p_actor,
                                  NULL, v_ts, v_old, v_new);
END $$;
COMMENT ON FUNCTION cluster.delete_points(bigint, timestamptz, timestamptz, text, bigint) IS
    'Remove a raw stream''s points in [p_from, p_to] (at most p_limit, else program_limit_exceeded and nothing), as late data enters, recorded as one correction. Returns the count and the correction number (null when nothing was removed).';

-- Puts back the state before correction p_correction: a point it added goes, one it replaced or
-- removed gets its old value back. Only while every one of its points still holds what it left
-- there (the value it wrote; no point where it removed one); else nothing changes and
-- object_not_in_prerequisite_state names a few of those points and their count. The undo is a
-- correction itself (undoes = p_correction), so it can be undone in turn, by the same rule.
CREATE OR REPLACE FUNCTION cluster.undo_correction(p_correction bigint, p_actor text)
RETURNS TABLE (restored bigint, correction bigint) LANGUAGE plpgsql AS $$
DECLARE
    v_stream bigint;
    v_moved bigint;
    v_sample text;
    v_undone_by bigint;
    v_ts timestamptz[];
    v_old double precision[];
    v_new double precision[];
BEGIN
    SELECT l.stream_id INTO v_stream FROM cluster.correction_log l
     WHERE l.correction = p_correction;
    IF v_stream IS NULL THEN
        RAISE EXCEPTION 'no correction %', p_correction USING ERRCODE = 'no_data_found';
    END IF;
    PERFORM 1 FROM cluster.streams WHERE id = v_stream FOR NO KEY UPDATE;
    PERFORM cluster.thaw_days(array_agg(v_stream), array_agg(x.day))
       FROM (SELECT DISTINCT p.day FROM cluster.correction_points p
              WHERE p.correction = p_correction) x;
    SELECT count(*),
           string_agg(format('at %s (%s) it left %s, now %s', trim_scale(extract(epoch FROM m.ts)),
                             to_char(m.ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                             coalesce(m.new_value::text, 'no point'),
                             coalesce(m.held::text, 'no point')),
                      '; ' ORDER BY m.ts) FILTER (WHERE m.n <= 5)
      INTO v_moved, v_sample
      FROM (SELECT c.ts, c.new_value, r.value AS held, row_number() OVER (ORDER BY c.ts) AS n
              FROM cluster.correction_changes(p_correction) c
              LEFT JOIN cluster.raw_points r ON r.stream_id = v_stream AND r.ts = c.ts
             WHERE r.value IS DISTINCT FROM c.new_value) m;
    IF v_moved > 0 THEN
        SELECT max(l.correction) INTO v_undone_by FROM cluster.correction_log l
         WHERE l.undoes = p_correction;
        RAISE EXCEPTION '%', format(
                'correction %s cannot be undone: %s of its points no longer hold what it left '
                '(%s%s)%s; nothing changed',
                p_correction, v_moved, CASE WHEN v_moved > 5 THEN 'the first 5: ' ELSE '' END,
                v_sample,
                CASE WHEN v_undone_by IS NULL THEN ''
                     ELSE format('; correction %s undid it', v_undone_by) END)
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    BEGIN
        WITH c AS (
            SELECT x.ts, x.old_value, x.new_value FROM cluster.correction_changes(p_correction) x
        ), gone AS (
            DELETE FROM cluster.raw_points r USING c
             WHERE r.stream_id = v_stream AND r.ts = c.ts AND c.old_value IS NULL
        ), back AS (
            -- No ON CONFLICT: the time was checked empty, and a device's point arriving there
            -- since must refuse the undo, not be overwritten.
            INSERT INTO cluster.raw_points (stream_id, ts, value)
            SELECT v_stream, c.ts, c.old_value FROM c
             WHERE c.old_value IS NOT NULL AND c.new_value IS NULL
        ), put AS (
            UPDATE cluster.raw_points r SET value = c.old_value
              FROM c
             WHERE r.stream_id = v_stream AND r.ts = c.ts AND c.old_value IS NOT NULL
               AND c.new_value IS NOT NULL
        )
        SELECT array_agg(c.ts), array_agg(c.new_value), array_agg(c.old_value)
          INTO v_ts, v_old, v_new
          FROM c;
    EXCEPTION WHEN unique_violation THEN
        RAISE EXCEPTION 'correction % cannot be undone: a point arrived meanwhile where it removed one; nothing changed',
            p_correction USING ERRCODE = 'object_not_in_prerequisite_state';
    END;
    RETURN QUERY SELECT coalesce(cardinality(v_ts), 0)::bigint,
        cluster.record_correction(nextval('cluster.correction_numbers'), v_stream, p_actor,
                                  p_correction, v_ts, v_old, v_new);
END $$;
COMMENT ON FUNCTION cluster.undo_correction(bigint, text) IS
    'Put back the state before a correction, while each of its points still holds what it left (else object_not_in_prerequisite_state and nothing changes); recorded as a correction of its own. Returns the points restored and the new correction number.';
