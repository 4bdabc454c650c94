-- The engine's energy stages (engine/processing.py's COMPUTE and FAULTS): from the raw points of
-- the work's periods to the energy of each processed stream identity and 90 s bucket, with the
-- meter counters' faults judged there. 22_engine_intake.sql queues the work; 25_engine_results.sql
-- turns this energy into points (register spans, configurations, prices). Re-applied by every
-- `migrate`, after the numbered migrations: the one current definition.
--
-- Every stage is a LANGUAGE sql function, STABLE, without STRICT or SET, whose body is one
-- SELECT: the planner inlines it into the calling statement, so the chain plans as one
-- statement (docs/engine.md#the-statements-stages). The stages take the statement's work as four
-- arrays (feed, channel, [from, to) per period): arrays, not rows of a table, so that each stage
-- runs alone as `SELECT * FROM stage(...)`.
--
-- A raw stream of the work travels as one row of the type cluster.engine_source
-- (sql/0055_streams_register.sql says each field): cluster.engine_sources makes them, and
-- cluster.source_segments and cluster.source_heads take one. A caller passes its row as
-- `src::cluster.engine_source`: the cast of a whole row is a row of its columns, whose fields
-- the planner reads straight from them once the stage is inlined (no composite is built).
--
-- Times are float epoch seconds (the *_epoch columns); bucket k starts at
-- k·cluster.bucket_seconds() (cluster.bucket_of). A segment runs from one point (its start) to
-- the next (its end).

-- The raw streams of the work's channels, each with the period of points to read: from the last
-- point before the period to the first at or after its end, and for a meter counter (register
-- or reading) one more on each side, the neighbours that decide whether the first and the last
-- reading are glitches (cluster.glitch). A counter also gets its rate limit per second
-- (cluster.rate_at: max_rate, or where it changes in the period max_rates[i] from
-- config_starts[i] on, the first from -Infinity): its own processed stream's configurations'
-- (`admin streams configure --max-rate`), else its medium's (cluster.default_max_rate), the
-- factor of the unit its reader sends (likewise per configuration), and a register the
-- longest gap its rise is spread over (cluster.max_spread_seconds): read once per stream, not
-- per point.
-- Plan: a join of the work with the streams' (feed_id, channel) index, per raw stream two index
-- probes per tier for its neighbours (cluster.point_neighbours, inlined), and for a counter two
-- more and its configurations.
CREATE OR REPLACE FUNCTION cluster.engine_sources(
    p_feeds bigint[], p_channels integer[], p_from timestamptz[], p_to timestamptz[]
) RETURNS SETOF cluster.engine_source
LANGUAGE sql STABLE AS $$
    SELECT s.id, m.method = 'register', m.method = 'reading',
           date_part('epoch', w.wfrom), date_part('epoch', w.wto), x.read_from, x.read_to,
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
     CROSS JOIN LATERAL (SELECT coalesce(n2.before, n.before, w.wfrom) AS read_from,
                                coalesce(n2.after, n.after, w.wto) AS read_to) x
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
               ON c.stream_id = ps.id AND c.validity && tstzrange(x.read_from, x.read_to, '[]')
            WHERE m.method IN ('register', 'reading')) r ON true
$$;
COMMENT ON FUNCTION cluster.engine_sources(bigint[], integer[], timestamptz[], timestamptz[]) IS
    'The raw streams of the work''s periods (cluster.engine_source): their method, the span of points to read and, for a counter, its rate limit (per second: max_rate, or max_rates[i] from config_starts[i] on), its longest spread gap and the factor of the unit its reader sends (sent_factor, or sent_factors[i] from config_starts[i] on).';

