"""Named SQL of imports, repairs and their audit trail (functions in
sql/functions/17_history.sql). Visibility goes through ``cluster.user_feeds``, as every
data API query does."""

# The stream's type and medium, when the caller ($3, $4: user, admin) sees stream $1 of feed $2.
STREAM_TYPE = """
SELECT s.type, s.medium
  FROM cluster.streams s
  JOIN cluster.user_feeds($3, $4) f ON f.id = s.feed_id
 WHERE s.id = $1 AND s.feed_id = $2"""

# $2: microseconds since the Unix epoch (history/points.py), instants in the database.
# $5: the correction to add to (an admin import's next chunk), or null: a new one.
WRITE_POINTS = """
SELECT inserted, replaced, unchanged, correction
  FROM cluster.write_points($1, cluster.unix_instants($2::int8[]), $3::float8[], $4, $5)"""

NEW_CORRECTION = "SELECT nextval('cluster.correction_numbers')"

# A registered homebase's history goes where its live data goes, to the forwarder, as ingest
# stores it there: new times only (a point a customer may have had already stays as it was),
# in storage order (stored_by), so that each customer's next deliveries carry it.
FORWARD_POINTS = """
WITH added AS (
    INSERT INTO forwarder.points (stream_id, ts, value)
    SELECT $1, t, v FROM unnest(cluster.unix_instants($2::int8[]), $3::float8[]) AS u (t, v)
    ON CONFLICT DO NOTHING
    RETURNING 1)
SELECT count(*) FROM added"""

# $5: the most points one removal may take (history/http.py, MAX_REMOVED).
DELETE_POINTS = """
SELECT deleted, correction FROM cluster.delete_points($1, $2, $3, $4, $5)"""

UNDO = "SELECT restored, correction FROM cluster.undo_correction($1, $2)"

# How many points correction $1 changed (its log's counts; an admin import's chunks that wrote
# one time twice count it twice), and its stream's medium (the bound of what undo puts back).
CORRECTION_SIZE = """
SELECT l.added + l.replaced + l.removed AS points, s.medium
  FROM cluster.correction_log l
  JOIN cluster.streams s ON s.id = l.stream_id
 WHERE l.correction = $1"""

# The values undoing correction $1 would put back with the largest magnitude (NaN and the
# infinities sort above every number) and the smallest one other than 0, each with its time.
RESTORED_EXTREMES = """
WITH back AS (
    SELECT c.ts, c.old_value FROM cluster.correction_changes($1) c
     WHERE c.old_value IS NOT NULL)
SELECT l.ts AS largest_at, l.old_value AS largest, s.ts AS smallest_at, s.old_value AS smallest
  FROM (SELECT 1) one
  LEFT JOIN LATERAL (SELECT ts, old_value FROM back ORDER BY abs(old_value) DESC LIMIT 1) l
         ON true
  LEFT JOIN LATERAL (SELECT ts, old_value FROM back WHERE old_value <> 0
                      ORDER BY abs(old_value) LIMIT 1) s ON true"""

# A feed's corrections, newest first.
CORRECTIONS_OF_FEED = """
SELECT l.correction, l.stream_id, l.undoes, l.actor, l.made_at, l.time_from, l.time_to,
       l.added, l.replaced, l.removed
  FROM cluster.correction_log l
  JOIN cluster.streams s ON s.id = l.stream_id
 WHERE s.feed_id = $1
 ORDER BY l.correction DESC"""

# Correction $1 when it is of feed $2 and the caller ($3, $4: user, admin) sees that feed.
VISIBLE_CORRECTION = """
SELECT l.correction
  FROM cluster.correction_log l
  JOIN cluster.streams s ON s.id = l.stream_id
  JOIN cluster.user_feeds($3, $4) f ON f.id = s.feed_id
 WHERE l.correction = $1 AND s.feed_id = $2"""

# The operator names any feed, a forwarded homebase's too (admin corrections list).
CORRECTED_FEED = "SELECT 1 FROM cluster.feeds WHERE id = $1"

ACTOR_NAME = "SELECT name FROM cluster.user_tokens WHERE token_sha256 = $1"

# History by the interval (history/intervals.py): the stream's row locked for the transaction,
# as cluster.write_points locks it, so that no other correction runs between the check and the
# write.
LOCK_RAW_STREAM = "SELECT 1 FROM cluster.streams WHERE id = $1 AND type = 'raw' FOR NO KEY UPDATE"

# The values of the stream's last reading at or before $2 and of its first at or after $3, in
# either tier (null: none): where a file of intervals from $2 to $3 takes its running total.
INTERVAL_EDGES = """
SELECT (SELECT p.value
          FROM cluster.stream_points($1, n.before, n.before + interval '1 microsecond') p)
           AS before,
       (SELECT p.value
          FROM cluster.stream_points($1, n.after, n.after + interval '1 microsecond') p)
           AS after
  FROM cluster.point_neighbours($1::int8, $2::timestamptz + interval '1 microsecond',
                                $3::timestamptz) n"""

# The stream's readings from $2 to $3, both included, in either tier; times in microseconds.
READINGS_BETWEEN = """
SELECT (extract(epoch FROM p.ts) * 1000000)::int8 AS micros, p.value
  FROM cluster.stream_points($1::int8, $2::timestamptz,
                             $3::timestamptz + interval '1 microsecond') p
 ORDER BY p.ts"""
