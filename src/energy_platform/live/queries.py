"""The reader's statements over the live log (sql/0023_live.sql, sql/functions/70_live.sql).

Positions are in commit order, so "the events after position p" is exact: a snapshot that
holds position q holds every committed position below q.
"""

# The events after $1 of the feeds $3, and the highest position there is, in one snapshot (the
# follower moves on to it: events of feeds nobody here follows are never read). At most $2.
FOLLOW = """
WITH top AS (SELECT max(pos) AS pos FROM cluster.live_log)
SELECT (SELECT pos FROM top) AS top, e.pos, e.feed_id, e.stream_id, e.kind, e.times, e.vals,
       e.day
  FROM (SELECT 1) one
  LEFT JOIN LATERAL (
      SELECT pos, feed_id, stream_id, kind, times, vals, day
        FROM cluster.live_log
       WHERE pos > $1 AND pos <= (SELECT pos FROM top) AND feed_id = ANY($3::bigint[])
       ORDER BY pos LIMIT $2) e ON true
 ORDER BY e.pos"""

# Where the log stands: the highest position committed (the horizon when it is empty) and the
# highest pruned.
EDGES = """
SELECT greatest((SELECT max(pos) FROM cluster.live_log), h.pos) AS top, h.pos AS horizon
  FROM cluster.live_horizon h"""

# One page of a feed's replay (a reconnect's): its events after $2 up to $3, at most $4, in
# order, keyed on the position (the next page starts after this one's last), with the horizon
# in the same snapshot: past $2, events of the replay may have been pruned before they were
# read (pruning raises it in the transaction that deletes them).
REPLAY_PAGE = """
SELECT h.pos AS horizon, e.pos, e.stream_id, e.kind, e.times, e.vals, e.day
  FROM cluster.live_horizon h
  LEFT JOIN LATERAL (
      SELECT pos, stream_id, kind, times, vals, day
        FROM cluster.live_log
       WHERE feed_id = $1 AND pos > $2 AND pos <= $3
       ORDER BY pos LIMIT $4) e ON true
 ORDER BY e.pos"""

# Which (token, feed) pairs may still be followed: the token is valid and its user sees the feed.
STILL_ALLOWED = """
SELECT k.n
  FROM unnest($1::bytea[], $2::bigint[]) WITH ORDINALITY AS k (digest, feed_id, n)
 WHERE EXISTS (SELECT FROM cluster.token_caller(k.digest) c
                CROSS JOIN LATERAL cluster.user_feeds(c.user_id, c.is_admin) f
               WHERE f.id = k.feed_id)"""

# The feed $1 if the user $2 (admin: $3) sees it, with the first of the streams $4 that is not
# the feed's (null: all are).
VISIBLE_FEED = """
SELECT f.id,
       (SELECT s FROM unnest($4::bigint[]) AS s
         WHERE NOT EXISTS (SELECT FROM cluster.streams WHERE id = s AND feed_id = f.id)
         LIMIT 1) AS foreign_stream
  FROM cluster.user_feeds($2, $3) f
 WHERE f.id = $1"""

PRUNE = "SELECT cluster.live_prune(make_interval(secs => $1))"
# A failed round narrowed down: the streams with events to prune, then each alone.
PRUNABLE_STREAMS = """
SELECT DISTINCT stream_id FROM cluster.live_log
 WHERE logged_at < now() - make_interval(secs => $1) AND pos > 0"""
PRUNE_STREAM = "SELECT cluster.live_prune_stream(make_interval(secs => $1), $2)"
