-- Corrections (docs/data-api.md#repair): every raw point an import replaced or a repair removed,
-- with who did it, when, and the value before and after, kept EP_CORRECTIONS_DAYS (30) so that
-- a correction can be listed and undone. One correction (an import, a removal, an undo) is the
-- rows sharing its `correction` number.
CREATE SEQUENCE cluster.correction_numbers;
COMMENT ON SEQUENCE cluster.correction_numbers IS 'Numbers of corrections: one per import, removal or undo.';

CREATE TABLE cluster.corrections (
    correction bigint NOT NULL,
    stream_id  bigint NOT NULL REFERENCES cluster.streams (id) ON DELETE CASCADE,
    ts         timestamptz NOT NULL,
    old_value  double precision,
    new_value  double precision,
    actor      text NOT NULL CHECK (actor <> ''),
    made_at    timestamptz NOT NULL DEFAULT now(),
    CHECK (old_value IS NOT NULL OR new_value IS NOT NULL),
    PRIMARY KEY (correction, stream_id, ts)
);
COMMENT ON TABLE cluster.corrections IS 'Audit of raw points replaced or removed through the data API or admin commands: one row per point changed, grouped by correction. Written by cluster.write_points, cluster.delete_points and cluster.undo_correction; kept EP_CORRECTIONS_DAYS.';
COMMENT ON COLUMN cluster.corrections.correction IS 'The correction (import, removal, undo) the change belongs to.';
COMMENT ON COLUMN cluster.corrections.stream_id IS 'The raw stream.';
COMMENT ON COLUMN cluster.corrections.ts IS 'The point''s time.';
COMMENT ON COLUMN cluster.corrections.old_value IS 'Its value before; null: there was no point (an undo put one back).';
COMMENT ON COLUMN cluster.corrections.new_value IS 'Its value after; null: removed.';
COMMENT ON COLUMN cluster.corrections.actor IS 'Who: "user 7" over HTTP (with the token''s name when known), "admin" from the command line.';
COMMENT ON COLUMN cluster.corrections.made_at IS 'When.';
CREATE INDEX corrections_made_at ON cluster.corrections (made_at);
CREATE INDEX corrections_stream ON cluster.corrections (stream_id, ts);
