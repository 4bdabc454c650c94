-- Issue 58 item 8: the unit a meter's reader sends for a register or meter reading (Wh, kWh or
-- MWh; m³ or l; kWh, MWh or GJ), set on the processed stream it counts in from an instant on,
-- like its rate limit; the engine converts its readings to the medium's unit (Wh, m³, kWh)
-- as it processes them (cluster.unit_factor). NULL: the medium's unit, what docs/devices.md
-- says a reader sends.
ALTER TABLE cluster.stream_configs ADD COLUMN sent_unit text;
COMMENT ON COLUMN cluster.stream_configs.sent_unit IS 'The unit the readers of the meter counters counting in this stream send (admin streams configure --unit); NULL: the medium''s own (Wh, m³, kWh).';

-- The stages that carry it change their arguments or columns: the function files make them
-- again (sql/functions/20_engine.sql, 22_engine_stages.sql).
DROP FUNCTION IF EXISTS cluster.set_stream_config(bigint, timestamptz, text, text, text, boolean,
                                                  double precision, boolean);
DROP FUNCTION IF EXISTS cluster.engine_sources(bigint[], integer[], timestamptz[], timestamptz[])
    CASCADE;
DROP FUNCTION IF EXISTS cluster.source_segments(bigint, boolean, double precision,
    double precision, timestamptz, timestamptz, double precision, double precision[],
    double precision[], double precision, boolean) CASCADE;
DROP FUNCTION IF EXISTS cluster.source_heads(bigint, boolean, boolean, double precision,
    double precision, timestamptz, timestamptz, double precision, double precision[],
    double precision[], double precision, boolean) CASCADE;
