-- The compact tier: points older than the compaction age (EP_COMPACTION_AFTER_DAYS), one row per
-- stream and UTC day instead of one row per point, losslessly (docs/schema.md#tiers). A
-- stream-day is in exactly one tier: compaction moves it here in one transaction, and a write
-- into a compacted day first moves it back (cluster.thaw_days).

CREATE TABLE cluster.point_days (
    stream_id  bigint NOT NULL,
    day        date NOT NULL,
    first_ts   timestamptz NOT NULL,
    last_ts    timestamptz NOT NULL,
    points     integer NOT NULL CHECK (points > 0),
    step_us    bigint NOT NULL,
    offsets_us bigint[] NOT NULL,
    vals       double precision[] NOT NULL,
    PRIMARY KEY (stream_id, day),
    CHECK (cardinality(offsets_us) = points AND cardinality(vals) = points)
);
-- lz4 (PostgreSQL's own TOAST compression) on the arrays; set again by compaction for chunks.
ALTER TABLE cluster.point_days ALTER COLUMN offsets_us SET COMPRESSION lz4,
                               ALTER COLUMN vals SET COMPRESSION lz4;
SELECT create_hypertable('cluster.point_days', by_range('day', INTERVAL '28 days'),
                         create_default_indexes => false);
COMMENT ON TABLE cluster.point_days IS 'Compact tier: the points of one raw, processed or system stream in one UTC day, as arrays (hypertable). Read through cluster.stream_points or the *_readings views.';
COMMENT ON COLUMN cluster.point_days.stream_id IS 'The stream (cluster.streams.id), of any type.';
COMMENT ON COLUMN cluster.point_days.day IS 'The UTC date of every point in the row.';
COMMENT ON COLUMN cluster.point_days.first_ts IS 'Time of the first point.';
COMMENT ON COLUMN cluster.point_days.last_ts IS 'Time of the last point.';
COMMENT ON COLUMN cluster.point_days.points IS 'Number of points.';
COMMENT ON COLUMN cluster.point_days.step_us IS 'The most common interval between points, in microseconds: the grid the offsets are taken from.';
COMMENT ON COLUMN cluster.point_days.offsets_us IS 'Point n (from 1) is at first_ts + ((n - 1) * step_us + offsets_us[n]) microseconds: zeros for a regular stream, a constant after each gap.';
COMMENT ON COLUMN cluster.point_days.vals IS 'Point n''s value, bit for bit.';
