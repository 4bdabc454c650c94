-- What ingestion writes besides points: the engine's work queue, device events, homebase
-- presence, and the forwarder's own points for registered homebases.

CREATE TABLE cluster.dirty_ranges (
    stream_id   bigint NOT NULL,
    ts_from     timestamptz NOT NULL,
    ts_to       timestamptz NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    CHECK (ts_from <= ts_to)
);
COMMENT ON TABLE cluster.dirty_ranges IS 'Work queue of the engine: raw time ranges written since they were last processed. Ingest adds a row per stream and batch in the transaction that writes the points; the engine deletes the rows it has processed.';
COMMENT ON COLUMN cluster.dirty_ranges.stream_id IS 'The raw (or, for configuration changes, processed) stream whose data changed.';
COMMENT ON COLUMN cluster.dirty_ranges.ts_from IS 'Earliest point time written (inclusive).';
COMMENT ON COLUMN cluster.dirty_ranges.ts_to IS 'Latest point time written (inclusive).';
COMMENT ON COLUMN cluster.dirty_ranges.recorded_at IS 'When the range was recorded; the engine''s lag is measured from it.';
CREATE INDEX dirty_ranges_recorded ON cluster.dirty_ranges (recorded_at);

CREATE TABLE cluster.device_events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    device_sn   text NOT NULL CHECK (device_sn ~ '^[0-9A-F]{16}$'),
    ts          timestamptz NOT NULL,
    event       text NOT NULL,
    phases      boolean[] CHECK (phases IS NULL OR cardinality(phases) = 3),
    received_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (device_sn, ts, event)
);
COMMENT ON TABLE cluster.device_events IS 'Events sent by CoAP devices (POWER_CHANGE); the notification rules read them.';
COMMENT ON COLUMN cluster.device_events.id IS 'Row id, increasing in arrival order.';
COMMENT ON COLUMN cluster.device_events.device_sn IS 'Serial number of the sending device.';
COMMENT ON COLUMN cluster.device_events.ts IS 'Time of the event, as the device reported it.';
COMMENT ON COLUMN cluster.device_events.event IS 'Event type; POWER_CHANGE is the only one defined.';
COMMENT ON COLUMN cluster.device_events.phases IS 'POWER_CHANGE: power present per phase L1..L3.';
COMMENT ON COLUMN cluster.device_events.received_at IS 'When the data server stored it.';

CREATE TABLE cluster.homebase_presence (
    homebase_sn  text PRIMARY KEY CHECK (homebase_sn ~ '^[0-9A-F]{16}$'),
    online       boolean NOT NULL,
    changed_at   timestamptz NOT NULL DEFAULT now(),
    last_data_at timestamptz
);
COMMENT ON TABLE cluster.homebase_presence IS 'Online state of homebases from their MQTT presence messages, and when data last arrived.';
COMMENT ON COLUMN cluster.homebase_presence.homebase_sn IS 'Serial number of the homebase.';
COMMENT ON COLUMN cluster.homebase_presence.online IS 'The last presence message: true online, false offline (also the broker''s last will).';
COMMENT ON COLUMN cluster.homebase_presence.changed_at IS 'When online last changed.';
COMMENT ON COLUMN cluster.homebase_presence.last_data_at IS 'When the last data message was stored.';

CREATE TABLE forwarder.streams (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    homebase_sn text NOT NULL CHECK (homebase_sn ~ '^[0-9A-F]{16}$'),
    channel     integer NOT NULL,
    device      integer NOT NULL,
    medium      integer,
    idx         integer,
    obis        text,
    CHECK (medium IS NOT NULL OR obis IS NOT NULL)
);
CREATE UNIQUE INDEX forwarder_streams_identity
    ON forwarder.streams (homebase_sn, channel, device, medium, idx, obis) NULLS NOT DISTINCT;
COMMENT ON TABLE forwarder.streams IS 'Data streams of registered homebases: (gateway, channel, device, medium, index, OBIS code).';
COMMENT ON COLUMN forwarder.streams.id IS 'Row id.';
COMMENT ON COLUMN forwarder.streams.homebase_sn IS 'The gateway: serial number of the homebase.';
COMMENT ON COLUMN forwarder.streams.channel IS 'Homebase channel of the sensor.';
COMMENT ON COLUMN forwarder.streams.device IS 'Device ID of the sensor (docs/devices.md).';
COMMENT ON COLUMN forwarder.streams.medium IS 'Medium ID (docs/devices.md); for OBIS data the mapped medium, null for an unknown OBIS code.';
COMMENT ON COLUMN forwarder.streams.idx IS 'Index within the sensor (phase), null when single.';
COMMENT ON COLUMN forwarder.streams.obis IS 'OBIS code when the value came as one, else null.';

CREATE TABLE forwarder.points (
    stream_id   bigint NOT NULL,
    ts          timestamptz NOT NULL,
    value       double precision NOT NULL CHECK (value > '-Infinity' AND value < 'Infinity'),
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (stream_id, ts)
);
SELECT create_hypertable('forwarder.points', by_range('ts', INTERVAL '1 day'),
                         create_default_indexes => false);
CREATE INDEX forwarder_points_received ON forwarder.points (received_at);
COMMENT ON TABLE forwarder.points IS 'Points of registered homebases, waiting for (and kept after) delivery (hypertable).';
COMMENT ON COLUMN forwarder.points.stream_id IS 'The data stream (forwarder.streams.id).';
COMMENT ON COLUMN forwarder.points.ts IS 'Time of measurement.';
COMMENT ON COLUMN forwarder.points.value IS 'Value as measured; finite.';
COMMENT ON COLUMN forwarder.points.received_at IS 'When ingest stored it.';
