-- The live event `prices` (docs/api.md#live): a feed's area has the prices of the feed's next
-- local day. It is the feed's, not a stream's (no stream_id), and carries that local day: the
-- zone that made it a day may change before the event is read.
ALTER TABLE cluster.live_log ALTER COLUMN stream_id DROP NOT NULL;
ALTER TABLE cluster.live_log ADD COLUMN day date;
ALTER TABLE cluster.live_log DROP CONSTRAINT live_log_kind_check;
ALTER TABLE cluster.live_log ADD CONSTRAINT live_log_kind_check
    CHECK (kind IN ('points', 'buckets', 'reload', 'prices'));
-- A stream's events have their stream and no day; a prices event its day and no stream.
ALTER TABLE cluster.live_log ADD CONSTRAINT live_log_prices_check
    CHECK (CASE WHEN kind = 'prices' THEN stream_id IS NULL AND day IS NOT NULL
                ELSE stream_id IS NOT NULL AND day IS NULL END);
COMMENT ON TABLE cluster.live_log IS 'One event of GET /feeds/{id}/live per row: the points of one stream that one ingest batch added (points), the processed points one engine transaction wrote or removed (buckets), a revision too large to send (reload), or the prices of the feed''s next local day published (prices). Kept EP_LIVE_REPLAY_S, pruned by the engine (cluster.live_prune).';
COMMENT ON COLUMN cluster.live_log.stream_id IS 'The stream; null for prices (the feed''s).';
COMMENT ON COLUMN cluster.live_log.kind IS 'points (raw and system points of an ingest batch), buckets (processed points), reload (a revision of times[1] to times[2] too large to send), prices (the area''s prices of day are in).';
COMMENT ON COLUMN cluster.live_log.day IS 'prices: the feed''s local day whose prices arrived; null otherwise.';
