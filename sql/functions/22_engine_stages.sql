-- The engine's processing in chapters: the stages its intake and compute statements
-- (engine/processing.py) are made of, each readable, testable and EXPLAINable alone
-- (docs/engine.md#the-statements-stages). Re-applied by every `migrate`, after the numbered
-- migrations: the one current definition.
--
-- Every stage is a LANGUAGE sql function, STABLE, without STRICT or SET, whose body is one
-- SELECT: the planner inlines it into the calling statement, so the chain plans as one
-- statement. A stage without a WITH is pulled up into its caller's joins; a stage with one
-- (its MATERIALIZED boundaries) stays a subquery of its caller, planned once. The compute
-- stages take the statement's work as four arrays (feed, channel, [from, to) per period):
-- arrays, not rows of a table, so that each stage runs alone as `SELECT * FROM stage(...)`.
-- What writes (the queues, the points, the live events) cannot be inlined (a function that
-- writes is VOLATILE and planned apart, where the statement's EXPLAIN does not see it): it stays
-- in the statements, which call these.

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
                      time_bucket(cluster.bucket_width(), x.e0) + cluster.bucket_width(),
                      time_bucket(cluster.bucket_width(), x.e1))) AS gaps
             FROM (VALUES (n2.before, n.before), (n.before, lower(p_written)),
                          (upper(p_written), n.after), (n.after, n2.after)) AS x (e0, e1)
            WHERE p_counter
              AND date_part('epoch', x.e1 - x.e0) > cluster.max_spread_seconds()
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

