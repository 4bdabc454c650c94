"""Named SQL of the data API.

Visibility: a feed is visible to its owner and to admins, and to nobody while its homebase is
registered with the forwarder.
"""

CALLER_BY_DIGEST = "SELECT id, is_admin FROM cluster.users WHERE token_sha256 = $1"

USER_EXISTS = "SELECT EXISTS (SELECT 1 FROM cluster.users WHERE id = $1)"

FEEDS_OF_OWNER = """
SELECT f.id, f.subscription_from, f.subscription_to
  FROM cluster.feeds f
 WHERE f.owner_id = $1
   AND NOT EXISTS (SELECT 1 FROM forwarder.registrations r WHERE r.homebase_sn = f.homebase_sn)
 ORDER BY f.id"""

VISIBLE_FEED = """
SELECT f.id, f.subscription_from, f.subscription_to
  FROM cluster.feeds f
 WHERE f.id = $1 AND (f.owner_id = $2 OR $3)
   AND NOT EXISTS (SELECT 1 FROM forwarder.registrations r WHERE r.homebase_sn = f.homebase_sn)"""

FEED_CONFIGS = """
SELECT feed_id, title, timezone, nullif(lower(validity), '-infinity') AS valid_from,
       nullif(upper(validity), 'infinity') AS valid_to
  FROM cluster.feed_configs
 WHERE feed_id = ANY($1::bigint[])
 ORDER BY feed_id, lower(validity) NULLS FIRST"""

# $4/$5 are data_time_from/to: a stream qualifies with one point in [from, to] of its own table.
STREAMS_OF_FEED = """
SELECT s.id, s.type, s.channel, s.device, s.medium, s.idx, s.combined
  FROM cluster.streams s
 WHERE s.feed_id = $1
   AND ($2::text[] IS NULL OR s.type = ANY($2::text[]))
   AND ($3::int[] IS NULL OR s.channel = ANY($3::int[]))
   AND (($4::bigint IS NULL AND $5::bigint IS NULL) OR CASE s.type
        WHEN 'raw' THEN EXISTS (
            SELECT 1 FROM cluster.raw_points p WHERE p.stream_id = s.id
               AND p.ts >= coalesce(to_timestamp($4::bigint), '-infinity')
               AND p.ts <= coalesce(to_timestamp($5::bigint), 'infinity'))
        WHEN 'processed' THEN EXISTS (
            SELECT 1 FROM cluster.processed_points p WHERE p.stream_id = s.id
               AND p.ts >= coalesce(to_timestamp($4::bigint), '-infinity')
               AND p.ts <= coalesce(to_timestamp($5::bigint), 'infinity'))
        ELSE EXISTS (
            SELECT 1 FROM cluster.system_points p WHERE p.stream_id = s.id
               AND p.ts >= coalesce(to_timestamp($4::bigint), '-infinity')
               AND p.ts <= coalesce(to_timestamp($5::bigint), 'infinity'))
        END)
 ORDER BY s.id"""

VISIBLE_STREAM = """
SELECT s.id, s.type, s.channel, s.device, s.medium, s.idx, s.combined
  FROM cluster.streams s
  JOIN cluster.feeds f ON f.id = s.feed_id
 WHERE s.id = $1 AND s.feed_id = $2 AND (f.owner_id = $3 OR $4)
   AND NOT EXISTS (SELECT 1 FROM forwarder.registrations r WHERE r.homebase_sn = f.homebase_sn)"""

STREAM_CONFIGS = """
SELECT stream_id, title, medium, unit, nullif(lower(validity), '-infinity') AS valid_from,
       nullif(upper(validity), 'infinity') AS valid_to
  FROM cluster.stream_configs
 WHERE stream_id = ANY($1::bigint[])
 ORDER BY stream_id, lower(validity) NULLS FIRST"""

# The newest $4 points of one stream in [$2, $3], oldest first, as two arrays (times, values).
# Each is served by the primary key (stream_id, ts), scanned backwards.
RAW_POINTS = """
SELECT coalesce(array_agg(t ORDER BY t), '{}'), coalesce(array_agg(value ORDER BY t), '{}')
  FROM (SELECT extract(epoch FROM ts)::bigint AS t, value
          FROM cluster.raw_points
         WHERE stream_id = $1 AND ts >= to_timestamp($2::bigint) AND ts <= to_timestamp($3::bigint)
         ORDER BY ts DESC
         LIMIT $4) newest"""

PROCESSED_POINTS = """
SELECT coalesce(array_agg(t ORDER BY t), '{}'), coalesce(array_agg(value ORDER BY t), '{}')
  FROM (SELECT extract(epoch FROM ts)::bigint AS t, value
          FROM cluster.processed_points
         WHERE stream_id = $1 AND ts >= to_timestamp($2::bigint) AND ts <= to_timestamp($3::bigint)
         ORDER BY ts DESC
         LIMIT $4) newest"""

SYSTEM_POINTS = """
SELECT coalesce(array_agg(t ORDER BY t), '{}'), coalesce(array_agg(value ORDER BY t), '{}')
  FROM (SELECT extract(epoch FROM ts)::bigint AS t, value
          FROM cluster.system_points
         WHERE stream_id = $1 AND ts >= to_timestamp($2::bigint) AND ts <= to_timestamp($3::bigint)
         ORDER BY ts DESC
         LIMIT $4) newest"""

POINTS = {"raw": RAW_POINTS, "processed": PROCESSED_POINTS, "system": SYSTEM_POINTS}
