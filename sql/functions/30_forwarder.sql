-- The forwarder: registration periods (trigger functions), intervals, and the batch SQL by storage.
-- Re-applied by every `migrate`, after the numbered migrations: the one current definition.

CREATE OR REPLACE FUNCTION forwarder.registration_started() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO forwarder.registration_periods (homebase_sn, customer_id, period)
    VALUES (NEW.homebase_sn, NEW.customer_id, tstzrange(NEW.registered_at, NULL, '[)'));
    RETURN NULL;
END $$;
COMMENT ON FUNCTION forwarder.registration_started() IS 'Opens a registration period when a homebase is registered.';

CREATE OR REPLACE FUNCTION forwarder.registration_ended() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE forwarder.registration_periods
       SET period = tstzrange(lower(period), greatest(lower(period), now()), '[)')
     WHERE homebase_sn = OLD.homebase_sn AND upper_inf(period);
    DELETE FROM forwarder.registration_periods WHERE homebase_sn = OLD.homebase_sn AND isempty(period);
    RETURN NULL;
EXCEPTION WHEN check_violation THEN
    -- Registered and unregistered within one transaction: the period is empty, drop it.
    DELETE FROM forwarder.registration_periods
     WHERE homebase_sn = OLD.homebase_sn AND upper_inf(period) AND lower(period) >= now();
    RETURN NULL;
END $$;
COMMENT ON FUNCTION forwarder.registration_ended() IS 'Closes the open registration period when a homebase is unregistered.';

-- Every claim computes this for every customer (10,000 calls a claim at 10,000 customers):
-- date_bin on the timestamp itself, not numeric epoch arithmetic, took the claim from about 60
-- to about 37 ms there (issue 13); the values are the same.
CREATE OR REPLACE FUNCTION forwarder.interval_end(p_cursor timestamptz, p_minutes integer)
RETURNS timestamptz LANGUAGE sql IMMUTABLE AS $$
    SELECT date_bin(make_interval(mins => p_minutes), p_cursor, timestamptz 'epoch')
           + make_interval(mins => p_minutes)
$$;
COMMENT ON FUNCTION forwarder.interval_end(timestamptz, integer) IS
    'End of the delivery interval after a cursor: the next multiple of p_minutes since the Unix epoch.';

CREATE OR REPLACE FUNCTION forwarder.visible(p_stored_by xid8, p_snapshot pg_snapshot)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT p_stored_by IS NULL OR pg_visible_in_snapshot(p_stored_by, p_snapshot)
$$;
COMMENT ON FUNCTION forwarder.visible(xid8, pg_snapshot) IS
    'A point stored by p_stored_by had been committed when p_snapshot was taken (points from before 0008 always).';

CREATE OR REPLACE FUNCTION forwarder.stored_for(p_customer bigint, p_sn text, p_received timestamptz)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM forwarder.registration_periods r
                    WHERE r.homebase_sn = p_sn AND r.customer_id = p_customer
                      AND r.period @> p_received)
$$;
COMMENT ON FUNCTION forwarder.stored_for(bigint, text, timestamptz) IS
    'A point of homebase p_sn stored at p_received belongs to customer p_customer: the homebase was registered to it then.';

