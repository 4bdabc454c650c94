-- Meter counters survive their faults (issue 48, docs/engine.md#registers-wh): a glitch is
-- skipped, a reset or a replacement adds 0, and the owner is told of each once. A stream's
-- counters may get a rate limit of their own, from an instant on like the rest of its
-- configuration.

ALTER TABLE cluster.stream_configs
    ADD COLUMN max_rate double precision CHECK (max_rate > 0 AND max_rate < 'infinity');
COMMENT ON COLUMN cluster.stream_configs.max_rate IS 'The fastest rise per hour (W for power, m³/h for gas and water, kW for heat) of the meter counters (registers, readings) counting in this consumption or export stream; a faster one is a replacement and adds 0. Null: EP_ENGINE_MAX_RATE_<MEDIUM>.';

CREATE TABLE cluster.meter_faults (
    stream_id    bigint NOT NULL REFERENCES cluster.streams (id) ON DELETE CASCADE,
    ts           timestamptz NOT NULL,
    kind         text NOT NULL CHECK (kind IN ('glitch', 'reset', 'replacement')),
    value        double precision NOT NULL,
    before_ts    timestamptz NOT NULL,
    before_value double precision NOT NULL,
    after_ts     timestamptz NOT NULL,
    after_value  double precision NOT NULL,
    found_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (stream_id, ts, kind)
);
COMMENT ON TABLE cluster.meter_faults IS 'Faults the engine found in a meter counter''s readings (docs/engine.md#registers-wh), one row each: what the owner was told of (rule meter_fault), once, however often the buckets are recomputed.';
COMMENT ON COLUMN cluster.meter_faults.stream_id IS 'The raw stream (medium 22 or 23, a register; 7 or 8, a reading).';
COMMENT ON COLUMN cluster.meter_faults.ts IS 'The reading judged: a glitch''s own time; for a reset or a replacement the reading that ends the step.';
COMMENT ON COLUMN cluster.meter_faults.kind IS 'glitch (a low reading undone by the next one: skipped), reset (a drop that persisted: adds 0), replacement (a rise faster than the stream''s max rate: adds 0).';
COMMENT ON COLUMN cluster.meter_faults.value IS 'The value of the reading judged.';
COMMENT ON COLUMN cluster.meter_faults.before_ts IS 'The counted reading before it.';
COMMENT ON COLUMN cluster.meter_faults.before_value IS 'Its value.';
COMMENT ON COLUMN cluster.meter_faults.after_ts IS 'A glitch: the reading after it; a reset or replacement: the reading judged itself.';
COMMENT ON COLUMN cluster.meter_faults.after_value IS 'Its value.';
COMMENT ON COLUMN cluster.meter_faults.found_at IS 'When the engine found it.';

ALTER TABLE cluster.notifications DROP CONSTRAINT notifications_rule_check;
ALTER TABLE cluster.notifications ADD CONSTRAINT notifications_rule_check CHECK (rule IN (
    'homebase_offline', 'homebase_online', 'channel_silent', 'power_change',
    'subscription_ending', 'unusual_consumption', 'processing_parked', 'meter_fault'));

-- Stages whose columns or parameters changed (sql/functions/22_engine_stages.sql makes them
-- again), and the configuration setter, which takes the rate limit.
DROP FUNCTION IF EXISTS cluster.affected_buckets(bigint, boolean, tstzrange);
DROP FUNCTION IF EXISTS cluster.engine_sources(bigint[], integer[], timestamptz[], timestamptz[]);
DROP FUNCTION IF EXISTS cluster.bucket_energy(bigint[], integer[], timestamptz[], timestamptz[]);
DROP FUNCTION IF EXISTS cluster.engine_results(bigint[], integer[], timestamptz[], timestamptz[]);
DROP FUNCTION IF EXISTS cluster.set_stream_config(bigint, timestamptz, text, text, text, boolean);