-- Compute, write-back: the processed streams of each work period (a row per period and
-- stream), whose points in [wfrom, wto) the compute statement replaces, whose hours it queues
-- for the rollups and whose compacted days it thaws first. Plan: a hash join of the work
-- with the processed streams.
CREATE OR REPLACE FUNCTION cluster.work_streams(
    p_feeds bigint[], p_channels integer[], p_from timestamptz[], p_to timestamptz[]
) RETURNS TABLE (stream_id bigint, wfrom timestamptz, wto timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT ps.id, w.wfrom, w.wto
      FROM unnest(p_feeds, p_channels, p_from, p_to) AS w (feed_id, channel, wfrom, wto)
      JOIN cluster.streams ps
        ON ps.feed_id = w.feed_id AND ps.channel = w.channel AND ps.type = 'processed'
$$;
COMMENT ON FUNCTION cluster.work_streams(bigint[], integer[], timestamptz[], timestamptz[]) IS
    'The processed streams of each of the work''s periods (feed, channel, [from, to)).';

-- Compute, energy per bucket: the raw streams of the work's channels, each with the period
-- of points to read: from the last point before the period to the first at or after its end,
-- and for a meter counter (register or reading) one more on each side, the neighbours that
-- decide whether the first and the last reading are glitches (cluster.glitch). A counter also
-- gets its rate limit per second (cluster.rate_at: rate, or where it changes in the period
-- rates[i] from starts[i] on, the first from -Infinity): its own processed stream's
-- configurations' (`admin streams configure --max-rate`), else its medium's
-- (cluster.default_max_rate), and a register the longest gap
-- its rise is spread over (cluster.max_spread_seconds): read once per stream, not per point.
-- Plan: a join of the work with the streams' (feed_id, channel) index, per raw stream two
-- index probes per tier for its neighbours (cluster.point_neighbours, inlined), and for a
-- counter two more and its configurations.
CREATE OR REPLACE FUNCTION cluster.engine_sources(
    p_feeds bigint[], p_channels integer[], p_from timestamptz[], p_to timestamptz[]
) RETURNS TABLE (raw_id bigint, register boolean, reading boolean, wf double precision,
                 wt double precision, lo timestamptz, hi timestamptz, rate double precision,
                 starts double precision[], rates double precision[],
                 spread double precision, factor double precision,
                 factors double precision[])
LANGUAGE sql STABLE AS $$
    SELECT s.id, m.method = 'register', m.method = 'reading',
           date_part('epoch', w.wfrom), date_part('epoch', w.wto), x.lo, x.hi,
           CASE WHEN cardinality(r.rates) = 1 THEN r.rates[1] END,
           CASE WHEN cardinality(r.rates) > 1 THEN '-Infinity'::float8 || r.starts[2:] END,
           CASE WHEN cardinality(r.rates) > 1 THEN r.rates END,
           CASE WHEN m.method IN ('register', 'reading') THEN cluster.max_spread_seconds() END,
           CASE WHEN cardinality(r.factors) > 1 THEN NULL ELSE coalesce(r.factors[1], 1) END,
           CASE WHEN cardinality(r.factors) > 1 THEN r.factors END
      FROM unnest(p_feeds, p_channels, p_from, p_to) AS w (feed_id, channel, wfrom, wto)
      JOIN cluster.streams s ON s.feed_id = w.feed_id AND s.channel = w.channel AND s.type = 'raw'
      JOIN cluster.processable_media m ON m.medium_id = s.medium
     CROSS JOIN LATERAL cluster.point_neighbours(s.id, w.wfrom, w.wto) n
      LEFT JOIN LATERAL (
           SELECT * FROM cluster.point_neighbours(s.id, n.before, n.after + interval '1 microsecond')
            WHERE m.method IN ('register', 'reading')) n2 ON true
     CROSS JOIN LATERAL (SELECT coalesce(n2.before, n.before, w.wfrom) AS lo,
                                coalesce(n2.after, n.after, w.wto) AS hi) x
      LEFT JOIN LATERAL (
           SELECT coalesce(array_agg(date_part('epoch', lower(c.validity))
                                     ORDER BY lower(c.validity) NULLS FIRST),
                           '{-Infinity}') AS starts,
                  coalesce(array_agg(coalesce(c.max_rate, cluster.default_max_rate(m.medium))
                                     / 3600 ORDER BY lower(c.validity) NULLS FIRST),
                           ARRAY[cluster.default_max_rate(m.medium) / 3600]) AS rates,
                  coalesce(array_agg(cluster.unit_factor(m.medium, c.sent_unit)
                                     ORDER BY lower(c.validity) NULLS FIRST),
                           '{1}') AS factors
             FROM cluster.processed_target(m.method, s.idx) t
             JOIN cluster.streams ps
               ON ps.feed_id = s.feed_id AND ps.channel = s.channel AND ps.type = 'processed'
              AND ps.quantity = m.quantity AND NOT ps.combined
              AND ps.idx IS NOT DISTINCT FROM t.idx AND ps.register IS NOT DISTINCT FROM t.register
             JOIN cluster.stream_configs c
               ON c.stream_id = ps.id AND c.validity && tstzrange(x.lo, x.hi, '[]')
            WHERE m.method IN ('register', 'reading')) r ON true
$$;
COMMENT ON FUNCTION cluster.engine_sources(bigint[], integer[], timestamptz[], timestamptz[]) IS
    'The raw streams of the work''s periods, with their method, the span of points to read and, for a counter, its rate limit (per second: rate, or rates[i] from starts[i] on), its longest spread gap and the factor of the unit its reader sends (factor, or factors[i] from starts[i] on).';

-- Compute, energy per bucket: the segments of one raw stream of the work (a row of
-- cluster.engine_sources, given field by field: its id, whether it is a meter counter, the
-- period [wf, wt), the points' span lo..hi, its rate limit and a register's longest spread gap),
-- a row each, with what the rules of meter counters (registers and readings,
-- docs/engine.md#registers-wh) judged of it. The points from lo to hi are paired, each with the
-- next: a counter's glitch (cluster.glitch) starts no segment, and the segment before it ends at
-- the point after it (skip; the glitch is ge, gv); plausible: the counter could make the
-- segment's rise (cluster.plausible_rise, judged by the rate limit at its later reading), else
-- it is a reset or a replacement and counts 0; followed: a point follows the segment's end (a
-- drop there has persisted: a reset, not a glitch yet to be undone); spread: a register's rise
-- is spread over the segment. Cut to the segments that reach the period: the outer neighbours
-- are read only to judge the inner ones.
-- p_judge, a constant at every call, chooses between the rules and the fast path: false pairs
-- each point with the next only (skip false, plausible = counter, followed false), and sound
-- tells whether that is exact: a counter's pair whose rise is not plausible is unsound (a
-- glitch, a reset and a replacement each make one: a glitch is below the reading before it),
-- and is kept even outside the period, so that its stream is judged by the rules instead
-- (cluster.bucket_energy). Nearly every stream has no such pair, and the rules' neighbours cost
-- more than the rest of a segment.
-- Plan: inlined into its caller's LATERAL, with p_judge folded: the expressions it guards are
-- gone, and with them their window functions (false: two leads, as before the rules; true: one
-- window gives each point every neighbour its rules read). One sort per raw stream, over epochs
-- taken once per point; OFFSET 0 keeps each expression computed once per point.
CREATE OR REPLACE FUNCTION cluster.source_segments(
    p_raw_id bigint, p_counter boolean, p_wf double precision, p_wt double precision,
    p_lo timestamptz, p_hi timestamptz, p_rate double precision,
    p_starts double precision[], p_rates double precision[], p_spread double precision,
    p_judge boolean, p_factor double precision, p_factors double precision[]
) RETURNS TABLE (e0 double precision, v0 double precision, e1 double precision,
                 v1 double precision, skip boolean, ge double precision, gv double precision,
                 plausible boolean, followed boolean, spread boolean, sound boolean)
