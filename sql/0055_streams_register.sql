-- One meaning per name (issue 60): a processed stream's OBIS register index (1-0:1.8.n and
-- 2.8.n: n) is its register, not its "tariff"; a tariff is a price contract (cluster.tariffs).
-- The data API answers both names for a while
-- (docs/api.md#what-a-processed-stream-is-quantity-and-register).
ALTER TABLE cluster.streams RENAME COLUMN tariff TO register;
ALTER TABLE cluster.streams RENAME CONSTRAINT streams_tariff_check TO streams_register_check;
ALTER TABLE cluster.streams
    RENAME CONSTRAINT streams_tariff_is_processed TO streams_register_is_processed;
COMMENT ON COLUMN cluster.streams.register IS 'processed: the energy register (1-0:1.8.n and 2.8.n: raw medium 22 or 23, index n) the stream counts: n; null otherwise.';

-- Functions whose parameters or result columns named it (sql/functions/ makes them again, with
-- the views over the analysts' functions: 90_core_views.sql).
DROP FUNCTION IF EXISTS cluster.processed_target(text, integer);
DROP FUNCTION IF EXISTS cluster.pricing(bigint, integer, integer, integer, boolean, text, text, tstzmultirange);
DROP FUNCTION IF EXISTS cluster.channel_streams(bigint[], integer[], text);
DROP FUNCTION IF EXISTS cluster.bucket_energy(bigint[], integer[], timestamptz[], timestamptz[]);
DROP FUNCTION IF EXISTS cluster.register_spans(bigint[], integer[], timestamptz[], timestamptz[]);
DROP FUNCTION IF EXISTS cluster.engine_targets(bigint[], integer[], timestamptz[], timestamptz[]);
DROP FUNCTION IF EXISTS cluster.engine_periods(bigint[], integer[], timestamptz[], timestamptz[]);
DROP FUNCTION IF EXISTS cluster.processed_readings(timestamptz, timestamptz) CASCADE;
DROP FUNCTION IF EXISTS cluster.readings(timestamptz, timestamptz) CASCADE;

-- The engine's stages in words (issue 60 item 2): a raw stream of the work travels between its
-- energy stages as one row of this type (sql/functions/24_engine_energy.sql), not as 13
-- positional scalars; epochs are float Unix seconds.
CREATE TYPE cluster.engine_source AS (
    raw_id        bigint,
    register      boolean,
    reading       boolean,
    period_from   double precision,
    period_to     double precision,
    read_from     timestamptz,
    read_to       timestamptz,
    max_rate      double precision,
    config_starts double precision[],
    max_rates     double precision[],
    max_spread    double precision,
    sent_factor   double precision,
    sent_factors  double precision[]
);
COMMENT ON TYPE cluster.engine_source IS 'A raw stream of the engine''s work, as cluster.engine_sources gives it and cluster.source_segments and cluster.source_heads take it.';
COMMENT ON COLUMN cluster.engine_source.raw_id IS 'The raw stream.';
COMMENT ON COLUMN cluster.engine_source.register IS 'An energy register (method register: its rise along its line).';
COMMENT ON COLUMN cluster.engine_source.reading IS 'A meter reading (method reading: its step at the later reading).';
COMMENT ON COLUMN cluster.engine_source.period_from IS 'The work''s period [period_from, period_to), epoch seconds.';
COMMENT ON COLUMN cluster.engine_source.period_to IS 'Its end (exclusive).';
COMMENT ON COLUMN cluster.engine_source.read_from IS 'The points read: from the last one before the period (a counter''s second last) ...';
COMMENT ON COLUMN cluster.engine_source.read_to IS '... to the first at or after its end (a counter''s second), inclusive.';
COMMENT ON COLUMN cluster.engine_source.max_rate IS 'A counter''s rise limit per second where one holds throughout the points (null: see max_rates, or no limit).';
COMMENT ON COLUMN cluster.engine_source.config_starts IS 'Where the counter''s configurations start (epoch seconds, ascending, the first -Infinity) when more than one holds: max_rates and sent_factors are per configuration.';
COMMENT ON COLUMN cluster.engine_source.max_rates IS 'The rise limit per second of each configuration (config_starts).';
COMMENT ON COLUMN cluster.engine_source.max_spread IS 'A counter''s longest gap in seconds over which a rise is spread (EP_ENGINE_MAX_SPREAD); null for power and means.';
COMMENT ON COLUMN cluster.engine_source.sent_factor IS 'The factor of the unit the reader sends (cluster.unit_factor) where one holds throughout; 1 for all but counters.';
COMMENT ON COLUMN cluster.engine_source.sent_factors IS 'The factor of each configuration (config_starts) when more than one holds.';

-- The stages whose parameters or columns changed with it (sql/functions/24_engine_energy.sql and
-- 25_engine_results.sql make them again; 22_engine_stages.sql is split into 22_engine_intake,
-- 24_engine_energy and 25_engine_results).
DROP FUNCTION IF EXISTS cluster.engine_sources(bigint[], integer[], timestamptz[], timestamptz[]);
DROP FUNCTION IF EXISTS cluster.source_segments(bigint, boolean, double precision, double precision, timestamptz, timestamptz, double precision, double precision[], double precision[], double precision, boolean, double precision, double precision[]);
DROP FUNCTION IF EXISTS cluster.source_heads(bigint, boolean, boolean, double precision, double precision, timestamptz, timestamptz, double precision, double precision[], double precision[], double precision, boolean, double precision, double precision[]);
DROP FUNCTION IF EXISTS cluster.engine_segments(bigint[], integer[], timestamptz[], timestamptz[]);
DROP FUNCTION IF EXISTS cluster.work_streams(bigint[], integer[], timestamptz[], timestamptz[]);
