-- The live log (docs/data-api.md#live): what ingest and the engine commit, kept
-- EP_LIVE_REPLAY_S (900 s) so that a dashboard's stream resumes without a gap. A position is
-- taken under one advisory lock held to the commit (cluster.live_append), so positions are in
-- commit order: once a position is visible, every smaller one is visible or never will be.
CREATE SEQUENCE cluster.live_positions;
COMMENT ON SEQUENCE cluster.live_positions IS 'Positions of the live log, taken in commit order by cluster.live_append.';

CREATE TABLE cluster.live_log (
    pos       bigint PRIMARY KEY,
    logged_at timestamptz NOT NULL DEFAULT now(),
    feed_id   bigint NOT NULL,
    stream_id bigint NOT NULL,
    kind      text NOT NULL CHECK (kind IN ('points', 'buckets', 'reload')),
    times     bigint[] NOT NULL,
    vals      double precision[] NOT NULL
);
COMMENT ON TABLE cluster.live_log IS 'One event of GET /feeds/{id}/live per row: the points of one stream that one ingest batch added (points), the processed points one engine transaction wrote or removed (buckets), or a revision too large to send (reload). Kept EP_LIVE_REPLAY_S, pruned by the engine (cluster.live_prune).';
COMMENT ON COLUMN cluster.live_log.pos IS 'The event id: commit order across the cluster.';
COMMENT ON COLUMN cluster.live_log.logged_at IS 'When the transaction that wrote it began.';
COMMENT ON COLUMN cluster.live_log.feed_id IS 'The feed (no foreign key: a feed''s removal must not wait on its log).';
COMMENT ON COLUMN cluster.live_log.stream_id IS 'The stream.';
COMMENT ON COLUMN cluster.live_log.kind IS 'points (raw and system points of an ingest batch), buckets (processed points), reload (a revision of times[1] to times[2] too large to send).';
COMMENT ON COLUMN cluster.live_log.times IS 'Unix seconds of the points, ascending.';
COMMENT ON COLUMN cluster.live_log.vals IS 'Their values; a null bucket value: the bucket no longer has one.';
CREATE INDEX live_log_feed ON cluster.live_log (feed_id, pos);
CREATE INDEX live_log_logged_at ON cluster.live_log (logged_at);
-- Appended and deleted all day long: a small, hot table.
ALTER TABLE cluster.live_log SET (autovacuum_vacuum_scale_factor = 0.02, fillfactor = 100);

-- The highest position pruned: an id below it may have missed events (its client reloads).
CREATE TABLE cluster.live_horizon (
    one     boolean PRIMARY KEY DEFAULT true CHECK (one),
    pos     bigint NOT NULL
);
COMMENT ON TABLE cluster.live_horizon IS 'One row: the highest live_log position removed by pruning; a Last-Event-ID below it gets reload.';
INSERT INTO cluster.live_horizon (pos) VALUES (0);
