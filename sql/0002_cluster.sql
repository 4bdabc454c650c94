-- The cluster's data: users, feeds, streams, their time-bound configurations and points.

CREATE TABLE cluster.users (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name         text NOT NULL UNIQUE CHECK (name <> ''),
    token_sha256 bytea NOT NULL UNIQUE CHECK (length(token_sha256) = 32),
    is_admin     boolean NOT NULL DEFAULT false,
    created_at   timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE cluster.users IS 'People and programs that read the data API with a bearer token.';
COMMENT ON COLUMN cluster.users.id IS 'User id, as in /users/{user_id}/...';
COMMENT ON COLUMN cluster.users.name IS 'Unique human-readable name.';
COMMENT ON COLUMN cluster.users.token_sha256 IS 'SHA-256 of the API token; the token itself is shown once and never stored.';
COMMENT ON COLUMN cluster.users.is_admin IS 'Admins see every user''s feeds.';
COMMENT ON COLUMN cluster.users.created_at IS 'When the user was added.';

CREATE TABLE cluster.feeds (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    owner_id          bigint NOT NULL REFERENCES cluster.users (id),
    homebase_sn       text NOT NULL UNIQUE CHECK (homebase_sn ~ '^[0-9A-F]{16}$'),
    subscription_from timestamptz NOT NULL,
    subscription_to   timestamptz NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),
    CHECK (subscription_from < subscription_to)
);
COMMENT ON TABLE cluster.feeds IS 'Everything one homebase sends, owned by one user.';
COMMENT ON COLUMN cluster.feeds.id IS 'Feed id, as in /feeds/{feed_id}.';
COMMENT ON COLUMN cluster.feeds.owner_id IS 'The user who sees this feed.';
COMMENT ON COLUMN cluster.feeds.homebase_sn IS 'Serial number of the homebase whose data this feed holds.';
COMMENT ON COLUMN cluster.feeds.subscription_from IS 'Subscription valid from (inclusive).';
COMMENT ON COLUMN cluster.feeds.subscription_to IS 'Subscription valid up to (exclusive).';
COMMENT ON COLUMN cluster.feeds.created_at IS 'When the feed was added.';
CREATE INDEX feeds_owner ON cluster.feeds (owner_id);

CREATE FUNCTION cluster.is_time_zone(name text) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM pg_timezone_names WHERE pg_timezone_names.name = is_time_zone.name)
$$;
COMMENT ON FUNCTION cluster.is_time_zone(text) IS 'True for names of the IANA time zone database.';

CREATE TABLE cluster.feed_configs (
    id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    feed_id  bigint NOT NULL REFERENCES cluster.feeds (id) ON DELETE CASCADE,
    title    text NOT NULL CHECK (title <> ''),
    timezone text NOT NULL CHECK (cluster.is_time_zone(timezone)),
    validity tstzrange NOT NULL CHECK (NOT isempty(validity)),
    EXCLUDE USING gist (feed_id WITH =, validity WITH &&)
);
COMMENT ON TABLE cluster.feed_configs IS 'Feed configuration periods; they never overlap, the current one is unbounded above.';
COMMENT ON COLUMN cluster.feed_configs.id IS 'Row id.';
COMMENT ON COLUMN cluster.feed_configs.feed_id IS 'The configured feed.';
COMMENT ON COLUMN cluster.feed_configs.title IS 'Title of the feed in this period.';
COMMENT ON COLUMN cluster.feed_configs.timezone IS 'IANA time zone of the homebase in this period.';
COMMENT ON COLUMN cluster.feed_configs.validity IS 'Period [valid_from, valid_to); an infinite bound means unbounded.';

