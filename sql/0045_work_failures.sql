-- Every error of one feed is that feed's (issue 59). A feed whose processing or rollups fail
-- outside the data's SQLSTATE classes (core/faults.py::blames_the_work: 54001 statement too
-- complex, 53200 out of memory, 57014 a statement timeout...) is retried, its failures counted
-- here; once it has failed the same way EP_ENGINE_PARK_AFTER times in a row it is parked like
-- a data error (cluster.parked_work). A success of the feed's work of that stage forgets them.
CREATE TABLE cluster.work_failures (
    feed_id   bigint NOT NULL REFERENCES cluster.feeds (id) ON DELETE CASCADE,
    stage     text NOT NULL CHECK (stage IN ('processing', 'rollups')),
    sqlstate  text NOT NULL CHECK (sqlstate ~ '^[0-9A-Z]{5}$'),
    failures  integer NOT NULL CHECK (failures > 0),
    error     text NOT NULL,
    failed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (feed_id, stage)
);
COMMENT ON TABLE cluster.work_failures IS 'Failures in a row of a feed''s work of a stage with one SQLSTATE outside the data''s classes (22, 23) and the world''s: at EP_ENGINE_PARK_AFTER the work is parked (cluster.parked_work); a success of that stage removes the row.';
COMMENT ON COLUMN cluster.work_failures.feed_id IS 'The feed whose work failed.';
COMMENT ON COLUMN cluster.work_failures.stage IS 'processing or rollups, as in cluster.parked_work.';
COMMENT ON COLUMN cluster.work_failures.sqlstate IS 'SQLSTATE of the last failure (54001: statement too complex); another one starts the count again.';
COMMENT ON COLUMN cluster.work_failures.failures IS 'Failures in a row with this SQLSTATE.';
COMMENT ON COLUMN cluster.work_failures.error IS 'The last failure''s message.';
COMMENT ON COLUMN cluster.work_failures.failed_at IS 'When the work last failed.';
