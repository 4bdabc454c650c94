-- The compact tier's decimal codec (docs/schema.md#codec): a stream-day whose values are all
-- exact decimals with few digits (0.1 W, 0.001 m³, 0.01 °C) is stored as scaled integers,
-- delta-encoded one byte a point, then compressed with lz4; any other day keeps the float8 array.
-- Days written before this migration are re-encoded online by the compaction loop, a stream-day
-- per transaction (codec 1 -> 2).
ALTER TABLE cluster.point_days
    ALTER COLUMN vals DROP NOT NULL,
    ADD COLUMN codec smallint NOT NULL DEFAULT 1,
    ADD COLUMN scale smallint CHECK (scale BETWEEN 0 AND 6),
    ADD COLUMN base bigint,
    ADD COLUMN deltas "char"[],
    ADD COLUMN wide_at integer[],
    ADD COLUMN wide integer[];
ALTER TABLE cluster.point_days ALTER COLUMN codec SET DEFAULT 2,
                               ALTER COLUMN deltas SET COMPRESSION lz4,
                               ALTER COLUMN wide_at SET COMPRESSION lz4,
                               ALTER COLUMN wide SET COMPRESSION lz4;
ALTER TABLE cluster.point_days ADD CONSTRAINT point_days_one_form CHECK (
    CASE WHEN scale IS NULL
         THEN cardinality(vals) = points AND deltas IS NULL AND base IS NULL
         ELSE vals IS NULL AND base IS NOT NULL AND cardinality(deltas) = points
              AND coalesce(cardinality(wide_at), 0) = coalesce(cardinality(wide), 0) END);
-- The days still to re-encode, found without reading the others.
CREATE INDEX point_days_codec_1 ON cluster.point_days (stream_id, day) WHERE codec = 1;
COMMENT ON COLUMN cluster.point_days.vals IS 'Float path (scale null): point n''s value, bit for bit.';
COMMENT ON COLUMN cluster.point_days.codec IS '1: written before the decimal codec (float path), re-encoded by compaction; 2: the decimal codec chose scale.';
COMMENT ON COLUMN cluster.point_days.scale IS 'Decimal path: every value is an integer divided by 10^scale, exactly (null: float path, vals).';
COMMENT ON COLUMN cluster.point_days.base IS 'Decimal path: point 1''s value times 10^scale.';
COMMENT ON COLUMN cluster.point_days.deltas IS 'Decimal path: point n''s scaled value minus point n-1''s (0 for point 1), as a signed byte; -128: the difference is in wide.';
COMMENT ON COLUMN cluster.point_days.wide_at IS 'Decimal path: the positions n whose difference did not fit a byte.';
COMMENT ON COLUMN cluster.point_days.wide IS 'Decimal path: those differences, in the order of wide_at.';
-- The decoder takes the new columns (sql/functions/15_points.sql); the old signature goes, with
-- the view that used it (90_views.sql makes it again).
DROP FUNCTION IF EXISTS cluster.unpack(timestamptz, bigint, bigint[], double precision[]) CASCADE;