CREATE TABLE cluster.streams (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    feed_id    bigint NOT NULL REFERENCES cluster.feeds (id) ON DELETE CASCADE,
    type       text NOT NULL CHECK (type IN ('raw', 'processed', 'system')),
    channel    integer NOT NULL CHECK (channel >= 0),
    device     integer,
    medium     integer,
    idx        integer CHECK (idx >= 1),
    combined   boolean,
    source     text,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (id, type),
    CHECK (CASE type
        WHEN 'raw' THEN device IS NOT NULL AND medium IS NOT NULL AND combined IS NULL
                        AND source IS NULL
        WHEN 'processed' THEN combined IS NOT NULL AND device IS NULL AND medium IS NULL
                        AND source IS NULL
        WHEN 'system' THEN source IS NOT NULL AND combined IS NULL AND medium IS NULL
    END)
);
COMMENT ON TABLE cluster.streams IS 'Series of points of one feed: raw (measured), processed (made by the engine) or system.';
COMMENT ON COLUMN cluster.streams.id IS 'Stream id, as in /feeds/{feed_id}/streams/{stream_id}.';
COMMENT ON COLUMN cluster.streams.feed_id IS 'The feed the stream belongs to.';
COMMENT ON COLUMN cluster.streams.type IS 'raw, processed or system.';
COMMENT ON COLUMN cluster.streams.channel IS 'Homebase channel the producing sensor is paired to.';
COMMENT ON COLUMN cluster.streams.device IS 'raw and system: device ID of the producing sensor (see docs/devices.md).';
COMMENT ON COLUMN cluster.streams.medium IS 'raw: medium ID of the measured quantity (see docs/devices.md).';
COMMENT ON COLUMN cluster.streams.idx IS 'Index (1..n) when a sensor produces several streams of one kind, e.g. phases; null otherwise.';
COMMENT ON COLUMN cluster.streams.combined IS 'processed: true when computed by combining several streams (e.g. a sum over phases).';
COMMENT ON COLUMN cluster.streams.source IS 'system: what produced it, e.g. medium:40 (signal strength) or obis:1-0:99.1.0 (an unknown OBIS code).';
COMMENT ON COLUMN cluster.streams.created_at IS 'When the stream first appeared.';
CREATE UNIQUE INDEX streams_raw_identity ON cluster.streams (feed_id, channel, device, medium, idx)
    NULLS NOT DISTINCT WHERE type = 'raw';
CREATE UNIQUE INDEX streams_processed_identity ON cluster.streams (feed_id, channel, idx, combined)
    NULLS NOT DISTINCT WHERE type = 'processed';
CREATE UNIQUE INDEX streams_system_identity ON cluster.streams (feed_id, channel, device, source, idx)
    NULLS NOT DISTINCT WHERE type = 'system';
CREATE INDEX streams_feed ON cluster.streams (feed_id, type, channel);

CREATE TABLE cluster.stream_configs (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    stream_id   bigint NOT NULL,
    stream_type text NOT NULL DEFAULT 'processed' CHECK (stream_type = 'processed'),
    title       text NOT NULL CHECK (title <> ''),
    medium      text CHECK (medium IN ('power', 'gas', 'water', 'temperature')),
    unit        text NOT NULL,
    validity    tstzrange NOT NULL CHECK (NOT isempty(validity)),
    FOREIGN KEY (stream_id, stream_type) REFERENCES cluster.streams (id, type) ON DELETE CASCADE,
    EXCLUDE USING gist (stream_id WITH =, validity WITH &&)
);
COMMENT ON TABLE cluster.stream_configs IS 'Configuration periods of processed streams; they never overlap, the current one is unbounded above.';
COMMENT ON COLUMN cluster.stream_configs.id IS 'Row id.';
COMMENT ON COLUMN cluster.stream_configs.stream_id IS 'The configured stream.';
COMMENT ON COLUMN cluster.stream_configs.stream_type IS 'Always processed: only processed streams have configurations.';
COMMENT ON COLUMN cluster.stream_configs.title IS 'Title of the stream in this period.';
COMMENT ON COLUMN cluster.stream_configs.medium IS 'power, gas, water or temperature; null: the engine does not process the stream in this period.';
COMMENT ON COLUMN cluster.stream_configs.unit IS 'Unit for display.';
COMMENT ON COLUMN cluster.stream_configs.validity IS 'Period [valid_from, valid_to); an infinite bound means unbounded.';

-- Points: one hypertable per stream type. The primary key makes a resent point a no-op and
-- serves the data API's newest-first range scans; no separate time index is kept.
CREATE TABLE cluster.raw_points (
    stream_id bigint NOT NULL,
    ts        timestamptz NOT NULL,
    value     double precision NOT NULL CHECK (value > '-Infinity' AND value < 'Infinity'),
    PRIMARY KEY (stream_id, ts)
);
SELECT create_hypertable('cluster.raw_points', by_range('ts', INTERVAL '1 day'),
                         create_default_indexes => false);