LANGUAGE sql STABLE AS $$
SELECT g.e0, g.v0, CASE WHEN j.skip THEN g.nne ELSE g.ne END,
       CASE WHEN j.skip THEN g.nnv ELSE g.nv END, j.skip,
       CASE WHEN j.skip THEN g.ne END, CASE WHEN j.skip THEN g.nv END,
       p_counter
       AND (NOT p_judge
            OR cluster.plausible_rise(
                   g.v0, g.e0, CASE WHEN j.skip THEN g.nnv ELSE g.nv END,
                   CASE WHEN j.skip THEN g.nne ELSE g.ne END,
                   cluster.rate_at(p_rate, p_starts, p_rates,
                                   CASE WHEN j.skip THEN g.nne ELSE g.ne END))),
       p_judge AND g.nne IS NOT NULL, CASE WHEN j.skip THEN g.nne ELSE g.ne END - g.e0 <= p_spread,
       g.sound
  FROM (
     -- The window's own projection judges each point (the neighbours are its window
     -- functions, each computed once however often it is named).
     SELECT p.e AS e0, p.value AS v0, lead(p.e) OVER w AS ne, lead(p.value) OVER w AS nv,
            lead(p.e, 2) OVER w AS nne, lead(p.value, 2) OVER w AS nnv,
            p_judge AND p_counter
            AND cluster.glitch(lag(p.e) OVER w, lag(p.value) OVER w, p.value, lead(p.e) OVER w,
                               lead(p.value) OVER w,
                               cluster.rate_at(p_rate, p_starts, p_rates, lead(p.e) OVER w))
                AS glitch,
            p_judge AND p_counter
            AND cluster.glitch(p.e, p.value, lead(p.value) OVER w, lead(p.e, 2) OVER w,
                               lead(p.value, 2) OVER w,
                               cluster.rate_at(p_rate, p_starts, p_rates, lead(p.e, 2) OVER w))
                AS skip,
            p_judge OR NOT p_counter
            OR cluster.plausible_rise(p.value, p.e, lead(p.value) OVER w, lead(p.e) OVER w,
                                      cluster.rate_at(p_rate, p_starts, p_rates,
                                                      lead(p.e) OVER w))
                AS sound
       -- A counter's reading in the medium's unit: times the factor of the unit its reader
       -- sent at that instant (cluster.unit_factor; 1 for everything else).
       FROM (SELECT q.ts, q.e,
                    q.value * cluster.rate_at(p_factor, p_starts, p_factors, q.e) AS value
               FROM (SELECT q.ts, date_part('epoch', q.ts) AS e, q.value
                       FROM cluster.stream_points(p_raw_id, p_lo,
                                                  p_hi + interval '1 microsecond') q) q
             OFFSET 0) p
     WINDOW w AS (ORDER BY p.ts)
 ) g
 -- Written out where it is read, so that the fast path folds it, and what it reads, away.
 CROSS JOIN LATERAL (SELECT p_judge AND g.skip AS skip) j
 WHERE g.ne IS NOT NULL AND NOT g.glitch
   AND (CASE WHEN j.skip THEN g.nne ELSE g.ne END >= p_wf AND g.e0 < p_wt
        OR NOT g.sound)
$$;
COMMENT ON FUNCTION cluster.source_segments(bigint, boolean, double precision, double precision, timestamptz, timestamptz, double precision, double precision[], double precision[], double precision, boolean, double precision, double precision[]) IS
    'The segments of one raw stream that reach the period [p_wf, p_wt), judged by a meter counter''s rules (p_judge), or paired with the next point only, where sound tells that this is exact.';

-- Compute: the segments of the work's raw streams (cluster.source_segments, by the rules),
-- with their source's method and period. Read by cluster.meter_faults_in. Plan: sources is
-- MATERIALIZED so that its neighbour probes run once per raw stream.
CREATE OR REPLACE FUNCTION cluster.engine_segments(
    p_feeds bigint[], p_channels integer[], p_from timestamptz[], p_to timestamptz[]
) RETURNS TABLE (raw_id bigint, register boolean, reading boolean, counter boolean,
                 wf double precision, wt double precision, e0 double precision,
                 v0 double precision, e1 double precision, v1 double precision, skip boolean,
                 ge double precision, gv double precision, plausible boolean,
                 followed boolean, spread boolean)
LANGUAGE sql STABLE AS $$
WITH sources AS MATERIALIZED (
    SELECT * FROM cluster.engine_sources(p_feeds, p_channels, p_from, p_to)
)
SELECT src.raw_id, src.register, src.reading, src.register OR src.reading, src.wf, src.wt,
       s.e0, s.v0, s.e1, s.v1, s.skip, s.ge, s.gv, s.plausible, s.followed, s.spread
  FROM sources src
 CROSS JOIN LATERAL cluster.source_segments(src.raw_id, src.register OR src.reading, src.wf,
                                            src.wt, src.lo, src.hi, src.rate, src.starts,
                                            src.rates, src.spread, true, src.factor,
                                            src.factors) s
$$;
COMMENT ON FUNCTION cluster.engine_segments(bigint[], integer[], timestamptz[], timestamptz[]) IS
    'The segments of the work''s raw streams that reach its periods, with a meter counter''s judgement: skip (past a glitch at ge, gv), plausible, followed, and whether a register''s rise is spread over it.';

