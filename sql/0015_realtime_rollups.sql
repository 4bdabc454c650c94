-- Real-time rollups (docs/engine.md#real-time-rollups): every reader of the hourly and daily
-- rollups looks up, per stream, the periods whose points changed but whose rollups are not yet
-- recomputed (cluster.rollup_work, and ingest's cluster.dirty_ranges the engine has not taken
-- in yet) and answers those hours from the points. These indexes make that look-up one index
-- probe per stream and queue instead of a scan of the queue.
CREATE INDEX rollup_work_stream ON cluster.rollup_work (stream_id);
CREATE INDEX dirty_ranges_stream ON cluster.dirty_ranges (stream_id);
