-- The engine's intake stages (engine/processing.py's INTAKE): which buckets a raw stream's new
-- points can change, and which processed streams a channel's raw media call for. The energy of a
-- bucket is 24_engine_energy.sql's, the points it makes 25_engine_results.sql's; the three
-- files are the engine's processing in chapters (docs/engine.md#the-statements-stages).
-- Re-applied by every `migrate`, after the numbered migrations: the one current definition.
--
-- Every stage is a LANGUAGE sql function, STABLE, without STRICT or SET, whose body is one
-- SELECT: the planner inlines it into the calling statement, so the chain plans as one
-- statement. A stage without a WITH is pulled up into its caller's joins; a stage with one
-- (its MATERIALIZED boundaries) stays a subquery of its caller, planned once. What writes (the
-- queues, the streams) cannot be inlined (a function that writes is VOLATILE and planned apart,
-- where the statement's EXPLAIN does not see it): it stays in the statements, which call these.

-- Intake: the buckets whose results a written period [lower, upper] of a raw stream can change
-- (docs/engine.md#work-late-data-and-configuration-changes). Widened to the bucket of the
-- previous point when the segment from it is bridged (cluster.bridge_limit()), and across
-- bridged gaps. A meter counter's (p_counter: a register or a reading) to its second neighbour
-- on each side: a point changes whether its neighbours are glitches, which changes the segments
-- from the one before them to the one after them (docs/engine.md#registers-wh), and a meter
-- reading's consumption is counted at the later reading. Power and means across a gap change
-- nothing beyond it: a point from 2000 does not queue the bucket of the channel's next point,
-- years later (issue 59; before, every written period also queued its next point's bucket,
-- which the counters' widening holds anyway).
-- Nor does a counter's reading change the inside of a gap longer than EP_ENGINE_MAX_SPREAD
-- (cluster.max_spread_seconds()) next to it: nothing is spread over such a gap, its step goes
-- whole to the bucket of its later reading, which is queued (issue 59: a register reading
-- stamped 2000 beside a history of today queued the 26 years between, and the engine walked
-- them in 6-hour pieces). Unless the channel also has raw streams of another method (the
-- register's span decides between it and the power or readings beside it in every bucket
-- between its first and its last reading, docs/engine.md#each-wh-once): then the whole range.
-- Plan: called per written period (LATERAL), its
-- neighbours are two index probes per tier (cluster.point_neighbours, inlined), a counter's
-- second neighbours two more. OFFSET 0 keeps each one subquery: pulled up, each use of before
-- and after became a copy of its probes, to plan and to run (planning INTAKE took 24 ms
-- instead of 6).
CREATE OR REPLACE FUNCTION cluster.affected_buckets(
    p_raw_id bigint, p_counter boolean, p_written tstzrange
) RETURNS TABLE (buckets tstzrange)
LANGUAGE sql STABLE AS $$
    SELECT unnest(tstzmultirange(tstzrange(
               time_bucket(cluster.bucket_width(),
                           CASE WHEN p_counter AND n.before IS NOT NULL
                                THEN coalesce(n2.before, n.before)
                                WHEN lower(p_written) - n.before <= cluster.bridge_limit()
                                THEN n.before ELSE lower(p_written) END),
               time_bucket(cluster.bucket_width(),
                           CASE WHEN p_counter AND n.after IS NOT NULL
                                THEN coalesce(n2.after, n.after)
                                WHEN n.after - upper(p_written) <= cluster.bridge_limit()
                                THEN n.after ELSE upper(p_written) END)
                   + cluster.bucket_width()))
           - coalesce(g.gaps, '{}'::tstzmultirange))
      FROM (SELECT * FROM cluster.point_neighbours(p_raw_id, lower(p_written),
                                                  upper(p_written) + interval '1 microsecond')
            OFFSET 0) n
      LEFT JOIN LATERAL (
           SELECT * FROM cluster.point_neighbours(p_raw_id, n.before,
                                                  n.after + interval '1 microsecond')
            WHERE p_counter OFFSET 0) n2 ON true
      LEFT JOIN LATERAL (
           -- The insides of the long gaps between the readings read: from the bucket after
           -- the earlier reading's to the later reading's (exclusive).
           SELECT range_agg(tstzrange(
                      time_bucket(cluster.bucket_width(), x.earlier) + cluster.bucket_width(),
                      time_bucket(cluster.bucket_width(), x.later))) AS gaps
             FROM (VALUES (n2.before, n.before), (n.before, lower(p_written)),
                          (upper(p_written), n.after), (n.after, n2.after)) AS x (earlier, later)
            WHERE p_counter
              AND date_part('epoch', x.later - x.earlier) > cluster.max_spread_seconds()
              AND NOT EXISTS (
                  SELECT FROM cluster.streams s
                    JOIN cluster.streams o
                      ON o.feed_id = s.feed_id AND o.channel = s.channel AND o.type = 'raw'
                    JOIN cluster.processable_media sm ON sm.medium_id = s.medium
                    JOIN cluster.processable_media om ON om.medium_id = o.medium
                   WHERE s.id = p_raw_id AND om.method NOT IN ('mean', sm.method))) g ON true
$$;
COMMENT ON FUNCTION cluster.affected_buckets(bigint, boolean, tstzrange) IS
    'The buckets a raw stream''s points written in p_written can change (p_counter: a meter counter, widened to its second neighbours, but not into a gap longer than EP_ENGINE_MAX_SPREAD unless the channel mixes methods).';

-- Intake: the processed streams the raw media of the given channels (p_feeds[i],
-- p_channels[i]) call for, with their first configuration's title, medium and unit (money in
-- p_currency): one per quantity and index, where a register's index is a tariff (1-0:1.8.2:
-- tariff 2), never a phase; a combined one when a channel has two or more of a quantity; and
-- beside each consumption or export stream its money stream (cluster.money_quantity). Streams
-- that exist already are included: the caller keeps the missing ones. Plan: set-based over the
-- batch's channels (a join with the streams' (feed_id, channel) index, one sort); the intake
-- passes its channels as two arrays of one row, so that this is inlined once, not per channel.
CREATE OR REPLACE FUNCTION cluster.channel_streams(
    p_feeds bigint[], p_channels integer[], p_currency text
) RETURNS TABLE (feed_id bigint, channel integer, idx integer, register integer, combined boolean,
                 quantity text, title text, medium text, unit text)
LANGUAGE sql STABLE AS $$
WITH media AS (
    SELECT DISTINCT ON (s.feed_id, s.channel, m.quantity, t.idx, t.register)
           s.feed_id, s.channel, m.quantity, t.idx, t.register, m.medium, m.title, m.unit,
           m.index_label
      FROM unnest(p_feeds, p_channels) AS c (feed_id, channel)
      JOIN cluster.streams s ON s.feed_id = c.feed_id AND s.channel = c.channel AND s.type = 'raw'
      JOIN cluster.processable_media m ON m.medium_id = s.medium
     CROSS JOIN LATERAL cluster.processed_target(m.method, s.idx) t
     ORDER BY s.feed_id, s.channel, m.quantity, t.idx, t.register, m.medium_id
), wanted AS (
    SELECT feed_id, channel, quantity, idx, register, false AS combined, medium, title, unit,
           index_label
      FROM media
    UNION ALL
    SELECT feed_id, channel, quantity, NULL, NULL, true, min(medium), min(title), min(unit), ''
      FROM media WHERE idx IS NOT NULL OR register IS NOT NULL
     GROUP BY feed_id, channel, quantity HAVING count(*) >= 2
)
SELECT w.feed_id, w.channel, w.idx, w.register, w.combined, q.quantity,
       w.title || CASE WHEN k.money THEN ' ' || q.quantity ELSE '' END || ', channel '
           || w.channel
           || CASE WHEN w.combined THEN ', total'
                   WHEN w.register IS NOT NULL THEN ', tariff ' || w.register
                   WHEN w.idx IS NULL THEN ''
                   ELSE w.index_label || w.idx END,
       w.medium, CASE WHEN k.money THEN p_currency ELSE w.unit END
  FROM wanted w
 CROSS JOIN (VALUES (false), (true)) AS k (money)
 CROSS JOIN LATERAL (
       SELECT CASE WHEN k.money THEN cluster.money_quantity(w.quantity) ELSE w.quantity END
              AS quantity) q
 WHERE q.quantity IS NOT NULL
$$;
COMMENT ON FUNCTION cluster.channel_streams(bigint[], integer[], text) IS
    'The processed streams (identity, title, medium, unit) the given channels'' raw media call for, money streams in p_currency included.';