-- Compute, energy per bucket: one raw stream's segments (cluster.source_segments, by the rules
-- or on the fast path: p_judge) added up per bucket k of its period, each whole to the bucket
-- it starts in: a bridged segment's (cluster.bridged) trapezoid (value·s) and length (s) cut at
-- the bucket's end (cluster.segment_integral, cluster.segment_covered); a meter counter's
-- (register or reading) faults, and a rise it cannot make counts 0. A register's segment
-- within EP_ENGINE_MAX_SPREAD (spread) is made its constant rate of rise (Wh/s), so that its
-- trapezoid is its rise in the bucket; a longer one, and a meter reading's, is a step, added to
-- the bucket of its later point. The one segment that crosses the bucket's end is carried
-- along (ce0 … cbridged) for cluster.bucket_energy to spread over the following buckets.
-- sound: every segment of the bucket is (the fast path is exact there). A fault counts in the
-- bucket of the reading that ends its segment, where its step would. Times are float epoch
-- seconds; bucket k starts at k·cluster.bucket_seconds().
-- Plan: inlined into its caller's LATERAL: one aggregate per raw stream, over a few thousand
-- rows already in order of k (its sort finds them sorted), where one aggregate over all of the
-- work's points by (raw stream, k) was planned as a sort of millions of rows that spilled to
-- disk (the planner's estimate of a stream's points is a few dozen). OFFSET 0 keeps each
-- expression of a segment computed once per point, not once per use.
CREATE OR REPLACE FUNCTION cluster.source_heads(
    p_raw_id bigint, p_register boolean, p_reading boolean, p_wf double precision,
    p_wt double precision, p_lo timestamptz, p_hi timestamptz, p_rate double precision,
    p_starts double precision[], p_rates double precision[], p_spread double precision,
    p_judge boolean, p_factor double precision, p_factors double precision[]
) RETURNS TABLE (k bigint, wt double precision, integral double precision,
                 covered double precision, delta double precision, faults bigint,
                 ce0 double precision, cv0 double precision, ce1 double precision,
                 cv1 double precision, cstep double precision, cfaults integer,
                 cbridged boolean, sound boolean)
LANGUAGE sql STABLE AS $$
SELECT k, p_wt,
       sum(cluster.segment_integral(e0, v0, e1, v1, bridged, a, c)),
       sum(cluster.segment_covered(bridged, a, c)),
       sum(step) FILTER (WHERE NOT crosses),
       sum(faults) FILTER (WHERE NOT crosses),
       max(e0) FILTER (WHERE crosses),
       max(v0) FILTER (WHERE crosses),
       max(e1) FILTER (WHERE crosses),
       max(v1) FILTER (WHERE crosses),
       max(step) FILTER (WHERE crosses),
       max(faults) FILTER (WHERE crosses),
       bool_or(bridged) FILTER (WHERE crosses),
       bool_and(sound)
  FROM (
    -- A register's segment, and a meter reading's that ends at a whole hour (DSMR 4's hourly
    -- gas capture: the hour it measured, not the next one's bucket), is its rate of rise
    -- (v0 = v1, per s), of what it counts: its rise, or 0 for a reset or a replacement. k, the
    -- bucket it starts in; c, where it leaves it.
    SELECT e0, e1, faults, a, k, least(e1, kend) AS c, e1 >= kend AS crosses, sound,
           CASE WHEN p_register OR p_reading THEN lined ELSE cluster.bridged(e0, e1) END
               AS bridged,
           CASE WHEN lined THEN CASE WHEN plausible THEN (v1 - v0) / (e1 - e0) ELSE 0 END
                ELSE v0 END AS v0,
           CASE WHEN lined THEN CASE WHEN plausible THEN (v1 - v0) / (e1 - e0) ELSE 0 END
                ELSE v1 END AS v1,
           CASE WHEN (p_reading OR p_register) AND NOT lined
                THEN CASE WHEN plausible THEN v1 - v0 ELSE 0 END END AS step
      FROM (SELECT e0, v0, e1, v1, plausible, sound,
                   CASE WHEN p_register THEN spread
                        WHEN p_reading THEN spread AND e1 / 3600 = floor(e1 / 3600)
                        ELSE false END AS lined,
                   CASE WHEN p_register OR p_reading
                        THEN skip::integer
                             + CASE WHEN plausible OR (v1 < v0 AND NOT followed) THEN 0 ELSE 1 END
                   END AS faults,
                   greatest(e0, p_wf) AS a, cluster.bucket_of(greatest(e0, p_wf)) AS k,
                   cluster.bucket_seconds() * cluster.bucket_of(greatest(e0, p_wf))
                       + cluster.bucket_seconds() AS kend
              FROM cluster.source_segments(p_raw_id, p_register OR p_reading, p_wf, p_wt,
                                           p_lo, p_hi, p_rate, p_starts, p_rates, p_spread,
                                           p_judge, p_factor, p_factors)
            OFFSET 0) x
  ) segments
 GROUP BY k
$$;
COMMENT ON FUNCTION cluster.source_heads(bigint, boolean, boolean, double precision, double precision, timestamptz, timestamptz, double precision, double precision[], double precision[], double precision, boolean, double precision, double precision[]) IS
    'One raw stream''s segments added up per bucket k they start in (by the rules, or on the fast path: p_judge), with the one that crosses the bucket''s end, and whether the fast path is exact there (sound).';

-- Compute, energy per bucket: per processed stream identity of the work's channels (quantity,
-- idx, register, combined) and bucket k, the register's value (its rise along its line, Wh), the
-- measured value (power's trapezoid in Wh, a meter reading's step), a mean's integral and
-- covered seconds, and the counter faults (glitches, resets, replacements) judged at a reading
-- in the bucket; which of register and measured a stream takes is decided per bucket by its
-- register span (cluster.engine_results).
-- Per raw stream the points from the last one before wfrom to the first one at or after wto
-- form segments, each added whole to the bucket it starts in (cluster.source_heads, "heads");
-- the one segment per bucket that crosses its end is spread over the following buckets
-- afterwards ("tails", a row per bucket, not per point). Every raw stream takes the fast path
-- first ("plain": each point paired with the next); a meter counter with a pair whose rise is
-- not plausible anywhere in its points (not sound) is computed again by the rules ("judged")
-- and only that result counts: docs/engine.md#throughput.
-- Plan: sources is MATERIALIZED (its neighbour probes once per raw stream, read by both
-- paths); plain is MATERIALIZED (a row per stream and bucket, read twice); judged is empty
-- unless a meter faulted, and then holds the few streams the rules' LATERAL runs for; heads is
-- MATERIALIZED for its two readers; indexed (a row per channel with a phase or a tariff) is
-- the hashed set the combined rows' filter probes, so that a channel of one total register
-- aggregates no second row per bucket.
CREATE OR REPLACE FUNCTION cluster.bucket_energy(
    p_feeds bigint[], p_channels integer[], p_from timestamptz[], p_to timestamptz[]
) RETURNS TABLE (feed_id bigint, channel integer, quantity text, idx integer, register integer,
                 combined boolean, k bigint, register_energy double precision,
                 measured double precision, integral double precision,
                 covered double precision, faults bigint)
