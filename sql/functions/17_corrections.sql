-- Raw points written from outside a device: history imports, repairs, and undoing them
-- (docs/data-api.md#history-in). They enter the way late data does: compacted days go back to
-- the row tier first (cluster.thaw_days, as ingest does), then the points change, then their
-- ranges are queued for the engine in cluster.dirty_ranges, one per UTC day touched, so that
-- processed points, costs and rollups follow and nothing else is recomputed. Every point
-- replaced or removed is recorded in cluster.corrections with who did it. Each function locks
-- its stream's row (FOR NO KEY UPDATE: ingest's inserts are not blocked), so that corrections of
-- one stream are recorded in the order they happened.

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

-- A stream's raw points at the given times take the given values (the last of several values
-- for one time wins): new times are inserted, others replaced where the value differs.
CREATE OR REPLACE FUNCTION cluster.write_points(
    p_stream_id bigint, p_ts timestamptz[], p_values double precision[], p_actor text
) RETURNS TABLE (inserted bigint, replaced bigint, unchanged bigint, correction bigint)
LANGUAGE plpgsql AS $$
DECLARE
    v_correction bigint;
    v_first timestamptz;
    v_last timestamptz;
    v_added bigint;
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
            INSERT INTO cluster.raw_points (stream_id, ts, value)
            SELECT DISTINCT ON (g.ts) p_stream_id, g.ts, g.value
              FROM unnest(p_ts, p_values) WITH ORDINALITY AS g (ts, value, n)
             ORDER BY g.ts, g.n DESC;
            GET DIAGNOSTICS v_added = ROW_COUNT;
            INSERT INTO cluster.dirty_ranges (stream_id, ts_from, ts_to)
            SELECT p_stream_id, min(t), max(t) FROM unnest(p_ts) t
             GROUP BY (t AT TIME ZONE 'UTC')::date;
            RETURN QUERY SELECT v_added, 0::bigint, 0::bigint, NULL::bigint;
            RETURN;
        EXCEPTION WHEN unique_violation THEN
            NULL;
        END;
    END IF;
    v_correction := nextval('cluster.correction_numbers');
    RETURN QUERY
    WITH given AS (
        SELECT DISTINCT ON (g.ts) g.ts, g.value
          FROM unnest(p_ts, p_values) WITH ORDINALITY AS g (ts, value, n)
         ORDER BY g.ts, g.n DESC
    ), added AS (
        -- A history is mostly new times: they go in without looking anything up first.
        INSERT INTO cluster.raw_points AS r (stream_id, ts, value)
        SELECT p_stream_id, g.ts, g.value FROM given g
        ON CONFLICT (stream_id, ts) DO NOTHING
        RETURNING r.ts
    ), held AS (
        SELECT g.ts, g.value FROM given g WHERE NOT EXISTS (SELECT FROM added a WHERE a.ts = g.ts)
    ), changed AS (
        -- o is the row as the statement found it: its value is the one replaced.
        UPDATE cluster.raw_points r SET value = h.value
          FROM held h
          JOIN cluster.raw_points o ON o.stream_id = p_stream_id AND o.ts = h.ts
         WHERE r.stream_id = p_stream_id AND r.ts = h.ts AND r.value IS DISTINCT FROM h.value
        RETURNING r.ts, o.value AS old_value, h.value AS new_value
    ), audited AS (
        INSERT INTO cluster.corrections (correction, stream_id, ts, old_value, new_value, actor)
        SELECT v_correction, p_stream_id, c.ts, c.old_value, c.new_value, p_actor FROM changed c
        RETURNING 1
    ), queued AS (
        INSERT INTO cluster.dirty_ranges (stream_id, ts_from, ts_to)
        SELECT p_stream_id, min(w.ts), max(w.ts)
          FROM (SELECT ts FROM added UNION ALL SELECT ts FROM changed) w
         GROUP BY (w.ts AT TIME ZONE 'UTC')::date
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM added), (SELECT count(*) FROM audited),
           (SELECT count(*) FROM given) - (SELECT count(*) FROM added)
               - (SELECT count(*) FROM audited),
           CASE WHEN EXISTS (SELECT FROM audited) THEN v_correction END
      FROM (SELECT count(*) FROM queued) q;
END $$;
COMMENT ON FUNCTION cluster.write_points(bigint, timestamptz[], double precision[], text) IS
    'Give a raw stream''s points at p_ts the values p_values (insert or replace), as late data enters; replaced points are recorded in cluster.corrections. Returns the counts inserted, replaced and unchanged, and the correction number (null when nothing was replaced).';

-- Removes a raw stream's points in [p_from, p_to].
CREATE OR REPLACE FUNCTION cluster.delete_points(
    p_stream_id bigint, p_from timestamptz, p_to timestamptz, p_actor text
) RETURNS TABLE (deleted bigint, correction bigint) LANGUAGE plpgsql AS $$
DECLARE
    v_correction bigint;