-- The segments of one raw stream of the work (p_source), a row each, with what the rules of
-- meter counters (registers and readings, docs/engine.md#registers-wh) judged of it. The points
-- from read_from to read_to are paired, each with the next: a counter's glitch (cluster.glitch)
-- starts no segment, and the segment before it ends at the point after it (skips_glitch: the
-- glitch is at glitch_epoch, glitch_value); plausible: the counter could make the segment's rise
-- (cluster.plausible_rise, judged by the rate limit at its end), else it is a reset or a
-- replacement and counts 0; followed: a point follows the segment's end (a drop there has
-- persisted: a reset, not a glitch yet to be undone); spread: a register's rise is spread over
-- the segment (not longer than max_spread). Cut to the segments that reach the period: the outer
-- neighbours are read only to judge the inner ones.
-- p_judge, a constant at every call, chooses between the rules and the fast path: false pairs
-- each point with the next only (skips_glitch false, plausible = counter, followed false), and
-- sound tells whether that is exact: a counter's pair whose rise is not plausible is unsound (a
-- glitch, a reset and a replacement each make one: a glitch is below the reading before it),
-- and is kept even outside the period, so that its stream is judged by the rules instead
-- (cluster.bucket_energy). Nearly every stream has no such pair, and the rules' neighbours cost
-- more than the rest of a segment.
-- Plan: inlined into its caller's LATERAL, with p_judge folded: the expressions it guards are
-- gone, and with them their window functions (false: two leads, as before the rules; true: one
-- window gives each point every neighbour its rules read). One sort per raw stream, over epochs
-- taken once per point; OFFSET 0 keeps each expression computed once per point.
CREATE OR REPLACE FUNCTION cluster.source_segments(
    p_source cluster.engine_source, p_judge boolean
) RETURNS TABLE (start_epoch double precision, start_value double precision,
                 end_epoch double precision, end_value double precision, skips_glitch boolean,
                 glitch_epoch double precision, glitch_value double precision,
                 plausible boolean, followed boolean, spread boolean, sound boolean)
LANGUAGE sql STABLE AS $$
SELECT g.start_epoch, g.start_value, s.end_epoch, s.end_value, j.skips_glitch,
       CASE WHEN j.skips_glitch THEN g.next_epoch END,
       CASE WHEN j.skips_glitch THEN g.next_value END,
       (p_source.register OR p_source.reading)
       AND (NOT p_judge
            OR cluster.plausible_rise(
                   g.start_value, g.start_epoch, s.end_value, s.end_epoch,
                   cluster.rate_at(p_source.max_rate, p_source.config_starts,
                                   p_source.max_rates, s.end_epoch))),
       p_judge AND g.second_epoch IS NOT NULL,
       s.end_epoch - g.start_epoch <= p_source.max_spread,
       g.sound
  FROM (
     -- Each point with its next two (next, second): the window's own projection judges it (the
     -- neighbours are its window functions, each computed once however often it is named).
     SELECT p.epoch AS start_epoch, p.value AS start_value,
            lead(p.epoch) OVER w AS next_epoch, lead(p.value) OVER w AS next_value,
            lead(p.epoch, 2) OVER w AS second_epoch, lead(p.value, 2) OVER w AS second_value,
            -- This point is a glitch between the one before it and the next.
            p_judge AND (p_source.register OR p_source.reading)
            AND cluster.glitch(lag(p.epoch) OVER w, lag(p.value) OVER w, p.value,
                               lead(p.epoch) OVER w, lead(p.value) OVER w,
                               cluster.rate_at(p_source.max_rate, p_source.config_starts,
                                               p_source.max_rates, lead(p.epoch) OVER w))
                AS glitch,
            -- The next point is a glitch: this segment skips it, to the second.
            p_judge AND (p_source.register OR p_source.reading)
            AND cluster.glitch(p.epoch, p.value, lead(p.value) OVER w, lead(p.epoch, 2) OVER w,
                               lead(p.value, 2) OVER w,
                               cluster.rate_at(p_source.max_rate, p_source.config_starts,
                                               p_source.max_rates, lead(p.epoch, 2) OVER w))
                AS skips_glitch,
            p_judge OR NOT (p_source.register OR p_source.reading)
            OR cluster.plausible_rise(p.value, p.epoch, lead(p.value) OVER w,
                                      lead(p.epoch) OVER w,
                                      cluster.rate_at(p_source.max_rate,
                                                      p_source.config_starts,
                                                      p_source.max_rates,
                                                      lead(p.epoch) OVER w))
                AS sound
       -- A counter's reading in the medium's unit: times the factor of the unit its reader
       -- sent at that instant (cluster.unit_factor; 1 for everything else).
       FROM (SELECT q.ts, q.epoch,
                    q.value * cluster.rate_at(p_source.sent_factor, p_source.config_starts,
                                              p_source.sent_factors, q.epoch) AS value
               FROM (SELECT q.ts, date_part('epoch', q.ts) AS epoch, q.value
                       FROM cluster.stream_points(p_source.raw_id, p_source.read_from,
                                                  p_source.read_to + interval '1 microsecond') q
                    ) q
             OFFSET 0) p
     WINDOW w AS (ORDER BY p.ts)
 ) g
 -- Written out where it is read, so that the fast path folds it, and what it reads, away.
 CROSS JOIN LATERAL (SELECT p_judge AND g.skips_glitch AS skips_glitch) j
 -- Where the segment ends: the next point, or past a glitch the second.
 CROSS JOIN LATERAL (
       SELECT CASE WHEN j.skips_glitch THEN g.second_epoch ELSE g.next_epoch END AS end_epoch,
              CASE WHEN j.skips_glitch THEN g.second_value ELSE g.next_value END AS end_value) s
 WHERE g.next_epoch IS NOT NULL AND NOT g.glitch
   AND (s.end_epoch >= p_source.period_from AND g.start_epoch < p_source.period_to
        OR NOT g.sound)