LANGUAGE sql STABLE AS $$
WITH sources AS MATERIALIZED (
    SELECT * FROM cluster.engine_sources(p_feeds, p_channels, p_from, p_to)
), plain AS MATERIALIZED (
    SELECT src.raw_id, h.*
      FROM sources src
     CROSS JOIN LATERAL cluster.source_heads(src.raw_id, src.register, src.reading, src.wf,
                                             src.wt, src.lo, src.hi, src.rate, src.starts,
                                             src.rates, src.spread, false, src.factor,
                                             src.factors) h
), judged AS MATERIALIZED (
    SELECT DISTINCT raw_id FROM plain WHERE NOT sound
), heads AS MATERIALIZED (
    SELECT raw_id, k, wt, integral, covered, delta, faults, ce0, cv0, ce1, cv1, cstep, cfaults,
           cbridged
      FROM plain WHERE raw_id NOT IN (SELECT raw_id FROM judged)
    UNION ALL
    SELECT src.raw_id, h.k, h.wt, h.integral, h.covered, h.delta, h.faults, h.ce0, h.cv0,
           h.ce1, h.cv1, h.cstep, h.cfaults, h.cbridged
      FROM sources src
      JOIN judged j ON j.raw_id = src.raw_id
     CROSS JOIN LATERAL cluster.source_heads(src.raw_id, src.register, src.reading, src.wf,
                                             src.wt, src.lo, src.hi, src.rate, src.starts,
                                             src.rates, src.spread, true, src.factor,
                                             src.factors) h
), tails AS (
    SELECT raw_id, k,
           cluster.segment_integral(e0, v0, e1, v1, bridged, a, c) AS integral,
           cluster.segment_covered(bridged, a, c) AS covered,
           CASE WHEN cluster.bucket_of(e1) = k THEN step END AS delta,
           CASE WHEN cluster.bucket_of(e1) = k THEN faults END AS faults
      FROM (SELECT raw_id, k, e0, v0, e1, v1, step, faults, bridged,
                   greatest(e0, cluster.bucket_seconds() * k) AS a,
                   least(e1, cluster.bucket_seconds() * k + cluster.bucket_seconds()) AS c
              FROM (SELECT raw_id, ce0 AS e0, cv0 AS v0, ce1 AS e1, cv1 AS v1, cstep AS step,
                           cfaults AS faults, cbridged AS bridged,
                           generate_series(
                               CASE WHEN cbridged THEN k + 1 ELSE cluster.bucket_of(ce1) END,
                               least(cluster.bucket_of(ce1),
                                     (wt / cluster.bucket_seconds())::bigint - 1)) AS k
                      FROM heads WHERE ce1 IS NOT NULL) spread) t
), indexed AS MATERIALIZED (
    -- The channels with a phase or a tariff register: only they can have a combined stream,
    -- so only theirs take the unindexed register into it below (a row per stream, not per
    -- bucket; a channel of 1.8.0 alone adds no combined rows).
    SELECT DISTINCT s.feed_id, s.channel
      FROM sources src JOIN cluster.streams s ON s.id = src.raw_id
     WHERE s.idx IS NOT NULL
), per_raw AS (
    SELECT raw_id, k, sum(integral) AS integral, sum(covered) AS covered, sum(delta) AS delta,
           sum(faults) AS faults
      FROM (SELECT raw_id, k, integral, covered, delta, faults FROM heads
            UNION ALL
            SELECT raw_id, k, integral, covered, delta, faults FROM tails) parts
     GROUP BY raw_id, k
), per_index AS (
    -- Registers apart from the rest: which of the two a bucket takes is decided per stream.
    SELECT s.feed_id, s.channel, m.quantity, t.idx, t.register, r.k,
           sum(CASE WHEN r.covered > 0 OR r.delta IS NOT NULL
                    THEN r.integral + coalesce(r.delta, 0) END)
               FILTER (WHERE m.method = 'register') AS register_energy,
           sum(CASE m.method WHEN 'integral' THEN CASE WHEN r.covered > 0
                                                       THEN r.integral / 3600 END
                             WHEN 'reading' THEN CASE WHEN r.covered > 0 OR r.delta IS NOT NULL
                                                      THEN r.integral + coalesce(r.delta, 0)
                                                 END END)
               FILTER (WHERE m.method IN ('integral', 'reading')) AS measured,
           sum(r.integral) FILTER (WHERE m.method = 'mean') AS integral,
           sum(r.covered) FILTER (WHERE m.method = 'mean') AS covered,
           sum(r.faults) AS faults
      FROM per_raw r
      JOIN cluster.streams s ON s.id = r.raw_id
      JOIN cluster.processable_media m ON m.medium_id = s.medium
     CROSS JOIN LATERAL cluster.processed_target(m.method, s.idx) t
     GROUP BY s.feed_id, s.channel, m.quantity, t.idx, t.register, r.k
)
SELECT feed_id, channel, quantity, coalesce(idx, 0), coalesce(register, 0), false, k,
       register_energy,
       measured, integral, covered, faults
  FROM per_index
