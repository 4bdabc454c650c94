-- The forwarder: customers, their delivery configuration, registration history, the delivery
-- state (cursor and pending batch) and the delivery log, and the SQL that selects, filters and
-- aggregates a customer's points for one interval. See docs/forwarder.md.

CREATE TABLE forwarder.customers (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name         text NOT NULL UNIQUE CHECK (name <> ''),
    token_sha256 bytea NOT NULL UNIQUE CHECK (length(token_sha256) = 32),
    created_at   timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE forwarder.customers IS 'Customers of the forwarder API, authenticated by a bearer token.';
COMMENT ON COLUMN forwarder.customers.id IS 'Customer id (forwarder.registrations.customer_id).';
COMMENT ON COLUMN forwarder.customers.name IS 'Unique human-readable name.';
COMMENT ON COLUMN forwarder.customers.token_sha256 IS 'SHA-256 of the API token; the token itself is shown once and never stored.';
COMMENT ON COLUMN forwarder.customers.created_at IS 'When the customer was added.';

CREATE TABLE forwarder.configs (
    customer_id bigint PRIMARY KEY REFERENCES forwarder.customers (id) ON DELETE CASCADE,
    interval_minutes integer NOT NULL CHECK (interval_minutes BETWEEN 1 AND 60),
    url         text NOT NULL CHECK (url ~ '^https?://'),
    username    text,
    password    text,
    format      text NOT NULL DEFAULT 'json' CHECK (format = 'json'),
    mode        text NOT NULL CHECK (mode IN ('all', 'aggregated')),
    filter_list text CHECK (filter_list IN ('allow', 'deny')),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CHECK (password IS NULL OR username IS NOT NULL)
);
COMMENT ON TABLE forwarder.configs IS 'The delivery configuration of each customer (POST /config); one row per customer.';
COMMENT ON COLUMN forwarder.configs.customer_id IS 'The configured customer.';
COMMENT ON COLUMN forwarder.configs.interval_minutes IS 'Minutes between deliveries (1..60); intervals are aligned to multiples of it since the Unix epoch.';
COMMENT ON COLUMN forwarder.configs.url IS 'Destination URL without user credentials.';
COMMENT ON COLUMN forwarder.configs.username IS 'User of the URL''s credentials (sent as HTTP Basic), null when none.';
COMMENT ON COLUMN forwarder.configs.password IS 'Password of the URL''s credentials (sent as HTTP Basic), null when none. Never logged.';
COMMENT ON COLUMN forwarder.configs.format IS 'Body format; json is the only one.';
COMMENT ON COLUMN forwarder.configs.mode IS 'all: every point; aggregated: one point per data stream and interval.';
COMMENT ON COLUMN forwarder.configs.filter_list IS 'allow: only streams matching a filter are sent; deny: streams matching one are not; null: no filter.';
COMMENT ON COLUMN forwarder.configs.updated_at IS 'When the configuration was last posted.';

CREATE TABLE forwarder.config_filters (
    customer_id bigint NOT NULL REFERENCES forwarder.configs (customer_id) ON DELETE CASCADE,
    position    integer NOT NULL CHECK (position >= 0),
    medium      integer,
    indexes     integer[],
    obis        text,
    PRIMARY KEY (customer_id, position),
    CHECK (medium IS NOT NULL OR indexes IS NOT NULL OR obis IS NOT NULL),
    CHECK (indexes IS NULL OR medium IS NOT NULL)
);
COMMENT ON TABLE forwarder.config_filters IS 'Filter objects of the configuration''s allow_list or deny_list (forwarder.configs.filter_list says which). A stream matches a filter when every field the filter has matches.';
COMMENT ON COLUMN forwarder.config_filters.customer_id IS 'The configured customer.';
COMMENT ON COLUMN forwarder.config_filters.position IS 'Position of the filter in the posted list.';
COMMENT ON COLUMN forwarder.config_filters.medium IS 'Medium ID the stream must have (its own medium, before any INTEGRAL remapping); null: any.';
COMMENT ON COLUMN forwarder.config_filters.indexes IS 'Indexes of which the stream''s index must be one; null: any. Only with medium.';
COMMENT ON COLUMN forwarder.config_filters.obis IS 'OBIS code the stream must have, normalised (1-0:1.8.0); null: any.';

CREATE TABLE forwarder.media_methods (
    medium          integer PRIMARY KEY,
    method          text NOT NULL CHECK (method IN ('LAST', 'AVERAGE', 'INTEGRAL')),
    integral_medium integer,
    CHECK ((method = 'INTEGRAL') = (integral_medium IS NOT NULL))
);
COMMENT ON TABLE forwarder.media_methods IS 'How aggregated mode aggregates each medium (docs/devices.md); media not listed (and unknown OBIS codes) use LAST.';
COMMENT ON COLUMN forwarder.media_methods.medium IS 'Medium ID of the data stream.';
COMMENT ON COLUMN forwarder.media_methods.method IS 'LAST (latest point), AVERAGE (mean of the points) or INTEGRAL (energy within the interval, in unit x hours).';
COMMENT ON COLUMN forwarder.media_methods.integral_medium IS 'INTEGRAL: the medium the aggregated point carries (the spec''s remap table).';
INSERT INTO forwarder.media_methods (medium, method, integral_medium) VALUES
    (1, 'INTEGRAL', 22), (12, 'INTEGRAL', 22), (13, 'INTEGRAL', 23),
    (14, 'INTEGRAL', 24), (18, 'INTEGRAL', 28),
    (2, 'AVERAGE', NULL), (3, 'AVERAGE', NULL), (4, 'AVERAGE', NULL),
    (5, 'AVERAGE', NULL), (6, 'AVERAGE', NULL), (40, 'AVERAGE', NULL),
    (7, 'LAST', NULL), (8, 'LAST', NULL), (9, 'LAST', NULL), (22, 'LAST', NULL),
    (23, 'LAST', NULL), (24, 'LAST', NULL), (28, 'LAST', NULL), (41, 'LAST', NULL);

-- Registration history: forwarder.registrations holds the current registrations (the data API
-- and ingest read it); the periods below remember every one, so that a delivery sends a point
-- only when its homebase was registered to that customer at the point's time.
CREATE TABLE forwarder.registration_periods (
    homebase_sn text NOT NULL CHECK (homebase_sn ~ '^[0-9A-F]{16}$'),
    customer_id bigint NOT NULL,
    period      tstzrange NOT NULL CHECK (NOT isempty(period)),
    EXCLUDE USING gist (homebase_sn WITH =, period WITH &&)
);
COMMENT ON TABLE forwarder.registration_periods IS 'Every registration of a homebase with the forwarder, current (open above) or ended; they never overlap. Maintained by triggers on forwarder.registrations.';
COMMENT ON COLUMN forwarder.registration_periods.homebase_sn IS 'Serial number of the homebase.';
COMMENT ON COLUMN forwarder.registration_periods.customer_id IS 'The customer it was registered to.';
COMMENT ON COLUMN forwarder.registration_periods.period IS '[registered, unregistered): points measured within it are the customer''s.';
CREATE INDEX registration_periods_customer ON forwarder.registration_periods USING gist (customer_id, period);

CREATE FUNCTION forwarder.registration_started() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO forwarder.registration_periods (homebase_sn, customer_id, period)
    VALUES (NEW.homebase_sn, NEW.customer_id, tstzrange(NEW.registered_at, NULL, '[)'));
    RETURN NULL;
END $$;
COMMENT ON FUNCTION forwarder.registration_started() IS 'Opens a registration period when a homebase is registered.';

CREATE FUNCTION forwarder.registration_ended() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE TRIGGER registration_started AFTER INSERT ON forwarder.registrations
    FOR EACH ROW EXECUTE FUNCTION forwarder.registration_started();
CREATE TRIGGER registration_ended AFTER DELETE ON forwarder.registrations
    FOR EACH ROW EXECUTE FUNCTION forwarder.registration_ended();

-- Registrations made before this migration get their period now.
INSERT INTO forwarder.registration_periods (homebase_sn, customer_id, period)
SELECT homebase_sn, customer_id, tstzrange(registered_at, NULL, '[)') FROM forwarder.registrations;

CREATE FUNCTION forwarder.interval_end(p_cursor timestamptz, p_minutes integer)
RETURNS timestamptz LANGUAGE sql IMMUTABLE AS $$
    SELECT to_timestamp((floor(extract(epoch FROM p_cursor) / (p_minutes * 60)) + 1) * (p_minutes * 60))
$$;
COMMENT ON FUNCTION forwarder.interval_end(timestamptz, integer) IS
    'End of the delivery interval after a cursor: the next multiple of p_minutes since the Unix epoch.';

CREATE TABLE forwarder.delivery_state (
    customer_id     bigint PRIMARY KEY REFERENCES forwarder.customers (id) ON DELETE CASCADE,
    delivered_to    timestamptz NOT NULL,
    batch_id        uuid UNIQUE,
    batch_from      timestamptz,
    batch_to        timestamptz,
    batch_mode      text CHECK (batch_mode IN ('all', 'aggregated')),
    batch_cutoff    timestamptz,
    batch_body      bytea,
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz,
    CHECK ((batch_id IS NULL) = (batch_from IS NULL) AND (batch_id IS NULL) = (batch_to IS NULL)
           AND (batch_id IS NULL) = (batch_mode IS NULL)
           AND (batch_id IS NULL) = (batch_cutoff IS NULL)),
    CHECK (batch_from IS NULL OR (batch_from = delivered_to AND batch_from < batch_to))
);
COMMENT ON TABLE forwarder.delivery_state IS 'Per customer: the cursor (intervals before it are finished) and the batch being delivered, persisted before its first attempt so that retries and restarts send the same id.';
COMMENT ON COLUMN forwarder.delivery_state.customer_id IS 'The customer.';
COMMENT ON COLUMN forwarder.delivery_state.delivered_to IS 'Cursor: every interval ending at or before it was delivered, dropped (4xx) or empty.';
COMMENT ON COLUMN forwarder.delivery_state.batch_id IS 'Id (and Idempotency-Key) of the pending batch; null when none.';
COMMENT ON COLUMN forwarder.delivery_state.batch_from IS 'Start of the pending batch''s interval (inclusive); equals delivered_to.';
COMMENT ON COLUMN forwarder.delivery_state.batch_to IS 'End of the pending batch''s interval (exclusive).';
COMMENT ON COLUMN forwarder.delivery_state.batch_mode IS 'Mode the pending batch was made in.';
COMMENT ON COLUMN forwarder.delivery_state.batch_cutoff IS 'Points received after this instant are not part of the pending batch, so a rebuilt body is the same.';
COMMENT ON COLUMN forwarder.delivery_state.batch_body IS 'The encoded body, stored at the first failed attempt; every retry sends these bytes.';
COMMENT ON COLUMN forwarder.delivery_state.attempts IS 'Failed attempts of the pending batch so far.';
COMMENT ON COLUMN forwarder.delivery_state.next_attempt_at IS 'When the pending batch is tried next (backoff).';

CREATE TABLE forwarder.delivery_log (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    customer_id  bigint NOT NULL REFERENCES forwarder.customers (id) ON DELETE CASCADE,
    batch_id     uuid NOT NULL,
    batch_from   timestamptz NOT NULL,
    batch_to     timestamptz NOT NULL,
    attempt      integer NOT NULL CHECK (attempt >= 1),
    outcome      text NOT NULL CHECK (outcome IN ('delivered', 'dropped', 'retry')),
    status       integer,
    error        text,
    points       integer NOT NULL,
    attempted_at timestamptz NOT NULL,
    duration_ms  double precision NOT NULL
);
COMMENT ON TABLE forwarder.delivery_log IS 'Every delivery attempt and its outcome, written in the transaction that moves the cursor (or schedules the retry).';
COMMENT ON COLUMN forwarder.delivery_log.id IS 'Row id, increasing in attempt order.';
COMMENT ON COLUMN forwarder.delivery_log.customer_id IS 'The customer.';
COMMENT ON COLUMN forwarder.delivery_log.batch_id IS 'The batch (its Idempotency-Key).';
COMMENT ON COLUMN forwarder.delivery_log.batch_from IS 'Start of the batch''s interval.';
COMMENT ON COLUMN forwarder.delivery_log.batch_to IS 'End of the batch''s interval.';
COMMENT ON COLUMN forwarder.delivery_log.attempt IS '1 for the first attempt of the batch, then 2, 3...';
COMMENT ON COLUMN forwarder.delivery_log.outcome IS 'delivered (2xx), dropped (4xx: the next batch follows) or retry (1xx, 3xx, 5xx, network error, timeout).';
COMMENT ON COLUMN forwarder.delivery_log.status IS 'HTTP status answered; null for a network error or timeout.';
COMMENT ON COLUMN forwarder.delivery_log.error IS 'Network error or timeout, by kind; never the URL or its credentials.';
COMMENT ON COLUMN forwarder.delivery_log.points IS 'Points in the batch.';
COMMENT ON COLUMN forwarder.delivery_log.attempted_at IS 'When the request was sent.';
COMMENT ON COLUMN forwarder.delivery_log.duration_ms IS 'Milliseconds until the answer, error or timeout.';
CREATE INDEX delivery_log_customer ON forwarder.delivery_log (customer_id, id);

-- The SQL below works on many batches at once: each batch is (customer, from, to, cutoff),
-- given as four parallel arrays, so that one statement (planned once) makes the batches of
-- every customer due at the same time.

-- The data streams each batch covers: streams of homebases registered to the batch's customer
-- at some time in [from, to), passing the configured allow or deny list, with the aggregation
-- method of their medium.
CREATE FUNCTION forwarder.batch_streams(
    p_customers bigint[], p_from timestamptz[], p_to timestamptz[], p_cutoff timestamptz[]
) RETURNS TABLE (customer_id bigint, ts_from timestamptz, ts_to timestamptz, cutoff timestamptz,
                 stream_id bigint, homebase_sn text, channel integer, device integer,
                 medium integer, idx integer, obis text, method text, out_medium integer)
LANGUAGE sql STABLE AS $$
    SELECT d.customer_id, d.ts_from, d.ts_to, d.cutoff,
           s.id, s.homebase_sn, s.channel, s.device, s.medium, s.idx, s.obis,
           coalesce(m.method, 'LAST'),
           CASE WHEN m.method = 'INTEGRAL' THEN m.integral_medium ELSE s.medium END
      FROM unnest(p_customers, p_from, p_to, p_cutoff) AS d(customer_id, ts_from, ts_to, cutoff)
      JOIN forwarder.configs c ON c.customer_id = d.customer_id
      JOIN LATERAL (SELECT DISTINCT r.homebase_sn FROM forwarder.registration_periods r
                     WHERE r.customer_id = d.customer_id
                       AND r.period && tstzrange(d.ts_from, d.ts_to, '[)')) h ON true
      JOIN forwarder.streams s ON s.homebase_sn = h.homebase_sn
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
COMMENT ON FUNCTION forwarder.batch_streams(bigint[], timestamptz[], timestamptz[], timestamptz[]) IS
    'Streams each batch (customer, from, to, cutoff) covers: registered to the customer then, filters applied.';

-- Points of those streams measured in [from, to) while registered to the batch's customer,
-- received up to the batch's cutoff.
CREATE FUNCTION forwarder.batch_points(
    p_customers bigint[], p_from timestamptz[], p_to timestamptz[], p_cutoff timestamptz[]
) RETURNS TABLE (customer_id bigint, stream_id bigint, ts timestamptz, value double precision)
LANGUAGE sql STABLE AS $$
    SELECT s.customer_id, p.stream_id, p.ts, p.value
      FROM forwarder.batch_streams(p_customers, p_from, p_to, p_cutoff) s
      JOIN forwarder.points p ON p.stream_id = s.stream_id
     WHERE p.ts >= s.ts_from AND p.ts < s.ts_to AND p.received_at <= s.cutoff
       AND EXISTS (SELECT 1 FROM forwarder.registration_periods r
                    WHERE r.homebase_sn = s.homebase_sn AND r.customer_id = s.customer_id
                      AND r.period @> p.ts)
$$;
COMMENT ON FUNCTION forwarder.batch_points(bigint[], timestamptz[], timestamptz[], timestamptz[]) IS
    'Points of each batch (customer, from, to, cutoff): measured in [from, to) while registered to the customer, received up to the cutoff.';

-- Aggregated mode: per batch one point per data stream with points in the interval, stamped
-- at its end. INTEGRAL: the trapezoid integral of the linear interpolation between consecutive
-- points, clipped to [from, to): the last point before the interval and the first at or after
-- its end (if received by the cutoff, and measured while registered) are interpolated at the
-- boundaries; when no later point is known the last value is held up to the end. Values are
-- per second, so / 3600 gives unit-hours (W -> Wh).
CREATE FUNCTION forwarder.batch_aggregates(
    p_customers bigint[], p_from timestamptz[], p_to timestamptz[], p_cutoff timestamptz[]
) RETURNS TABLE (customer_id bigint, stream_id bigint, method text, medium integer,
                 ts timestamptz, value double precision)
LANGUAGE sql STABLE AS $$
    WITH streams AS MATERIALIZED (
        SELECT * FROM forwarder.batch_streams(p_customers, p_from, p_to, p_cutoff)
    ), inside AS (
        SELECT s.customer_id, s.stream_id, s.ts_from, s.ts_to, s.method, s.out_medium, p.ts,
               p.value
          FROM streams s
          JOIN forwarder.points p ON p.stream_id = s.stream_id
         WHERE p.ts >= s.ts_from AND p.ts < s.ts_to AND p.received_at <= s.cutoff
           AND EXISTS (SELECT 1 FROM forwarder.registration_periods r
                        WHERE r.homebase_sn = s.homebase_sn AND r.customer_id = s.customer_id
                          AND r.period @> p.ts)
    ), buckets AS (
        SELECT i.customer_id, i.stream_id, i.method, i.out_medium,
               time_bucket(i.ts_to - i.ts_from, i.ts, i.ts_from) + (i.ts_to - i.ts_from) AS ts,
               last(i.value, i.ts) AS last_value, avg(i.value) AS mean_value
          FROM inside i
         GROUP BY 1, 2, 3, 4, 5
    ), edges AS (
        SELECT s.customer_id, s.stream_id, s.ts_from, s.ts_to, e.ts, e.value
          FROM streams s
          JOIN buckets b ON b.customer_id = s.customer_id AND b.stream_id = s.stream_id
          CROSS JOIN LATERAL (
              (SELECT p.ts, p.value FROM forwarder.points p
                WHERE p.stream_id = s.stream_id AND p.ts < s.ts_from AND p.received_at <= s.cutoff
                  AND EXISTS (SELECT 1 FROM forwarder.registration_periods r
                               WHERE r.homebase_sn = s.homebase_sn
                                 AND r.customer_id = s.customer_id AND r.period @> p.ts)
                ORDER BY p.ts DESC LIMIT 1)
              UNION ALL
              (SELECT p.ts, p.value FROM forwarder.points p
                WHERE p.stream_id = s.stream_id AND p.ts >= s.ts_to AND p.received_at <= s.cutoff
                  AND EXISTS (SELECT 1 FROM forwarder.registration_periods r
                               WHERE r.homebase_sn = s.homebase_sn
                                 AND r.customer_id = s.customer_id AND r.period @> p.ts)
                ORDER BY p.ts LIMIT 1)
          ) e
         WHERE s.method = 'INTEGRAL'
    ), series AS (
        SELECT x.customer_id, x.stream_id, x.ts_from, x.ts_to, x.ts, x.value,
               lead(x.ts) OVER w AS next_ts, lead(x.value) OVER w AS next_value
          FROM (SELECT i.customer_id, i.stream_id, i.ts_from, i.ts_to, i.ts, i.value
                  FROM inside i WHERE i.method = 'INTEGRAL'
                UNION ALL
                SELECT * FROM edges) x
        WINDOW w AS (PARTITION BY x.customer_id, x.stream_id ORDER BY x.ts)
    ), areas AS (
        SELECT g.customer_id, g.stream_id,
               CASE
                   WHEN g.next_ts IS NULL THEN
                       CASE WHEN g.ts >= g.ts_from AND g.ts < g.ts_to
                            THEN g.value * extract(epoch FROM g.ts_to - g.ts)::float8 ELSE 0 END
                   WHEN c.hi > c.lo THEN
                       (2 * g.value + (g.next_value - g.value)
                            * (extract(epoch FROM c.lo - g.ts) + extract(epoch FROM c.hi - g.ts))::float8
                            / extract(epoch FROM g.next_ts - g.ts)::float8)
                       / 2 * extract(epoch FROM c.hi - c.lo)::float8
                   ELSE 0
               END AS area
          FROM series g
          CROSS JOIN LATERAL (SELECT greatest(g.ts, g.ts_from) AS lo,
                                     least(g.next_ts, g.ts_to) AS hi) c
    )
    -- One pass over the buckets and the trapezoid areas, grouped per batch and stream.
    SELECT u.customer_id, u.stream_id, max(u.method), max(u.out_medium), max(u.ts),
           CASE max(u.method) WHEN 'LAST' THEN max(u.last_value)
                              WHEN 'AVERAGE' THEN max(u.mean_value)
                              ELSE coalesce(sum(u.area), 0) / 3600 END
      FROM (SELECT b.customer_id, b.stream_id, b.method, b.out_medium, b.ts, b.last_value,
                   b.mean_value, NULL::float8 AS area
              FROM buckets b
            UNION ALL
            SELECT a.customer_id, a.stream_id, NULL, NULL, NULL, NULL, NULL, a.area
              FROM areas a) u
     GROUP BY u.customer_id, u.stream_id
$$;
COMMENT ON FUNCTION forwarder.batch_aggregates(bigint[], timestamptz[], timestamptz[], timestamptz[]) IS
    'Aggregated mode: per batch and data stream one point at the interval end by LAST, AVERAGE or INTEGRAL (energy in the interval, trapezoid, clipped).';