$$;
COMMENT ON FUNCTION cluster.source_segments(cluster.engine_source, boolean) IS
    'The segments of one raw stream that reach its period [period_from, period_to), judged by a meter counter''s rules (p_judge), or paired with the next point only, where sound tells that this is exact.';

-- The segments of the work's raw streams (cluster.source_segments, by the rules), with their
-- source's method and period. Read by cluster.meter_faults_in. Plan: sources is MATERIALIZED so
-- that its neighbour probes run once per raw stream.
CREATE OR REPLACE FUNCTION cluster.engine_segments(
    p_feeds bigint[], p_channels integer[], p_from timestamptz[], p_to timestamptz[]
) RETURNS TABLE (raw_id bigint, register boolean, reading boolean, counter boolean,
                 period_from double precision, period_to double precision,
                 start_epoch double precision, start_value double precision,
                 end_epoch double precision, end_value double precision, skips_glitch boolean,
                 glitch_epoch double precision, glitch_value double precision,
                 plausible boolean, followed boolean, spread boolean)
LANGUAGE sql STABLE AS $$
WITH sources AS MATERIALIZED (
    SELECT * FROM cluster.engine_sources(p_feeds, p_channels, p_from, p_to)
)
SELECT src.raw_id, src.register, src.reading, src.register OR src.reading, src.period_from,
       src.period_to, s.start_epoch, s.start_value, s.end_epoch, s.end_value, s.skips_glitch,
       s.glitch_epoch, s.glitch_value, s.plausible, s.followed, s.spread
  FROM sources src
 CROSS JOIN LATERAL cluster.source_segments(src::cluster.engine_source, true) s
$$;
COMMENT ON FUNCTION cluster.engine_segments(bigint[], integer[], timestamptz[], timestamptz[]) IS
    'The segments of the work''s raw streams that reach its periods, with a meter counter''s judgement: skips_glitch (past a glitch at glitch_epoch, glitch_value), plausible, followed, and whether a register''s rise is spread over it.';

