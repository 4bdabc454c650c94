-- Hourly rollups of every stream: the engine keeps them like the 90 s aggregate, so answers per
-- local hour, day and month (the data API's `resolution`) read a few thousand small rows a
-- year instead of every point (docs/engine.md#rollups).

CREATE TABLE cluster.hourly_rollups (
    stream_id bigint NOT NULL REFERENCES cluster.streams (id) ON DELETE CASCADE,
    hour      timestamptz NOT NULL,
    total     double precision NOT NULL,
    points    integer NOT NULL CHECK (points > 0),
    PRIMARY KEY (stream_id, hour)
);
COMMENT ON TABLE cluster.hourly_rollups IS 'Per stream and local hour of its feed: the sum and number of its points. Kept by the engine from cluster.rollup_work; read through cluster.hourly_readings.';
COMMENT ON COLUMN cluster.hourly_rollups.stream_id IS 'The stream (raw, processed or system).';
COMMENT ON COLUMN cluster.hourly_rollups.hour IS 'Start of the local hour in the feed''s time zone valid at the points'' time (a whole UTC hour, or a half or quarter one in zones with such offsets).';
COMMENT ON COLUMN cluster.hourly_rollups.total IS 'Sum of the values of the stream''s points in the hour.';
COMMENT ON COLUMN cluster.hourly_rollups.points IS 'Number of points in the hour.';

-- The same per local day, made from the hours: a year of days is 365 rows per stream.
CREATE TABLE cluster.daily_rollups (
    stream_id bigint NOT NULL REFERENCES cluster.streams (id) ON DELETE CASCADE,
    day       date NOT NULL,
    start     timestamptz NOT NULL,
    timezone  text NOT NULL,
    total     double precision NOT NULL,
    points    bigint NOT NULL CHECK (points > 0),
    PRIMARY KEY (stream_id, day)
);
COMMENT ON TABLE cluster.daily_rollups IS 'Per stream and local day of its feed: the sum and number of its points, from cluster.hourly_rollups (an hour belongs to the local date it starts on). Kept by the engine with the hours.';
COMMENT ON COLUMN cluster.daily_rollups.stream_id IS 'The stream (raw, processed or system).';
COMMENT ON COLUMN cluster.daily_rollups.day IS 'The local date.';
COMMENT ON COLUMN cluster.daily_rollups.start IS 'The instant the local day starts (its midnight; a DST day lasts 23 or 25 hours).';
COMMENT ON COLUMN cluster.daily_rollups.timezone IS 'The feed''s time zone the day is local to (valid at its first hour).';
COMMENT ON COLUMN cluster.daily_rollups.total IS 'Sum of the values of the stream''s points in the day.';
COMMENT ON COLUMN cluster.daily_rollups.points IS 'Number of points in the day.';

CREATE TABLE cluster.rollup_work (
    stream_id   bigint NOT NULL,
    span        tstzrange NOT NULL CHECK (NOT isempty(span)),
    recorded_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE cluster.rollup_work IS 'Work queue of the engine: periods of one stream whose hourly rollups must be recomputed (points written, processed points recomputed, a time zone changed).';
COMMENT ON COLUMN cluster.rollup_work.stream_id IS 'The stream whose points changed.';
COMMENT ON COLUMN cluster.rollup_work.span IS 'The period of point times that changed; its local hours are recomputed.';
COMMENT ON COLUMN cluster.rollup_work.recorded_at IS 'When the work was queued; the oldest is claimed first.';
CREATE INDEX rollup_work_recorded ON cluster.rollup_work (recorded_at);

-- Existing data gets its rollups on the engine's first round after the upgrade.
INSERT INTO cluster.rollup_work (stream_id, span)
SELECT id, tstzrange(NULL, NULL) FROM cluster.streams;
