"""Named SQL of imports, repairs and their audit trail (functions in
sql/functions/17_corrections.sql). Visibility goes through ``cluster.user_feeds``, as every
data API query does."""

# The stream's type, when the caller ($3, $4: user, admin) sees stream $1 of feed $2.
STREAM_TYPE = """
SELECT s.type
  FROM cluster.streams s
  JOIN cluster.user_feeds($3, $4) f ON f.id = s.feed_id
 WHERE s.id = $1 AND s.feed_id = $2"""

# $2: microseconds since the Unix epoch (history/points.py), made instants exactly: whole
# seconds (exact in float8 for any timestamptz) plus the microseconds.
WRITE_POINTS = """
SELECT inserted, replaced, unchanged, correction
  FROM cluster.write_points(
           $1,
           ARRAY(SELECT to_timestamp(div(u.m, 1000000)::float8)
                        + mod(u.m, 1000000) * interval '1 microsecond'
                   FROM unnest($2::int8[]) WITH ORDINALITY AS u (m, n) ORDER BY u.n),
           $3::float8[], $4)"""

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