-- One raw stream's segments (cluster.source_segments, by the rules or on the fast path:
-- p_judge) added up per bucket of its period, each whole to the bucket it starts in: a bridged
-- segment's (cluster.bridged) trapezoid (value·s) and length (s) cut at the bucket's end
-- (cluster.segment_integral, cluster.segment_covered); a meter counter's (register or reading)
-- faults, and a rise it cannot make counts 0. A register's segment within EP_ENGINE_MAX_SPREAD
-- (spread) is made its constant rate of rise (Wh/s), so that its trapezoid is its rise in the
-- bucket; a longer one, and a meter reading's, is a step, added to the bucket of its later
-- point. The one segment that crosses the bucket's end is carried along (the crossing_*
-- columns) for cluster.bucket_energy to spread over the following buckets. sound: every segment
-- of the bucket is (the fast path is exact there). A fault counts in the bucket of the reading
-- that ends its segment, where its step would.
-- Plan: inlined into its caller's LATERAL: one aggregate per raw stream, over a few thousand
-- rows already in order of bucket (its sort finds them sorted), where one aggregate over all of
-- the work's points by (raw stream, bucket) was planned as a sort of millions of rows that
-- spilled to disk (the planner's estimate of a stream's points is a few dozen). OFFSET 0 keeps
-- each expression of a segment computed once per point, not once per use.
CREATE OR REPLACE FUNCTION cluster.source_heads(
    p_source cluster.engine_source, p_judge boolean
) RETURNS TABLE (bucket bigint, period_to double precision, integral double precision,
                 covered double precision, step double precision, faults bigint,
                 crossing_start_epoch double precision, crossing_start_value double precision,
                 crossing_end_epoch double precision, crossing_end_value double precision,
                 crossing_step double precision, crossing_faults integer,
                 crossing_bridged boolean, sound boolean)
