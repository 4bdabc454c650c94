"""Named SQL of the data API.

Visibility: every query reads feeds through ``cluster.user_feeds(user, is_admin)``
(sql/functions/14_core_feeds.sql), the one definition of which feeds a user sees.
"""

FEEDS_OF_OWNER = """
SELECT f.id, f.subscription_from, f.subscription_to
  FROM cluster.user_feeds($1, false) f
 ORDER BY f.id"""

FEED_CONFIGS = """
SELECT feed_id, title, timezone, nullif(lower(validity), '-infinity') AS valid_from,
       nullif(upper(validity), 'infinity') AS valid_to
  FROM cluster.feed_configs
 WHERE feed_id = ANY($1::bigint[])
 ORDER BY feed_id, lower(validity) NULLS FIRST"""

# $4/$5 are data_time_from/to, two rules as the spec states them: a stream qualifies with a
# point at or after $4 and with a point at or before $5 (its last and first point: index ends).
STREAMS_OF_FEED = """
SELECT s.id, s.type, s.channel, s.device, s.medium, s.idx, s.register, s.combined, s.quantity
  FROM cluster.streams s
 WHERE s.feed_id = $1
   AND ($2::text[] IS NULL OR s.type = ANY($2::text[]))
   AND ($3::int[] IS NULL OR s.channel = ANY($3::int[]))
   AND ($4::bigint IS NULL OR cluster.stream_point_edge(s.id, true) >= to_timestamp($4::bigint))
   AND ($5::bigint IS NULL OR cluster.stream_point_edge(s.id, false) <= to_timestamp($5::bigint))
 ORDER BY s.id"""

VISIBLE_STREAM = """
SELECT s.id, s.type, s.channel, s.device, s.medium, s.idx, s.register, s.combined, s.quantity
  FROM cluster.streams s
  JOIN cluster.user_feeds($3, $4) f ON f.id = s.feed_id
 WHERE s.id = $1 AND s.feed_id = $2"""

STREAM_CONFIGS = """
SELECT stream_id, title, medium, unit, nullif(lower(validity), '-infinity') AS valid_from,
       nullif(upper(validity), 'infinity') AS valid_to, submeter, main
  FROM cluster.stream_configs
 WHERE stream_id = ANY($1::bigint[])
 ORDER BY stream_id, lower(validity) NULLS FIRST"""

# The stream-data endpoint in one round trip: who calls ($1, the token's SHA-256), whether they
# may see stream $3 of feed $2, and the newest $6 points in [$4, $5] as the ready body, oldest
# first: JSON, or CSV when $7 is true (one aggregate either way, its rows and separator chosen
# per row, so that JSON pays nothing for CSV). Only the branch of the stream's own type scans
# (one-time filters); each scan is the primary key (stream_id, ts) read backwards. The compact
# tier's days are read newest first too (its primary key, then each day's points by their
# order in the arrays), so a limit stops the reading early. An unknown caller or invisible
# stream gets `[]`.
STREAM_DATA = """
WITH caller AS (
    SELECT user_id AS id, is_admin FROM cluster.token_caller($1)),
stream AS (
    SELECT s.type
      FROM caller c
     CROSS JOIN LATERAL cluster.user_feeds(c.id, c.is_admin) f
      JOIN cluster.streams s ON s.feed_id = f.id
     WHERE f.id = $2 AND s.id = $3),
newest AS (
    (SELECT ts, value FROM cluster.raw_points
      WHERE (SELECT type FROM stream) = 'raw' AND stream_id = $3
        AND ts >= to_timestamp($4::bigint) AND ts <= to_timestamp($5::bigint)
      ORDER BY ts DESC LIMIT $6)
    UNION ALL
    (SELECT ts, value FROM cluster.processed_points
      WHERE (SELECT type FROM stream) = 'processed' AND stream_id = $3
        AND ts >= to_timestamp($4::bigint) AND ts <= to_timestamp($5::bigint)
      ORDER BY ts DESC LIMIT $6)
    UNION ALL
    (SELECT ts, value FROM cluster.system_points
      WHERE (SELECT type FROM stream) = 'system' AND stream_id = $3
        AND ts >= to_timestamp($4::bigint) AND ts <= to_timestamp($5::bigint)
      ORDER BY ts DESC LIMIT $6)
    UNION ALL
    (SELECT x.ts, x.value
       FROM cluster.point_days d
      CROSS JOIN LATERAL cluster.unpack(d.first_ts, d.step_us, d.offsets_us, d.vals, d.scale,
                                        d.base, d.deltas, d.wide_at, d.wide) x
      WHERE EXISTS (SELECT FROM stream) AND d.stream_id = $3
        AND d.day >= (to_timestamp($4::bigint) AT TIME ZONE 'UTC')::date
        AND d.day <= (to_timestamp($5::bigint) AT TIME ZONE 'UTC')::date
        AND x.ts >= to_timestamp($4::bigint) AND x.ts <= to_timestamp($5::bigint)
      ORDER BY d.day DESC, x.n DESC LIMIT $6)),
kept AS (
    SELECT ts, value FROM newest ORDER BY ts DESC LIMIT $6)
SELECT EXISTS (SELECT FROM caller) AS caller_known,
       EXISTS (SELECT FROM stream) AS visible,
       (SELECT convert_to(CASE WHEN $7::boolean THEN E'time,value\\r\\n' || coalesce(b.text, '')
                               ELSE '[' || coalesce(b.text, '') || ']' END, 'UTF8')
          FROM (SELECT string_agg(CASE WHEN $7::boolean THEN cluster.csv_point(ts, value)
                                       ELSE cluster.json_point(ts, value) END,
                                  CASE WHEN $7::boolean THEN '' ELSE ',' END ORDER BY ts) AS text
                  FROM kept) b) AS body"""