COMMENT ON TABLE cluster.raw_points IS 'Measured points of raw streams (hypertable).';
COMMENT ON COLUMN cluster.raw_points.stream_id IS 'The raw stream (cluster.streams.id).';
COMMENT ON COLUMN cluster.raw_points.ts IS 'Time of measurement.';
COMMENT ON COLUMN cluster.raw_points.value IS 'Measured value in the medium''s unit; finite.';

CREATE TABLE cluster.processed_points (
    stream_id bigint NOT NULL,
    ts        timestamptz NOT NULL,
    value     double precision NOT NULL CHECK (value > '-Infinity' AND value < 'Infinity'),
    PRIMARY KEY (stream_id, ts)
);
SELECT create_hypertable('cluster.processed_points', by_range('ts', INTERVAL '7 days'),
                         create_default_indexes => false);
COMMENT ON TABLE cluster.processed_points IS 'Points made by the engine, at 90 s bucket starts (hypertable).';
COMMENT ON COLUMN cluster.processed_points.stream_id IS 'The processed stream (cluster.streams.id).';
COMMENT ON COLUMN cluster.processed_points.ts IS 'Start of the 90 s bucket, aligned to the epoch.';
COMMENT ON COLUMN cluster.processed_points.value IS 'Consumption, cost or mean within the bucket.';

CREATE TABLE cluster.system_points (
    stream_id bigint NOT NULL,
    ts        timestamptz NOT NULL,
    value     double precision NOT NULL CHECK (value > '-Infinity' AND value < 'Infinity'),
    PRIMARY KEY (stream_id, ts)
);
SELECT create_hypertable('cluster.system_points', by_range('ts', INTERVAL '7 days'),
                         create_default_indexes => false);
COMMENT ON TABLE cluster.system_points IS 'Points of system streams: signal strength, battery, unknown media and OBIS codes (hypertable).';
COMMENT ON COLUMN cluster.system_points.stream_id IS 'The system stream (cluster.streams.id).';
COMMENT ON COLUMN cluster.system_points.ts IS 'Time of measurement.';
COMMENT ON COLUMN cluster.system_points.value IS 'Value as the device sent it; finite.';