LANGUAGE sql STABLE AS $$
SELECT bucket, p_source.period_to,
       sum(cluster.segment_integral(start_epoch, start_value, end_epoch, end_value, bridged,
                                    cut_from, cut_to)),
       sum(cluster.segment_covered(bridged, cut_from, cut_to)),
       sum(step) FILTER (WHERE NOT crosses),
       sum(faults) FILTER (WHERE NOT crosses),
       max(start_epoch) FILTER (WHERE crosses),
       max(start_value) FILTER (WHERE crosses),
       max(end_epoch) FILTER (WHERE crosses),
       max(end_value) FILTER (WHERE crosses),
       max(step) FILTER (WHERE crosses),
       max(faults) FILTER (WHERE crosses),
       bool_or(bridged) FILTER (WHERE crosses),
       bool_and(sound)
  FROM (
    -- A register's segment, and a meter reading's that ends at a whole hour (DSMR 4's hourly
    -- gas capture: the hour it measured, not the next one's bucket), lies along its line: its
    -- values are its rate of rise (per s) of what it counts, its rise or 0 for a reset or a
    -- replacement. The bucket it starts in; cut_to, where it leaves it.
    SELECT start_epoch, end_epoch, faults, cut_from, bucket,
           least(end_epoch, bucket_end) AS cut_to, end_epoch >= bucket_end AS crosses, sound,
           CASE WHEN p_source.register OR p_source.reading THEN along_line
                ELSE cluster.bridged(start_epoch, end_epoch) END AS bridged,
           CASE WHEN along_line THEN CASE WHEN plausible
                                          THEN (end_value - start_value)
                                               / (end_epoch - start_epoch)
                                          ELSE 0 END
                ELSE start_value END AS start_value,
           CASE WHEN along_line THEN CASE WHEN plausible
                                          THEN (end_value - start_value)
                                               / (end_epoch - start_epoch)
                                          ELSE 0 END
                ELSE end_value END AS end_value,
           CASE WHEN (p_source.reading OR p_source.register) AND NOT along_line
                THEN CASE WHEN plausible THEN end_value - start_value ELSE 0 END END AS step
      FROM (SELECT start_epoch, start_value, end_epoch, end_value, plausible, sound,
                   CASE WHEN p_source.register THEN spread
                        WHEN p_source.reading
                        THEN spread AND end_epoch / 3600 = floor(end_epoch / 3600)
                        ELSE false END AS along_line,
                   -- A glitch skipped, and a drop or a rise that counts 0 (a drop only once a
                   -- reading follows it: a glitch yet to be undone is none).
                   CASE WHEN p_source.register OR p_source.reading
                        THEN skips_glitch::integer
                             + CASE WHEN plausible OR (end_value < start_value AND NOT followed)
                                    THEN 0 ELSE 1 END
                   END AS faults,
                   greatest(start_epoch, p_source.period_from) AS cut_from,
                   cluster.bucket_of(greatest(start_epoch, p_source.period_from)) AS bucket,
                   cluster.bucket_seconds()
                       * cluster.bucket_of(greatest(start_epoch, p_source.period_from))
                       + cluster.bucket_seconds() AS bucket_end
              FROM cluster.source_segments(p_source, p_judge)
            OFFSET 0) x
  ) segments
 GROUP BY bucket
$$;
COMMENT ON FUNCTION cluster.source_heads(cluster.engine_source, boolean) IS
    'One raw stream''s segments added up per bucket they start in (by the rules, or on the fast path: p_judge), with the one that crosses the bucket''s end (crossing_*), and whether the fast path is exact there (sound).';

-- Energy per processed stream identity of the work's channels (quantity, idx, register,
-- combined) and bucket: the register's energy (its rise along its line, Wh), the measured energy
-- (power's trapezoid in Wh, a meter reading's step), a mean's integral and covered seconds, and
-- the counter faults (glitches, resets, replacements) judged at a reading in the bucket; which of
-- register and measured energy a stream takes is decided per bucket by its register span
-- (cluster.engine_results). In steps:
--   sources  the raw streams of the work (cluster.engine_sources);
--   plain    each one on the fast path: its points paired with the next only, added up per
--            bucket they start in (cluster.source_heads, "heads");
--   judged   the meter counters with a pair whose rise is not plausible anywhere in their
--            points (not sound): computed again by the rules, and only that result counts
--            (docs/engine.md#throughput);
--   heads    per raw stream and bucket, the segments that start there, from plain or judged;
--   tails    the one segment per bucket that crosses its end, spread over the following
--            buckets (a row per bucket, not per point);
--   per_raw  heads and tails added up per raw stream and bucket;
--   per_identity  per processed stream identity of the raw streams (cluster.processed_target)
--            and bucket, by method: register, measured (power, readings), mean;
-- and last the combined stream's rows, summed from its channel's streams.
-- Plan: sources is MATERIALIZED (its neighbour probes once per raw stream, read by both paths);
-- plain is MATERIALIZED (a row per stream and bucket, read twice); judged is empty unless a
-- meter faulted, and then holds the few streams the rules' LATERAL runs for; heads is
-- MATERIALIZED for its two readers; indexed (a row per channel with a phase or a register) is
-- the hashed set the combined rows' filter probes, so that a channel of one total register
-- aggregates no second row per bucket.
CREATE OR REPLACE FUNCTION cluster.bucket_energy(
    p_feeds bigint[], p_channels integer[], p_from timestamptz[], p_to timestamptz[]
) RETURNS TABLE (feed_id bigint, channel integer, quantity text, idx integer, register integer,
                 combined boolean, bucket bigint, register_energy double precision,
                 measured_energy double precision, mean_integral double precision,
                 mean_covered double precision, faults bigint)
LANGUAGE sql STABLE AS $$
WITH sources AS MATERIALIZED (
    SELECT * FROM cluster.engine_sources(p_feeds, p_channels, p_from, p_to)
), plain AS MATERIALIZED (
    SELECT src.raw_id, h.*
      FROM sources src
     CROSS JOIN LATERAL cluster.source_heads(src::cluster.engine_source, false) h
), judged AS MATERIALIZED (
    SELECT DISTINCT raw_id FROM plain WHERE NOT sound
), heads AS MATERIALIZED (
    SELECT raw_id, bucket, period_to, integral, covered, step, faults, crossing_start_epoch,
           crossing_start_value, crossing_end_epoch, crossing_end_value, crossing_step,
           crossing_faults, crossing_bridged
      FROM plain WHERE raw_id NOT IN (SELECT raw_id FROM judged)
    UNION ALL
    SELECT src.raw_id, h.bucket, h.period_to, h.integral, h.covered, h.step, h.faults,
           h.crossing_start_epoch, h.crossing_start_value, h.crossing_end_epoch,
           h.crossing_end_value, h.crossing_step, h.crossing_faults, h.crossing_bridged
      FROM sources src
      JOIN judged j ON j.raw_id = src.raw_id
     CROSS JOIN LATERAL cluster.source_heads(src::cluster.engine_source, true) h
), tails AS (
    -- A crossing segment's part in each bucket after its first, up to the one it ends in (a
    -- gap, not bridged: only that one, for its step) and not past the period; its step and
    -- faults count in the bucket it ends in.
    SELECT raw_id, bucket,
           cluster.segment_integral(start_epoch, start_value, end_epoch, end_value, bridged,
                                    cut_from, cut_to) AS integral,
           cluster.segment_covered(bridged, cut_from, cut_to) AS covered,
           CASE WHEN cluster.bucket_of(end_epoch) = bucket THEN step END AS step,
           CASE WHEN cluster.bucket_of(end_epoch) = bucket THEN faults END AS faults
      FROM (SELECT raw_id, bucket, start_epoch, start_value, end_epoch, end_value, step, faults,
                   bridged, greatest(start_epoch, cluster.bucket_seconds() * bucket) AS cut_from,
                   least(end_epoch, cluster.bucket_seconds() * bucket + cluster.bucket_seconds())
                       AS cut_to
              FROM (SELECT raw_id, crossing_start_epoch AS start_epoch,
                           crossing_start_value AS start_value,
                           crossing_end_epoch AS end_epoch, crossing_end_value AS end_value,
                           crossing_step AS step, crossing_faults AS faults,
                           crossing_bridged AS bridged,
                           generate_series(
                               CASE WHEN crossing_bridged THEN bucket + 1
                                    ELSE cluster.bucket_of(crossing_end_epoch) END,
                               least(cluster.bucket_of(crossing_end_epoch),
                                     (period_to / cluster.bucket_seconds())::bigint - 1))
                               AS bucket
                      FROM heads WHERE crossing_end_epoch IS NOT NULL) crossing) t
), indexed AS MATERIALIZED (
    -- The channels with a phase or a tariff register: only they can have a combined stream,
    -- so only theirs take the unindexed register into it below (a row per stream, not per
    -- bucket; a channel of 1.8.0 alone adds no combined rows).
    SELECT DISTINCT s.feed_id, s.channel
      FROM sources src JOIN cluster.streams s ON s.id = src.raw_id
     WHERE s.idx IS NOT NULL
), per_raw AS (
    SELECT raw_id, bucket, sum(integral) AS integral, sum(covered) AS covered,
           sum(step) AS step, sum(faults) AS faults
      FROM (SELECT raw_id, bucket, integral, covered, step, faults FROM heads
            UNION ALL
            SELECT raw_id, bucket, integral, covered, step, faults FROM tails) parts
     GROUP BY raw_id, bucket
), per_identity AS (
    -- Registers apart from the rest: which of the two a bucket takes is decided per stream. A
    -- register's and a reading's energy is its line's part in the bucket plus its steps; a
    -- bucket they neither cover nor step in has none (not 0). Power's trapezoid is W·s.
    SELECT s.feed_id, s.channel, m.quantity, t.idx, t.register, r.bucket,
           sum(CASE WHEN r.covered > 0 OR r.step IS NOT NULL
                    THEN r.integral + coalesce(r.step, 0) END)
               FILTER (WHERE m.method = 'register') AS register_energy,
           sum(CASE m.method WHEN 'integral' THEN CASE WHEN r.covered > 0
                                                       THEN r.integral / 3600 END
                             WHEN 'reading' THEN CASE WHEN r.covered > 0 OR r.step IS NOT NULL
                                                      THEN r.integral + coalesce(r.step, 0)
                                                 END END)
               FILTER (WHERE m.method IN ('integral', 'reading')) AS measured_energy,
           sum(r.integral) FILTER (WHERE m.method = 'mean') AS mean_integral,
           sum(r.covered) FILTER (WHERE m.method = 'mean') AS mean_covered,
           sum(r.faults) AS faults
      FROM per_raw r
      JOIN cluster.streams s ON s.id = r.raw_id
      JOIN cluster.processable_media m ON m.medium_id = s.medium
     CROSS JOIN LATERAL cluster.processed_target(m.method, s.idx) t
     GROUP BY s.feed_id, s.channel, m.quantity, t.idx, t.register, r.bucket
)
SELECT feed_id, channel, quantity, coalesce(idx, 0), coalesce(register, 0), false, bucket,
       register_energy, measured_energy, mean_integral, mean_covered, faults
  FROM per_identity
