-- The delivery loop's claim computes every customer's next interval end on each claim (10,000
-- customers: 10,000 calls per claim). The original body went through numeric arithmetic
-- (extract(epoch ...) is numeric since PostgreSQL 14); date_bin is the same value (interval
-- ends are whole minutes since the Unix epoch) computed on the timestamp itself, and measured
-- to take the claim from about 60 ms to about 37 ms at 10,000 customers.
CREATE OR REPLACE FUNCTION forwarder.interval_end(p_cursor timestamptz, p_minutes integer)
RETURNS timestamptz LANGUAGE sql IMMUTABLE AS $$
    SELECT date_bin(make_interval(mins => p_minutes), p_cursor, timestamptz 'epoch')
           + make_interval(mins => p_minutes)
$$;
COMMENT ON FUNCTION forwarder.interval_end(timestamptz, integer) IS
    'End of the delivery interval after a cursor: the next multiple of p_minutes since the Unix epoch.';
