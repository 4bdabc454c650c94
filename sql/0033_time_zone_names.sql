-- The IANA zone names as a table: cluster.is_time_zone, the check of every feed configuration
-- row, looked each name up in pg_timezone_names, which reads the whole tz database (about
-- 100 ms a row). A zone the server's tz database gains later is still found there
-- (sql/functions/10_cluster.sql).
CREATE TABLE cluster.time_zone_names (name text PRIMARY KEY);
COMMENT ON TABLE cluster.time_zone_names IS
    'The IANA zone names the server knew when this migration ran; a look-up cache of pg_timezone_names.';
COMMENT ON COLUMN cluster.time_zone_names.name IS 'An IANA zone name, as pg_timezone_names spells it.';
INSERT INTO cluster.time_zone_names SELECT DISTINCT name FROM pg_timezone_names;