UNION ALL
-- The combined stream (docs/engine.md#a-channels-total): its register is the channel's tariff
-- registers' sum, else its total register (1.8.0 beside phases: Swedish and Norwegian HAN
-- ports, EasyMeter Q3D), each counting the same energy the other way; its measured value is
-- the indexed streams' (the phases'), never the unindexed power beside them (the same energy
-- again). A bucket with only an unindexed register's value is kept: a reader away longer than
-- power is bridged still has its register's rise spread over the gap. Rows of a channel
-- without a combined stream find no period in cluster.engine_results and are dropped there.
SELECT feed_id, channel, quantity, 0, 0, true, k,
       coalesce(sum(register_energy) FILTER (WHERE register IS NOT NULL),
                sum(register_energy) FILTER (WHERE idx IS NULL AND register IS NULL)),
       sum(measured) FILTER (WHERE idx IS NOT NULL OR register IS NOT NULL),
       sum(integral) FILTER (WHERE idx IS NOT NULL OR register IS NOT NULL),
       sum(covered) FILTER (WHERE idx IS NOT NULL OR register IS NOT NULL),
       sum(faults) FILTER (WHERE idx IS NOT NULL OR register IS NOT NULL)
  FROM per_index
 WHERE idx IS NOT NULL OR register IS NOT NULL
    OR (register_energy IS NOT NULL AND (feed_id, channel) IN (SELECT feed_id, channel FROM indexed))
 GROUP BY feed_id, channel, quantity, k
$$;
COMMENT ON FUNCTION cluster.bucket_energy(bigint[], integer[], timestamptz[], timestamptz[]) IS
    'Per processed stream identity and bucket k of the work''s periods: register_energy (Wh along its line), measured (power''s trapezoid in Wh, a reading''s step), a mean''s integral and covered seconds, and the counter faults judged there.';

-- Compute, meter faults: the faults judged in the work's periods (COMPUTE names the buckets
-- where cluster.bucket_energy counted one, so that this reads only those): per raw counter,
-- each glitch skipped (at the glitch), each reset that persisted and each rise the meter
-- cannot make (at the reading that ends the step), with the readings before and after, for
-- the owner's notification. Plan: cluster.engine_segments over the few buckets named.
CREATE OR REPLACE FUNCTION cluster.meter_faults_in(
    p_feeds bigint[], p_channels integer[], p_from timestamptz[], p_to timestamptz[]
) RETURNS TABLE (raw_id bigint, kind text, ts timestamptz, value double precision,
                 before_ts timestamptz, before_value double precision, after_ts timestamptz,
                 after_value double precision)
LANGUAGE sql STABLE AS $$
    SELECT DISTINCT s.raw_id, f.kind, to_timestamp(f.e), f.v, to_timestamp(s.e0), s.v0,
           to_timestamp(s.e1), s.v1
      FROM cluster.engine_segments(p_feeds, p_channels, p_from, p_to) s
     CROSS JOIN LATERAL (VALUES ('glitch', s.ge, s.gv, s.skip),
                                (CASE WHEN s.v1 < s.v0 THEN 'reset' ELSE 'replacement' END,
                                 s.e1, s.v1,
                                 NOT s.plausible AND (s.v1 >= s.v0 OR s.followed)))
           AS f (kind, e, v, judged)
     WHERE s.counter AND f.judged