-- Forwarder registrations hide a homebase's feed from the data API while they last.
CREATE TABLE forwarder.registrations (
    homebase_sn   text PRIMARY KEY CHECK (homebase_sn ~ '^[0-9A-F]{16}$'),
    customer_id   bigint NOT NULL,
    registered_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE forwarder.registrations IS 'Homebases registered with the forwarder; their feeds leave the data API meanwhile.';
COMMENT ON COLUMN forwarder.registrations.homebase_sn IS 'Serial number of the registered homebase.';
COMMENT ON COLUMN forwarder.registrations.customer_id IS 'The forwarder customer it is registered to.';
COMMENT ON COLUMN forwarder.registrations.registered_at IS 'When the registration took effect.';

-- Setting a configuration "from an instant on": periods starting at or after the instant go,
-- the period holding the instant ends there, and a new current period starts at it. One
-- statement, so concurrent changes of one feed or stream serialise on its row lock.
CREATE FUNCTION cluster.set_feed_config(
    p_feed_id bigint, p_from timestamptz, p_title text, p_timezone text
) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_from timestamptz := nullif(p_from, '-infinity');  -- -infinity or NULL: from the start
BEGIN
    PERFORM 1 FROM cluster.feeds WHERE id = p_feed_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'feed % does not exist', p_feed_id USING ERRCODE = 'no_data_found';
    END IF;
    DELETE FROM cluster.feed_configs
     WHERE feed_id = p_feed_id
       AND (v_from IS NULL OR (NOT lower_inf(validity) AND lower(validity) >= v_from));
    UPDATE cluster.feed_configs SET validity = tstzrange(lower(validity), v_from, '[)')
     WHERE feed_id = p_feed_id AND v_from IS NOT NULL AND validity @> v_from;
    INSERT INTO cluster.feed_configs (feed_id, title, timezone, validity)
    VALUES (p_feed_id, p_title, p_timezone, tstzrange(v_from, NULL, '[)'));
END $$;
COMMENT ON FUNCTION cluster.set_feed_config(bigint, timestamptz, text, text) IS
    'Make (title, timezone) the feed''s configuration from p_from on.';

CREATE FUNCTION cluster.set_stream_config(
    p_stream_id bigint, p_from timestamptz, p_title text, p_medium text, p_unit text
) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_from timestamptz := nullif(p_from, '-infinity');  -- -infinity or NULL: from the start
BEGIN
    PERFORM 1 FROM cluster.streams WHERE id = p_stream_id AND type = 'processed' FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'processed stream % does not exist', p_stream_id
            USING ERRCODE = 'no_data_found';
    END IF;
    DELETE FROM cluster.stream_configs
     WHERE stream_id = p_stream_id
       AND (v_from IS NULL OR (NOT lower_inf(validity) AND lower(validity) >= v_from));
    UPDATE cluster.stream_configs SET validity = tstzrange(lower(validity), v_from, '[)')
     WHERE stream_id = p_stream_id AND v_from IS NOT NULL AND validity @> v_from;
    INSERT INTO cluster.stream_configs (stream_id, title, medium, unit, validity)
    VALUES (p_stream_id, p_title, p_medium, p_unit, tstzrange(v_from, NULL, '[)'));
END $$;
COMMENT ON FUNCTION cluster.set_stream_config(bigint, timestamptz, text, text, text) IS
    'Make (title, medium, unit) the processed stream''s configuration from p_from on.';

-- Views for analysts: each point with its feed, stream and the configuration valid at its time.
CREATE VIEW cluster.raw_readings AS
SELECT p.ts, p.value, f.id AS feed_id, f.homebase_sn, fc.title AS feed_title, fc.timezone,
       s.id AS stream_id, s.channel, s.device, s.medium AS medium_id, s.idx AS index
  FROM cluster.raw_points p
  JOIN cluster.streams s ON s.id = p.stream_id
  JOIN cluster.feeds f ON f.id = s.feed_id
  LEFT JOIN cluster.feed_configs fc ON fc.feed_id = f.id AND fc.validity @> p.ts;
COMMENT ON VIEW cluster.raw_readings IS 'Raw points with feed title, time zone, channel, device and medium ID valid at each point''s time.';

CREATE VIEW cluster.processed_readings AS
SELECT p.ts, p.value, f.id AS feed_id, f.homebase_sn, fc.title AS feed_title, fc.timezone,
       s.id AS stream_id, s.channel, s.idx AS index, s.combined,
       sc.title AS stream_title, sc.medium, sc.unit
  FROM cluster.processed_points p
  JOIN cluster.streams s ON s.id = p.stream_id
  JOIN cluster.feeds f ON f.id = s.feed_id
  LEFT JOIN cluster.feed_configs fc ON fc.feed_id = f.id AND fc.validity @> p.ts
  LEFT JOIN cluster.stream_configs sc ON sc.stream_id = s.id AND sc.validity @> p.ts;
COMMENT ON VIEW cluster.processed_readings IS 'Processed points with feed title and the stream configuration (title, medium, unit) valid at each point''s time.';

CREATE VIEW cluster.system_readings AS
SELECT p.ts, p.value, f.id AS feed_id, f.homebase_sn, fc.title AS feed_title, fc.timezone,
       s.id AS stream_id, s.channel, s.device, s.source, s.idx AS index
  FROM cluster.system_points p
  JOIN cluster.streams s ON s.id = p.stream_id
  JOIN cluster.feeds f ON f.id = s.feed_id
  LEFT JOIN cluster.feed_configs fc ON fc.feed_id = f.id AND fc.validity @> p.ts;
COMMENT ON VIEW cluster.system_readings IS 'System points with feed title, channel, device and source.';

CREATE VIEW cluster.readings AS
SELECT ts, value, feed_id, homebase_sn, feed_title, timezone, stream_id, 'raw' AS stream_type,
       channel, index, medium_id::text AS medium, NULL::text AS stream_title, NULL::text AS unit
  FROM cluster.raw_readings
UNION ALL
SELECT ts, value, feed_id, homebase_sn, feed_title, timezone, stream_id, 'processed',
       channel, index, medium, stream_title, unit
  FROM cluster.processed_readings
UNION ALL
SELECT ts, value, feed_id, homebase_sn, feed_title, timezone, stream_id, 'system',
       channel, index, source, NULL, NULL
  FROM cluster.system_readings;
COMMENT ON VIEW cluster.readings IS 'All points of all types in one view; medium is the raw medium ID, the processed medium name or the system source.';