BEGIN
    PERFORM 1 FROM cluster.streams WHERE id = p_stream_id AND type = 'raw' FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'raw stream % does not exist', p_stream_id USING ERRCODE = 'no_data_found';
    END IF;
    PERFORM cluster.thaw_days(array_agg(d.stream_id), array_agg(d.day))
       FROM cluster.point_days d
      WHERE d.stream_id = p_stream_id
        AND d.day BETWEEN (p_from AT TIME ZONE 'UTC')::date AND (p_to AT TIME ZONE 'UTC')::date;
    v_correction := nextval('cluster.correction_numbers');
    RETURN QUERY
    WITH gone AS (
        DELETE FROM cluster.raw_points p
         WHERE p.stream_id = p_stream_id AND p.ts >= p_from AND p.ts <= p_to
        RETURNING p.ts, p.value
    ), audited AS (
        INSERT INTO cluster.corrections (correction, stream_id, ts, old_value, new_value, actor)
        SELECT v_correction, p_stream_id, g.ts, g.value, NULL, p_actor FROM gone g
        RETURNING 1
    ), queued AS (
        INSERT INTO cluster.dirty_ranges (stream_id, ts_from, ts_to)
        SELECT p_stream_id, min(g.ts), max(g.ts) FROM gone g
         GROUP BY (g.ts AT TIME ZONE 'UTC')::date
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM audited),
           CASE WHEN EXISTS (SELECT FROM gone) THEN v_correction END
      FROM (SELECT count(*) FROM queued) q;
END $$;
COMMENT ON FUNCTION cluster.delete_points(bigint, timestamptz, timestamptz, text) IS
    'Remove a raw stream''s points in [p_from, p_to], as late data enters, each recorded in cluster.corrections. Returns the count and the correction number (null when nothing was removed).';

-- Puts back what a correction changed: the old values of the points it replaced or removed, and
-- removes the points it put back where there were none. Refused while a later correction has
-- changed any of those points since (undo that one first): its values would be lost.
CREATE OR REPLACE FUNCTION cluster.undo_correction(p_correction bigint, p_actor text)
RETURNS TABLE (restored bigint, correction bigint) LANGUAGE plpgsql AS $$
DECLARE
    v_stream bigint;
    v_later bigint;
    v_correction bigint;
BEGIN
    SELECT min(c.stream_id) INTO v_stream FROM cluster.corrections c
     WHERE c.correction = p_correction;
    IF v_stream IS NULL THEN
        RAISE EXCEPTION 'no correction %', p_correction USING ERRCODE = 'no_data_found';
    END IF;
    PERFORM 1 FROM cluster.streams WHERE id = v_stream FOR NO KEY UPDATE;
    SELECT min(l.correction) INTO v_later
      FROM cluster.corrections c
      JOIN cluster.corrections l
        ON l.stream_id = c.stream_id AND l.ts = c.ts AND l.correction > c.correction
     WHERE c.correction = p_correction;
    IF v_later IS NOT NULL THEN
        RAISE EXCEPTION 'correction % changed points of correction % since: undo it first',
            v_later, p_correction USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    PERFORM cluster.thaw_days(array_agg(v_stream), array_agg(x.day))
       FROM (SELECT DISTINCT (c.ts AT TIME ZONE 'UTC')::date AS day FROM cluster.corrections c
              WHERE c.correction = p_correction) x;
    v_correction := nextval('cluster.correction_numbers');
    RETURN QUERY
    WITH undone AS (
        SELECT c.ts, c.old_value FROM cluster.corrections c WHERE c.correction = p_correction
    ), now_held AS (
        SELECT p.ts, p.value
          FROM cluster.raw_points p JOIN undone u ON u.ts = p.ts
         WHERE p.stream_id = v_stream
    ), removed AS (
        DELETE FROM cluster.raw_points p
         USING undone u
         WHERE p.stream_id = v_stream AND p.ts = u.ts AND u.old_value IS NULL
        RETURNING p.ts
    ), put AS (
        INSERT INTO cluster.raw_points AS r (stream_id, ts, value)
        SELECT v_stream, u.ts, u.old_value FROM undone u WHERE u.old_value IS NOT NULL
        ON CONFLICT (stream_id, ts) DO UPDATE SET value = EXCLUDED.value
         WHERE r.value IS DISTINCT FROM EXCLUDED.value
        RETURNING r.ts
    ), changed AS (
        SELECT ts FROM removed UNION ALL SELECT ts FROM put
    ), audited AS (
        INSERT INTO cluster.corrections (correction, stream_id, ts, old_value, new_value, actor)
        SELECT v_correction, v_stream, x.ts, h.value, u.old_value, p_actor
          FROM changed x
          JOIN undone u ON u.ts = x.ts
          LEFT JOIN now_held h ON h.ts = x.ts
        RETURNING 1
    ), queued AS (
        INSERT INTO cluster.dirty_ranges (stream_id, ts_from, ts_to)
        SELECT v_stream, min(x.ts), max(x.ts) FROM changed x
         GROUP BY (x.ts AT TIME ZONE 'UTC')::date
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM audited),
           CASE WHEN EXISTS (SELECT FROM changed) THEN v_correction END
      FROM (SELECT count(*) FROM queued) q;
END $$;
COMMENT ON FUNCTION cluster.undo_correction(bigint, text) IS
    'Put back the values a correction replaced or removed (itself recorded as a new correction); refused while a later correction changed the same points. Returns the points restored and the new correction number.';
