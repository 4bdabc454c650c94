"""Named SQL of imports, repairs and their audit trail (functions in
sql/functions/17_corrections.sql). Visibility goes through ``cluster.user_feeds``, as every
data API query does."""

# The stream's type and medium, when the caller ($3, $4: user, admin) sees stream $1 of feed $2.
STREAM_TYPE = """
SELECT s.type, s.medium
  FROM cluster.streams s
  JOIN cluster.user_feeds($3, $4) f ON f.id = s.feed_id
 WHERE s.id = $1 AND s.feed_id = $2"""

# $2: microseconds since the Unix epoch (history/points.py), instants in the database.
WRITE_POINTS = """
SELECT inserted, replaced, unchanged, correction
  FROM cluster.write_points($1, cluster.unix_instants($2::int8[]), $3::float8[], $4)"""

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

DELETE_POINTS = """
SELECT deleted, correction FROM cluster.delete_points($1, $2, $3, $4)"""

UNDO = "SELECT restored, correction FROM cluster.undo_correction($1, $2)"

# A feed's corrections, newest first: one row each, with its stream, extent and counts.
CORRECTIONS_OF_FEED = """
SELECT c.correction, c.stream_id, min(c.actor) AS actor, min(c.made_at) AS made_at,
       min(c.ts) AS time_from, max(c.ts) AS time_to,
       count(*) FILTER (WHERE c.old_value IS NOT NULL AND c.new_value IS NOT NULL) AS replaced,
       count(*) FILTER (WHERE c.new_value IS NULL) AS removed,
       count(*) FILTER (WHERE c.old_value IS NULL) AS added
  FROM cluster.corrections c
  JOIN cluster.streams s ON s.id = c.stream_id
 WHERE s.feed_id = $1
 GROUP BY c.correction, c.stream_id
 ORDER BY c.correction DESC"""

# The operator names any feed, a forwarded homebase's too (admin corrections list).
CORRECTED_FEED = "SELECT 1 FROM cluster.feeds WHERE id = $1"

ACTOR_NAME = "SELECT name FROM cluster.user_tokens WHERE token_sha256 = $1"
