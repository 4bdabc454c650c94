-- Compaction and retention narrow a failing round down to the stream (issue 59): a stream whose
-- days fail to compact or to be removed, whatever the SQLSTATE short of the server's state, is
-- skipped by the next rounds and parked here beside the engine's feeds (the same gauge,
-- `admin engine parked` and `admin engine retry`), while the round goes on for every other.
ALTER TABLE cluster.parked_work DROP CONSTRAINT parked_work_stage_check;
ALTER TABLE cluster.parked_work ADD CONSTRAINT parked_work_stage_check
    CHECK (stage IN ('processing', 'rollups', 'compaction', 'retention'));
ALTER TABLE cluster.parked_work DROP CONSTRAINT parked_work_check;
ALTER TABLE cluster.parked_work ADD CONSTRAINT parked_work_stream_check
    CHECK ((stage = 'processing') = (stream_id IS NULL));
COMMENT ON COLUMN cluster.parked_work.stage IS 'processing (the 90 s buckets of a channel), rollups (the hours and days of a stream), compaction or retention (a stream''s days: moved into the compact tier, or removed at their age).';
COMMENT ON COLUMN cluster.parked_work.stream_id IS 'rollups, compaction, retention: the stream whose work failed; null for processing.';
