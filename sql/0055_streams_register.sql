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