UNION ALL
-- The combined stream (docs/engine.md#a-channels-total): its register energy is the channel's
-- tariff registers' sum, else its total register's (1.8.0 beside phases: Swedish and Norwegian
-- HAN ports, EasyMeter Q3D), each counting the same energy the other way; its measured energy
-- is the indexed streams' (the phases'), never the unindexed power beside them (the same energy
-- again). A bucket with only an unindexed register's energy is kept: a reader away longer than
-- power is bridged still has its register's rise spread over the gap. Rows of a channel
-- without a combined stream find no period in cluster.engine_results and are dropped there.
SELECT feed_id, channel, quantity, 0, 0, true, bucket,
       coalesce(sum(register_energy) FILTER (WHERE register IS NOT NULL),
                sum(register_energy) FILTER (WHERE idx IS NULL AND register IS NULL)),
       sum(measured_energy) FILTER (WHERE idx IS NOT NULL OR register IS NOT NULL),
       sum(mean_integral) FILTER (WHERE idx IS NOT NULL OR register IS NOT NULL),
       sum(mean_covered) FILTER (WHERE idx IS NOT NULL OR register IS NOT NULL),
       sum(faults) FILTER (WHERE idx IS NOT NULL OR register IS NOT NULL)
  FROM per_identity
 WHERE idx IS NOT NULL OR register IS NOT NULL
    OR (register_energy IS NOT NULL
        AND (feed_id, channel) IN (SELECT feed_id, channel FROM indexed))
 GROUP BY feed_id, channel, quantity, bucket