# The same answer per local hour ($7 = 'hour') or per local day or month ($7 = 'day' |
# 'month'), from the hourly or the daily rollups, real time: while the engine has work queued
# for the stream, its hours and days come from cluster.realtime_hours and realtime_days
# (sql/functions/61_core_realtime_rollups.sql), else straight from the rollups. The newest $6
# buckets whose start is in [$4, $5], as the ready body (CSV when $9 is true). Rows up to $8
# after $5 are read, so that the last month is whole. A bucket's value is the sum of its rows
# (additive streams, by the configuration valid at its start) or the mean of its points. Hours
# and days carry their own local start; a month starts at local midnight of the first, in the
# zone of its first day.
STREAM_BUCKETS = """
WITH caller AS (
    SELECT user_id AS id, is_admin FROM cluster.token_caller($1)),
stream AS (
    SELECT s.type, s.feed_id
      FROM caller c
     CROSS JOIN LATERAL cluster.user_feeds(c.id, c.is_admin) f
      JOIN cluster.streams s ON s.feed_id = f.id
     WHERE f.id = $2 AND s.id = $3),
media AS MATERIALIZED (
    SELECT sc.medium, sc.validity FROM cluster.stream_configs sc WHERE sc.stream_id = $3),
queued AS MATERIALIZED (
    -- Work the engine has not done for this stream: then its rollups are read in real time.
    SELECT EXISTS (SELECT FROM cluster.stale_rollups s WHERE s.stream_id = $3) AS stale),
hours AS (
    SELECT r.hour, r.total, r.points
      FROM cluster.hourly_rollups r
     WHERE NOT (SELECT stale FROM queued) AND r.stream_id = $3
       AND r.hour >= to_timestamp($4::bigint) AND r.hour <= to_timestamp($5::bigint)
    UNION ALL
    SELECT r.hour, r.total, r.points
      FROM cluster.realtime_hours($3, to_timestamp($4::bigint), to_timestamp($5::bigint)) r
     WHERE (SELECT stale FROM queued)),
days AS (
    SELECT d.day, d.start, d.timezone, d.total, d.points
      FROM cluster.daily_rollups d
     WHERE NOT (SELECT stale FROM queued) AND d.stream_id = $3
       AND d.start >= to_timestamp($4::bigint)
       AND d.start <= to_timestamp($5::bigint) + $8::interval
    UNION ALL
    SELECT d.day, d.start, d.timezone, d.total, d.points
      FROM cluster.realtime_days($3, to_timestamp($4::bigint),
                                 to_timestamp($5::bigint) + $8::interval) d
     WHERE (SELECT stale FROM queued)),
rows AS (
    SELECT h.hour AS start, h.hour AS first, h.total, h.points
      FROM hours h
     WHERE $7::text = 'hour' AND EXISTS (SELECT FROM stream)
    UNION ALL
    SELECT CASE $7::text WHEN 'day' THEN d.start
                ELSE date_trunc('month', d.day)::timestamp AT TIME ZONE d.timezone END,
           d.start, d.total, d.points
      FROM days d
     WHERE $7::text <> 'hour' AND EXISTS (SELECT FROM stream)),
newest AS (
    SELECT b.start AS ts,
           CASE WHEN cluster.additive((SELECT type FROM stream), (
                         SELECT m.medium FROM media m WHERE m.validity @> min(b.first)))
                THEN sum(b.total) ELSE sum(b.total) / sum(b.points) END AS value
      FROM rows b
     GROUP BY b.start
    HAVING b.start >= to_timestamp($4::bigint) AND b.start <= to_timestamp($5::bigint)
     ORDER BY b.start DESC LIMIT $6)
SELECT EXISTS (SELECT FROM caller) AS caller_known,
       EXISTS (SELECT FROM stream) AS visible,
       (SELECT convert_to(CASE WHEN $9::boolean THEN E'time,value\\r\\n' || coalesce(b.text, '')
                               ELSE '[' || coalesce(b.text, '') || ']' END, 'UTF8')
          FROM (SELECT string_agg(CASE WHEN $9::boolean THEN cluster.csv_point(ts, value)
                                       ELSE cluster.json_point(ts, value) END,
                                  CASE WHEN $9::boolean THEN '' ELSE ',' END ORDER BY ts) AS text
                  FROM newest) b) AS body"""
