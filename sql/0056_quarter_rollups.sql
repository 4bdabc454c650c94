-- Quarter-hour rollups of the streams a bill meters (processed consumption and export): what-if
-- prices a household's year by the quarter hour (15-minute market slots), and summing a year of
-- 90 s points per call cost it 0.6 to 0.9 s of a 1.3 to 1.7 s answer (2026-11-29, at a load of
-- about 9). The engine keeps them with the hourly ones (cluster.rollup_quarters,
-- sql/functions/60_core_rollups.sql); readers answer pending quarters from the points
-- (cluster.realtime_quarters). docs/engine.md#rollups.

CREATE TABLE cluster.quarter_rollups (
    stream_id bigint NOT NULL REFERENCES cluster.streams (id) ON DELETE CASCADE,
    start     timestamptz NOT NULL,
    total     double precision NOT NULL,
    points    integer NOT NULL CHECK (points > 0),
    PRIMARY KEY (stream_id, start)
);
COMMENT ON TABLE cluster.quarter_rollups IS 'Per processed consumption or export stream and quarter hour (a 15-minute UTC bucket, also a local quarter in every zone of today''s offsets): the sum and number of its points. Kept by the engine with the hourly rollups; read through cluster.realtime_quarters.';
COMMENT ON COLUMN cluster.quarter_rollups.stream_id IS 'The stream (processed, quantity consumption or export).';
COMMENT ON COLUMN cluster.quarter_rollups.start IS 'Start of the quarter hour (time_bucket(''15 minutes'', ts)).';
COMMENT ON COLUMN cluster.quarter_rollups.total IS 'Sum of the values of the stream''s points in the quarter.';
COMMENT ON COLUMN cluster.quarter_rollups.points IS 'Number of points in the quarter.';

-- Existing streams get their quarters on the engine's next rounds; until then readers answer
-- them from the points (their rollups are pending).
INSERT INTO cluster.rollup_work (stream_id, span)
SELECT id, tstzrange(NULL, NULL) FROM cluster.streams
 WHERE type = 'processed' AND quantity IN ('consumption', 'export');
