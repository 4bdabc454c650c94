-- Issue 48: DSMR meters report their M-Bus devices (gas, water, heat) as 0-n:24.2.1 with the
-- device type in 0-n:24.1.0, usually in the same telegram but not always. The type last seen
-- for each M-Bus device decides what a reading without one is, across restarts and workers.
CREATE TABLE cluster.mbus_devices (
    homebase_sn text NOT NULL,
    channel     integer NOT NULL,
    device_type double precision NOT NULL,
    seen_at     timestamptz NOT NULL,
    PRIMARY KEY (homebase_sn, channel)
);
COMMENT ON TABLE cluster.mbus_devices IS 'The device type (OBIS 0-n:24.1.0) last seen per M-Bus device of a meter reader, kept by ingest: it decides whether a reading (0-n:24.2.1, 24.2.3) sent without its type is gas, water or heat (docs/devices.md#m-bus-devices).';
COMMENT ON COLUMN cluster.mbus_devices.homebase_sn IS 'The homebase (or CoAP meter) that sent it.';
COMMENT ON COLUMN cluster.mbus_devices.channel IS 'The M-Bus device''s channel: n × 1000 + the reader''s channel, for 0-n:.';
COMMENT ON COLUMN cluster.mbus_devices.device_type IS 'M-Bus device type as sent: 3 gas, 7 water, 4 or 12 heat; any other is neither.';
COMMENT ON COLUMN cluster.mbus_devices.seen_at IS 'Measurement time of the record that carried it: the latest one wins.';