$$;
COMMENT ON FUNCTION cluster.meter_faults_in(bigint[], integer[], timestamptz[], timestamptz[]) IS
    'The meter faults (glitch, reset, replacement) judged in the work''s periods: the reading judged, and the readings before and after it.';

-- Compute, register spans (docs/engine.md#each-wh-once): per processed stream identity of the
-- work's channels, the buckets from a register's first reading to its last over its whole
-- history, in which the stream takes the register's value and outside which it takes the
-- other media's. A register counts in its own stream (its tariff), the unindexed one and, for
-- a tariff, the combined one. Plan: registers is MATERIALIZED so that each register stream's
-- first and last points (cluster.register_span, inlined: two probes per tier) are read once
-- for both of its uses.
CREATE OR REPLACE FUNCTION cluster.register_spans(
    p_feeds bigint[], p_channels integer[], p_from timestamptz[], p_to timestamptz[]
) RETURNS TABLE (feed_id bigint, channel integer, quantity text, idx integer, register integer,
                 combined boolean, kfirst bigint, klast bigint)
LANGUAGE sql STABLE AS $$
WITH registers AS MATERIALIZED (
    SELECT s.feed_id, s.channel, m.quantity, s.idx, e.kfirst, e.klast
      FROM (SELECT DISTINCT s.id
              FROM unnest(p_feeds, p_channels) AS w (feed_id, channel)
              JOIN cluster.streams s
                ON s.feed_id = w.feed_id AND s.channel = w.channel AND s.type = 'raw'
              JOIN cluster.processable_media m
                ON m.medium_id = s.medium AND m.method = 'register') r
      JOIN cluster.streams s ON s.id = r.id
      JOIN cluster.processable_media m ON m.medium_id = s.medium
     CROSS JOIN LATERAL cluster.register_span(r.id) e
)
SELECT feed_id, channel, quantity, 0, coalesce(idx, 0), false, min(kfirst), max(klast)
  FROM registers GROUP BY feed_id, channel, quantity, idx
UNION ALL
-- The combined stream's: every register of the channel, its total one included (the combined
-- stream takes it where there are no tariff registers, cluster.bucket_energy).
SELECT feed_id, channel, quantity, 0, 0, true, min(kfirst), max(klast)
  FROM registers GROUP BY feed_id, channel, quantity
$$;
COMMENT ON FUNCTION cluster.register_spans(bigint[], integer[], timestamptz[], timestamptz[]) IS
    'Per processed stream identity of the work''s channels with a register: the buckets kfirst..klast its registers span.';

-- Compute: the processed streams of the work's channels, a row per configuration with a
-- medium, as the buckets kfrom <= k < kto it holds for (cluster.validity_buckets), with the
-- stream's register span and the channel's work periods (window). Plan: spans is MATERIALIZED
-- and joins here, to a row per configuration: joined to the buckets (a CTE of unknown size) it
-- became a nested loop over both.
CREATE OR REPLACE FUNCTION cluster.engine_targets(
    p_feeds bigint[], p_channels integer[], p_from timestamptz[], p_to timestamptz[]
) RETURNS TABLE (stream_id bigint, feed_id bigint, channel integer, stream_idx integer,
                 stream_register integer, idx integer, register integer, combined boolean,
                 quantity text, medium text, kfrom bigint, kto bigint, kfirst bigint,
                 klast bigint, "window" tstzmultirange)
LANGUAGE sql STABLE AS $$
WITH spans AS MATERIALIZED (
    SELECT * FROM cluster.register_spans(p_feeds, p_channels, p_from, p_to)
)
SELECT ps.id, ps.feed_id, ps.channel, ps.idx, ps.register, coalesce(ps.idx, 0),
       coalesce(ps.register, 0), ps.combined, ps.quantity, c.medium, k.kfrom, k.kto, sp.kfirst,
       sp.klast, w.window
  FROM (SELECT w.feed_id, w.channel, range_agg(tstzrange(w.wfrom, w.wto)) AS window
          FROM unnest(p_feeds, p_channels, p_from, p_to) AS w (feed_id, channel, wfrom, wto)
         GROUP BY w.feed_id, w.channel) w
  JOIN cluster.streams ps
    ON ps.feed_id = w.feed_id AND ps.channel = w.channel AND ps.type = 'processed'
  JOIN cluster.stream_configs c ON c.stream_id = ps.id
 CROSS JOIN LATERAL cluster.validity_buckets(c.validity) k
  LEFT JOIN spans sp
    ON sp.feed_id = ps.feed_id AND sp.channel = ps.channel AND sp.quantity = ps.quantity
   AND sp.idx = coalesce(ps.idx, 0) AND sp.register = coalesce(ps.register, 0)
   AND sp.combined = ps.combined
 WHERE c.medium IS NOT NULL
$$;
COMMENT ON FUNCTION cluster.engine_targets(bigint[], integer[], timestamptz[], timestamptz[]) IS
    'The processed streams of the work''s channels: per configuration with a medium, its buckets kfrom..kto-1, register span and work window.';