$$;
COMMENT ON FUNCTION cluster.bucket_energy(bigint[], integer[], timestamptz[], timestamptz[]) IS
    'Per processed stream identity and bucket of the work''s periods: register_energy (Wh along its line), measured_energy (power''s trapezoid in Wh, a reading''s step), a mean''s integral and covered seconds, and the counter faults judged there.';

-- The meter faults judged in the work's periods (COMPUTE names the buckets where
-- cluster.bucket_energy counted one, so that this reads only those): per raw counter, each
-- glitch skipped (at the glitch), each reset that persisted and each rise the meter cannot make
-- (at the reading that ends the step), with the readings before and after: the rows FAULTS
-- records in cluster.meter_faults (whose owner notifications tells). Plan:
-- cluster.engine_segments over the few buckets named.
CREATE OR REPLACE FUNCTION cluster.meter_faults_in(
    p_feeds bigint[], p_channels integer[], p_from timestamptz[], p_to timestamptz[]
) RETURNS TABLE (raw_id bigint, kind text, ts timestamptz, value double precision,
                 before_ts timestamptz, before_value double precision, after_ts timestamptz,
                 after_value double precision)
LANGUAGE sql STABLE AS $$
    SELECT DISTINCT s.raw_id, f.kind, to_timestamp(f.epoch), f.value,
           to_timestamp(s.start_epoch), s.start_value, to_timestamp(s.end_epoch), s.end_value
      FROM cluster.engine_segments(p_feeds, p_channels, p_from, p_to) s
     CROSS JOIN LATERAL (VALUES ('glitch', s.glitch_epoch, s.glitch_value, s.skips_glitch),
                                (CASE WHEN s.end_value < s.start_value THEN 'reset'
                                      ELSE 'replacement' END,
                                 s.end_epoch, s.end_value,
                                 NOT s.plausible AND (s.end_value >= s.start_value OR s.followed)))
           AS f (kind, epoch, value, judged)
     WHERE s.counter AND f.judged
$$;
COMMENT ON FUNCTION cluster.meter_faults_in(bigint[], integer[], timestamptz[], timestamptz[]) IS
    'The meter faults (glitch, reset, replacement) judged in the work''s periods: the reading judged, and the readings before and after it.';