-- The data streams of each customer, once per registration period of their homebase to it
-- (a point is the customer's when its received_at lies in one), passing its allow or deny
-- list, with the aggregation method of their medium.
CREATE OR REPLACE FUNCTION forwarder.customer_streams(p_customers bigint[])
RETURNS TABLE (customer_id bigint, stream_id bigint, homebase_sn text, period tstzrange,
               method text, out_medium integer)
LANGUAGE sql STABLE AS $$
    SELECT d.customer_id, s.id, s.homebase_sn, r.period, coalesce(m.method, 'LAST'),
           CASE WHEN m.method = 'INTEGRAL' THEN m.integral_medium ELSE s.medium END
      FROM unnest(p_customers) AS d(customer_id)
      JOIN forwarder.configs c ON c.customer_id = d.customer_id
      JOIN forwarder.registration_periods r ON r.customer_id = d.customer_id
      JOIN forwarder.streams s ON s.homebase_sn = r.homebase_sn
      LEFT JOIN forwarder.media_methods m ON m.medium = s.medium
     WHERE CASE c.filter_list
           WHEN 'allow' THEN EXISTS (
               SELECT 1 FROM forwarder.config_filters f
                WHERE f.customer_id = d.customer_id
                  AND (f.medium IS NULL OR f.medium = s.medium)
                  AND (f.indexes IS NULL OR s.idx = ANY (f.indexes))
                  AND (f.obis IS NULL OR f.obis = s.obis))
           WHEN 'deny' THEN NOT EXISTS (
               SELECT 1 FROM forwarder.config_filters f
                WHERE f.customer_id = d.customer_id
                  AND (f.medium IS NULL OR f.medium = s.medium)
                  AND (f.indexes IS NULL OR s.idx = ANY (f.indexes))
                  AND (f.obis IS NULL OR f.obis = s.obis))
           ELSE true
       END
$$;
COMMENT ON FUNCTION forwarder.customer_streams(bigint[]) IS
    'Streams of the homebases registered to each customer, per registration period, its filters applied.';

-- The point scans below are LATERAL subqueries with OFFSET 0, so that each stream is read
-- through its index ((stream_id, stored_by) or (stream_id, ts)) rather than the whole table
-- hashed: a batch reads a few minutes of a few streams out of days of all of them.

-- Points new to each batch (customer, seen, upto): stored by a transaction visible in `upto`
-- and not in `seen` (snapshots as text), while the homebase was registered to the customer.
CREATE OR REPLACE FUNCTION forwarder.new_points(p_customers bigint[], p_seen text[], p_upto text[])
RETURNS TABLE (customer_id bigint, stream_id bigint, homebase_sn text, method text,
               out_medium integer, stored_by xid8, ts timestamptz, value double precision)
LANGUAGE sql STABLE AS $$
    SELECT s.customer_id, s.stream_id, s.homebase_sn, s.method, s.out_medium, p.stored_by,
           p.ts, p.value
      FROM unnest(p_customers, p_seen::pg_snapshot[], p_upto::pg_snapshot[])
           AS d(customer_id, seen, upto)
      JOIN forwarder.customer_streams(p_customers) s ON s.customer_id = d.customer_id
      CROSS JOIN LATERAL (
          SELECT p.stored_by, p.ts, p.value, p.received_at FROM forwarder.points p
           WHERE p.stream_id = s.stream_id
             AND p.stored_by >= coalesce(pg_snapshot_xmin(d.seen), '1'::xid8)
             AND p.stored_by < pg_snapshot_xmax(d.upto)
          OFFSET 0) p
     WHERE pg_visible_in_snapshot(p.stored_by, d.upto)
       AND NOT coalesce(pg_visible_in_snapshot(p.stored_by, d.seen), false)
       AND s.period @> p.received_at
$$;
COMMENT ON FUNCTION forwarder.new_points(bigint[], text[], text[]) IS
    'Points of each batch (customer, seen, upto) in `all` mode: stored since the previous batch, while registered to the customer.';

-- Aggregated mode. Per batch (customer, [from, to), interval seconds, seen, upto) the intervals
-- ("cells") to send: those inside [from, to) with points, and earlier ones that received new
-- points. Each cell is computed over every point of it visible in `upto` (stored while
-- registered), one point per data stream stamped at the cell's end. INTEGRAL: the trapezoid
-- integral of the linear interpolation between consecutive points, clipped to the cell: the
-- last point before it and the first at or after its end are interpolated at the boundaries;
-- when no later point is known the last value is held up to the end. Values are per second,
-- so / 3600 gives unit-hours (W -> Wh).
CREATE OR REPLACE FUNCTION forwarder.batch_aggregates(
    p_customers bigint[], p_from timestamptz[], p_to timestamptz[], p_seconds integer[],
    p_seen text[], p_upto text[]
) RETURNS TABLE (customer_id bigint, stream_id bigint, method text, medium integer,
                 ts timestamptz, value double precision)
LANGUAGE sql STABLE AS $$
    WITH batches AS MATERIALIZED (
        SELECT d.customer_id, d.ts_from, d.ts_to, make_interval(secs => d.seconds) AS width,
               d.upto::pg_snapshot AS upto
          FROM unnest(p_customers, p_from, p_to, p_seconds, p_upto)
               AS d(customer_id, ts_from, ts_to, seconds, upto)
    ), streams AS MATERIALIZED (
        SELECT * FROM forwarder.customer_streams(p_customers)
    ), cells AS MATERIALIZED (
        SELECT DISTINCT s.customer_id, s.stream_id, s.homebase_sn, s.method, s.out_medium,
               time_bucket(b.width, p.ts, TIMESTAMPTZ 'epoch') AS lo, b.width
          FROM batches b
          JOIN streams s ON s.customer_id = b.customer_id
          CROSS JOIN LATERAL (
              SELECT p.ts FROM forwarder.points p
               WHERE p.stream_id = s.stream_id AND p.ts >= b.ts_from AND p.ts < b.ts_to
                 AND forwarder.visible(p.stored_by, b.upto) AND s.period @> p.received_at
              OFFSET 0) p
        UNION
        SELECT n.customer_id, n.stream_id, n.homebase_sn, n.method, n.out_medium,
               time_bucket(b.width, n.ts, TIMESTAMPTZ 'epoch'), b.width
          FROM forwarder.new_points(p_customers, p_seen, p_upto) n
          JOIN batches b ON b.customer_id = n.customer_id
         WHERE n.ts < b.ts_from
    ), inside AS (
        SELECT c.customer_id, c.stream_id, c.lo, c.width, c.method, c.out_medium, p.ts, p.value
          FROM cells c
          JOIN batches b ON b.customer_id = c.customer_id
          CROSS JOIN LATERAL (
              SELECT p.ts, p.value, p.received_at FROM forwarder.points p
               WHERE p.stream_id = c.stream_id AND p.ts >= c.lo AND p.ts < c.lo + c.width
                 AND forwarder.visible(p.stored_by, b.upto)
              OFFSET 0) p
         WHERE EXISTS (SELECT 1 FROM streams s
                        WHERE s.customer_id = c.customer_id AND s.stream_id = c.stream_id
                          AND s.period @> p.received_at)
    ), buckets AS (
        SELECT i.customer_id, i.stream_id, i.lo, max(i.width) AS width, max(i.method) AS method,
               max(i.out_medium) AS out_medium, last(i.value, i.ts) AS last_value,
               avg(i.value) AS mean_value
          FROM inside i
         GROUP BY 1, 2, 3
    ), edges AS (
        SELECT c.customer_id, c.stream_id, c.lo, c.width, e.ts, e.value
          FROM cells c
          JOIN batches b ON b.customer_id = c.customer_id
          CROSS JOIN LATERAL (
              (SELECT p.ts, p.value FROM forwarder.points p
                WHERE p.stream_id = c.stream_id AND p.ts < c.lo
                  AND forwarder.visible(p.stored_by, b.upto)
                  AND forwarder.stored_for(c.customer_id, c.homebase_sn, p.received_at)
                ORDER BY p.ts DESC LIMIT 1)
              UNION ALL
              (SELECT p.ts, p.value FROM forwarder.points p
                WHERE p.stream_id = c.stream_id AND p.ts >= c.lo + c.width
                  AND forwarder.visible(p.stored_by, b.upto)
                  AND forwarder.stored_for(c.customer_id, c.homebase_sn, p.received_at)
                ORDER BY p.ts LIMIT 1)
          ) e
         WHERE c.method = 'INTEGRAL'
    ), series AS (
        SELECT x.customer_id, x.stream_id, x.lo, x.width, x.ts, x.value,
               lead(x.ts) OVER w AS next_ts, lead(x.value) OVER w AS next_value
          FROM (SELECT i.customer_id, i.stream_id, i.lo, i.width, i.ts, i.value
                  FROM inside i WHERE i.method = 'INTEGRAL'
                UNION ALL
                SELECT * FROM edges) x
        WINDOW w AS (PARTITION BY x.customer_id, x.stream_id, x.lo ORDER BY x.ts)
    ), areas AS (
        SELECT g.customer_id, g.stream_id, g.lo,
               CASE
                   WHEN g.next_ts IS NULL THEN
                       CASE WHEN g.ts >= g.lo AND g.ts < g.lo + g.width
                            THEN g.value * extract(epoch FROM g.lo + g.width - g.ts)::float8
                            ELSE 0 END
                   WHEN c.hi > c.lo THEN
                       (2 * g.value + (g.next_value - g.value)
                            * (extract(epoch FROM c.lo - g.ts) + extract(epoch FROM c.hi - g.ts))::float8
                            / extract(epoch FROM g.next_ts - g.ts)::float8)
                       / 2 * extract(epoch FROM c.hi - c.lo)::float8
                   ELSE 0
               END AS area
          FROM series g
          CROSS JOIN LATERAL (SELECT greatest(g.ts, g.lo) AS lo,
                                     least(g.next_ts, g.lo + g.width) AS hi) c
    )
    SELECT b.customer_id, b.stream_id, b.method, b.out_medium, b.lo + b.width,
           CASE b.method WHEN 'LAST' THEN b.last_value
                         WHEN 'AVERAGE' THEN b.mean_value
                         ELSE coalesce(a.area, 0) / 3600 END
      FROM buckets b
      LEFT JOIN (SELECT customer_id, stream_id, lo, sum(area) AS area
                   FROM areas GROUP BY 1, 2, 3) a
             ON a.customer_id = b.customer_id AND a.stream_id = b.stream_id AND a.lo = b.lo
$$;
COMMENT ON FUNCTION forwarder.batch_aggregates(bigint[], timestamptz[], timestamptz[], integer[], text[], text[]) IS
    'Aggregated mode: per batch, data stream and interval to send, one point at the interval end by LAST, AVERAGE or INTEGRAL.';
