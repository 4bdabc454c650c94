-- cluster.thaw_points (0011's definitions) is gone: ingest hands cluster.thaw_days the
-- (stream, day) pairs of a batch itself instead of every point's time (docs/schema.md#tiers).
DROP FUNCTION IF EXISTS cluster.thaw_points(bigint[], bigint[]);
