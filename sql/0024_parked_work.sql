-- Parked work: a feed whose processing or rollups failed on its own data (SQLSTATE class 22 or
-- 23) is set aside so that every other feed's work goes on (docs/engine.md#parked-feeds). A row
-- records one period that failed and why; the work itself stays queued in cluster.engine_work or
-- cluster.rollup_work, where the real-time readers already look, and the engine's claims skip
-- the feed until `admin engine retry` marks its rows retried.

CREATE TABLE cluster.parked_work (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    feed_id    bigint NOT NULL REFERENCES cluster.feeds (id) ON DELETE CASCADE,
    stage      text NOT NULL CHECK (stage IN ('processing', 'rollups')),
    channel    integer NOT NULL,
    stream_id  bigint,
    span       tstzrange NOT NULL CHECK (NOT isempty(span)),
    sqlstate   text NOT NULL CHECK (sqlstate ~ '^[0-9A-Z]{5}$'),
    error      text NOT NULL,
    parked_at  timestamptz NOT NULL DEFAULT now(),
    retried_at timestamptz,
    CHECK ((stage = 'rollups') = (stream_id IS NOT NULL))
);
COMMENT ON TABLE cluster.parked_work IS 'Periods of a feed''s work that failed on its data (SQLSTATE class 22 or 23), one row each. While a feed has a row not yet retried, the engine does not claim its work of that stage; the work waits in cluster.engine_work or cluster.rollup_work. admin engine parked lists them, admin engine retry FEED releases them; the engine deletes retried rows once the feed''s work of that stage succeeds.';
COMMENT ON COLUMN cluster.parked_work.id IS 'Row id.';
COMMENT ON COLUMN cluster.parked_work.feed_id IS 'The parked feed.';
COMMENT ON COLUMN cluster.parked_work.stage IS 'processing (the 90 s buckets of a channel) or rollups (the hours and days of a stream).';
COMMENT ON COLUMN cluster.parked_work.channel IS 'The channel whose work failed (rollups: the stream''s channel).';
COMMENT ON COLUMN cluster.parked_work.stream_id IS 'rollups: the stream whose hours failed; null for processing.';
COMMENT ON COLUMN cluster.parked_work.span IS 'processing: the buckets [from, to) the engine was computing; rollups: the point times whose hours it was computing. The bad rows are in it.';
COMMENT ON COLUMN cluster.parked_work.sqlstate IS 'The error''s SQLSTATE (22003: a value out of range).';
COMMENT ON COLUMN cluster.parked_work.error IS 'The error''s message.';
COMMENT ON COLUMN cluster.parked_work.parked_at IS 'When the work was parked.';
COMMENT ON COLUMN cluster.parked_work.retried_at IS 'When admin engine retry released it (null: still parked); the row goes once the work succeeds.';
-- The claims' look-up of parked feeds, and admin engine retry's.
CREATE INDEX parked_work_feed ON cluster.parked_work (feed_id, stage);

-- The owner hears of it: one open notification per feed while it is parked.
ALTER TABLE cluster.notifications DROP CONSTRAINT notifications_rule_check;
ALTER TABLE cluster.notifications ADD CONSTRAINT notifications_rule_check CHECK (rule IN (
    'homebase_offline', 'homebase_online', 'channel_silent', 'power_change',
    'subscription_ending', 'unusual_consumption', 'processing_parked'));
