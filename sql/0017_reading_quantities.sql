-- The analysts' processed and combined readings gain what a stream is (quantity) and its tariff
-- register (sql/functions/85_reading_ranges.sql). A function's result columns cannot change in
-- place: the old signatures go, with the views over them (90_views.sql makes them again).
DROP FUNCTION IF EXISTS cluster.processed_readings(timestamptz, timestamptz) CASCADE;
DROP FUNCTION IF EXISTS cluster.readings(timestamptz, timestamptz) CASCADE;