-- Compute, pricing: per value stream (consumption, export, mean) the stretches of k with one
-- configuration, and beside each consumption or export stream its money stream's stretches
-- and bands with their price (cluster.pricing, the tariff formula: money = value × scale ×
-- price); a value stretch has no timezone, band, day kind, holidays, scale or price. Plan: targets is MATERIALIZED
-- (read twice); cluster.pricing is pulled up into this statement's joins, each table reached
-- through its index from the target's keys.
CREATE OR REPLACE FUNCTION cluster.engine_periods(
    p_feeds bigint[], p_channels integer[], p_from timestamptz[], p_to timestamptz[]
) RETURNS TABLE (feed_id bigint, channel integer, quantity text, idx integer, register integer,
                 combined boolean, stream_id bigint, kfrom bigint, kto bigint, kfirst bigint,
                 klast bigint, timezone text, starts time, ends time, days text,
                 holidays date[], scale double precision, price double precision)
LANGUAGE sql STABLE AS $$
WITH targets AS MATERIALIZED (
    SELECT * FROM cluster.engine_targets(p_feeds, p_channels, p_from, p_to)
)
SELECT c.feed_id, c.channel, c.quantity, c.idx, c.register, c.combined, c.stream_id, c.kfrom,
       c.kto, c.kfirst, c.klast, NULL::text, NULL::time, NULL::time, NULL::text,
       NULL::date[], NULL::float8, NULL::float8
  FROM targets c WHERE c.quantity IN ('consumption', 'export', 'mean')
UNION ALL
SELECT c.feed_id, c.channel, c.quantity, c.idx, c.register, c.combined, p.money_id,
       greatest(c.kfrom, k.kfrom), least(c.kto, k.kto), c.kfirst, c.klast, p.timezone,
       p.starts, p.ends, p.days, p.holidays, p.scale, p.price
  FROM targets c
 CROSS JOIN LATERAL cluster.pricing(c.feed_id, c.channel, c.stream_idx, c.stream_register,
                                    c.combined, c.quantity, c.medium, c.window) p
 CROSS JOIN LATERAL cluster.validity_buckets(p.valid) k
 WHERE greatest(c.kfrom, k.kfrom) < least(c.kto, k.kto)
$$;
COMMENT ON FUNCTION cluster.engine_periods(bigint[], integer[], timestamptz[], timestamptz[]) IS
    'Per value stream of the work''s channels its stretches of buckets, and per money stream its priced stretches and bands (cluster.pricing).';

-- Compute: the points the work's periods call for, per processed stream and bucket start: a
-- value stream's value (a mean's time-weighted mean; inside a register span the register's,
-- outside it the measured one), and its money stream's, value × scale × price of the band
-- holding the bucket's local start on a local date of the band's kind (cluster.band_holds);
-- with the counter faults judged in the bucket, which COMPUTE names so that the engine records
-- them (FAULTS, engine/processing.py). Plan: periods is MATERIALIZED and hashed; the buckets
-- (cluster.bucket_energy, a subquery planned once) are the hash join's probe side: each bucket
-- finds its stretches by the stream's keys, and k and the band are a filter on the few rows
-- found. A nested loop here would be buckets × stretches (the plan test,
-- tests/integration/engine/test_compute_plan.py, holds it to a hash join).
CREATE OR REPLACE FUNCTION cluster.engine_results(
    p_feeds bigint[], p_channels integer[], p_from timestamptz[], p_to timestamptz[]
) RETURNS TABLE (stream_id bigint, ts timestamptz, value double precision, faults bigint)
LANGUAGE sql STABLE AS $$
WITH periods AS MATERIALIZED (
    SELECT * FROM cluster.engine_periods(p_feeds, p_channels, p_from, p_to)
)
SELECT pd.stream_id, to_timestamp(cluster.bucket_seconds() * t.k), v.value, t.faults
  FROM cluster.bucket_energy(p_feeds, p_channels, p_from, p_to) t
  JOIN periods pd
    ON pd.feed_id = t.feed_id AND pd.channel = t.channel AND pd.quantity = t.quantity
   AND pd.idx = t.idx AND pd.register = t.register AND pd.combined = t.combined
   AND t.k >= pd.kfrom AND t.k < pd.kto
 CROSS JOIN LATERAL (
       SELECT to_timestamp(cluster.bucket_seconds() * t.k) AT TIME ZONE pd.timezone
              AS local) l
 CROSS JOIN LATERAL (
       SELECT CASE WHEN pd.quantity = 'mean'
                   THEN CASE WHEN t.covered > 0 THEN t.integral / t.covered END
                   WHEN t.k BETWEEN pd.kfirst AND pd.klast THEN t.register_energy
                   ELSE t.measured END
              * coalesce(pd.scale, 1) * coalesce(pd.price, 1) AS value) v
 WHERE (pd.timezone IS NULL
        OR (pd.starts <= l.local::time AND l.local::time < pd.ends
            AND cluster.band_holds(pd.days, l.local::date, pd.holidays)))
   AND v.value IS NOT NULL
$$;
COMMENT ON FUNCTION cluster.engine_results(bigint[], integer[], timestamptz[], timestamptz[]) IS
    'The processed points (stream, bucket start, value) the work''s periods call for, with the counter faults judged in the bucket.';
