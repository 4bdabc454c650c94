-- Corrections that can always be taken back (docs/data-api.md#undo). A correction is every
-- import (added points included), removal and undo: one row of cluster.correction_log (who,
-- when, the stream, the counts) and what it changed per UTC day as arrays in
-- cluster.correction_points (a point a row would cost an import about as much again as its
-- points; arrays about 24 bytes a point before lz4). Replaces cluster.corrections, one row per
-- point, which recorded only replaced and removed points: its rows move here, and a view of the
-- same name and columns (sql/functions/17_corrections.sql) keeps the analysts' queries.
CREATE SEQUENCE cluster.correction_parts;
COMMENT ON SEQUENCE cluster.correction_parts IS 'Numbers of the parts of a correction: one per statement that wrote into it (an admin import writes one per chunk).';

CREATE TABLE cluster.correction_log (
    correction bigint PRIMARY KEY,
    stream_id  bigint NOT NULL REFERENCES cluster.streams (id) ON DELETE CASCADE,
    undoes     bigint,
    actor      text NOT NULL CHECK (actor <> ''),
    made_at    timestamptz NOT NULL DEFAULT now(),
    added      bigint NOT NULL CHECK (added >= 0),
    replaced   bigint NOT NULL CHECK (replaced >= 0),
    removed    bigint NOT NULL CHECK (removed >= 0),
    time_from  timestamptz NOT NULL,
    time_to    timestamptz NOT NULL
);
COMMENT ON TABLE cluster.correction_log IS 'One row per correction of a raw stream (an import, a removal, an undo) that changed at least one point; what it changed is in cluster.correction_points. Kept EP_CORRECTIONS_DAYS.';
COMMENT ON COLUMN cluster.correction_log.correction IS 'The correction''s number (cluster.correction_numbers).';
COMMENT ON COLUMN cluster.correction_log.stream_id IS 'The raw stream it changed.';
COMMENT ON COLUMN cluster.correction_log.undoes IS 'For an undo: the correction it undid.';
COMMENT ON COLUMN cluster.correction_log.actor IS 'Who: "user 7" over HTTP (with the token''s name when known), "admin (login)" from the command line.';
COMMENT ON COLUMN cluster.correction_log.made_at IS 'When.';
COMMENT ON COLUMN cluster.correction_log.added IS 'Points written at times the stream held none.';
COMMENT ON COLUMN cluster.correction_log.replaced IS 'Points whose value it changed.';
COMMENT ON COLUMN cluster.correction_log.removed IS 'Points it removed.';
COMMENT ON COLUMN cluster.correction_log.time_from IS 'Its first changed point''s time.';
COMMENT ON COLUMN cluster.correction_log.time_to IS 'Its last changed point''s time.';
CREATE INDEX correction_log_made_at ON cluster.correction_log (made_at);
CREATE INDEX correction_log_stream ON cluster.correction_log (stream_id);

CREATE TABLE cluster.correction_points (
    correction bigint NOT NULL REFERENCES cluster.correction_log ON DELETE CASCADE,
    part       bigint NOT NULL,
    day        date NOT NULL,
    ts         timestamptz[] NOT NULL,
    old_values double precision[] NOT NULL,
    new_values double precision[] NOT NULL,
    PRIMARY KEY (correction, part, day),
    CHECK (cardinality(ts) = cardinality(old_values) AND cardinality(ts) = cardinality(new_values))
);
ALTER TABLE cluster.correction_points ALTER COLUMN ts SET COMPRESSION lz4,
    ALTER COLUMN old_values SET COMPRESSION lz4, ALTER COLUMN new_values SET COMPRESSION lz4;
COMMENT ON TABLE cluster.correction_points IS 'What a correction changed, per statement (part) and UTC day: the times, the values before (null: no point) and after (null: removed), element by element. Read one point a row through cluster.corrections or cluster.correction_changes(correction).';
COMMENT ON COLUMN cluster.correction_points.part IS 'The statement that wrote it (cluster.correction_parts): a later part of one correction saw what an earlier one left.';
COMMENT ON COLUMN cluster.correction_points.day IS 'The UTC day of every time in the row.';
COMMENT ON COLUMN cluster.correction_points.ts IS 'The points'' times, ascending.';
COMMENT ON COLUMN cluster.correction_points.old_values IS 'Each point''s value before; null: there was none.';
COMMENT ON COLUMN cluster.correction_points.new_values IS 'Each point''s value after; null: removed.';

-- The rows of cluster.corrections, one correction a log row and its points a row per UTC day.
INSERT INTO cluster.correction_log (correction, stream_id, actor, made_at, added, replaced,
                                    removed, time_from, time_to)
SELECT correction, min(stream_id), min(actor), min(made_at),
       count(*) FILTER (WHERE old_value IS NULL),
       count(*) FILTER (WHERE old_value IS NOT NULL AND new_value IS NOT NULL),
       count(*) FILTER (WHERE new_value IS NULL), min(ts), max(ts)
  FROM cluster.corrections
 GROUP BY correction;
INSERT INTO cluster.correction_points (correction, part, day, ts, old_values, new_values)
SELECT correction, nextval('cluster.correction_parts'), (ts AT TIME ZONE 'UTC')::date,
       array_agg(ts ORDER BY ts), array_agg(old_value ORDER BY ts),
       array_agg(new_value ORDER BY ts)
  FROM cluster.corrections
 GROUP BY correction, (ts AT TIME ZONE 'UTC')::date;
DROP TABLE cluster.corrections;

-- The functions change their arguments (sql/functions/17_corrections.sql makes them again).
DROP FUNCTION IF EXISTS cluster.write_points(bigint, timestamptz[], double precision[], text);
DROP FUNCTION IF EXISTS cluster.delete_points(bigint, timestamptz, timestamptz, text);
