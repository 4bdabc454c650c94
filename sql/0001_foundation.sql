-- Extensions and the three schemas every later migration builds on.
-- timescaledb: hypertables and time_bucket for all point tables.
-- btree_gist: exclusion constraints over (key, tstzrange) for configuration validity periods.
CREATE EXTENSION IF NOT EXISTS timescaledb;
CREATE EXTENSION IF NOT EXISTS btree_gist;

CREATE SCHEMA IF NOT EXISTS provisioning;
COMMENT ON SCHEMA provisioning IS
    'Provisioning service: clusters, homebases, pairing, secrets, firmware and upgrades.';

CREATE SCHEMA IF NOT EXISTS cluster;
COMMENT ON SCHEMA cluster IS
    'A cluster''s data: users, feeds, streams, their configurations, points and notifications.';

CREATE SCHEMA IF NOT EXISTS forwarder;
COMMENT ON SCHEMA forwarder IS
    'Forwarder: customers, registrations, delivery configuration, points and delivery log.';
