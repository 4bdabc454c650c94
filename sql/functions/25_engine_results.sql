-- The engine's result stages (engine/processing.py's COMPUTE): from the energy of each bucket
-- (24_engine_energy.sql) to the processed points, through each stream's register span, its
-- configurations and, for money, its prices (billing's cluster.pricing); and the processed
-- streams whose points COMPUTE replaces. Re-applied by every `migrate`, after the numbered
-- migrations: the one current definition. The stages are inlined into COMPUTE as
-- 24_engine_energy.sql says; bucket k starts at k·cluster.bucket_seconds().

-- Write-back: the processed streams of each work period (a row per period and stream), whose
-- points in [period_from, period_to) the compute statement replaces, whose hours it queues
-- for the rollups and whose compacted days it thaws first. Plan: a hash join of the work
-- with the processed streams.
CREATE OR REPLACE FUNCTION cluster.work_streams(
    p_feeds bigint[], p_channels integer[], p_from timestamptz[], p_to timestamptz[]
) RETURNS TABLE (stream_id bigint, period_from timestamptz, period_to timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT ps.id, w.wfrom, w.wto
      FROM unnest(p_feeds, p_channels, p_from, p_to) AS w (feed_id, channel, wfrom, wto)
      JOIN cluster.streams ps
        ON ps.feed_id = w.feed_id AND ps.channel = w.channel AND ps.type = 'processed'
$$;
COMMENT ON FUNCTION cluster.work_streams(bigint[], integer[], timestamptz[], timestamptz[]) IS
    'The processed streams of each of the work''s periods (feed, channel, [from, to)).';

-- Register spans (docs/engine.md#each-wh-once): per processed stream identity of the
-- work's channels, the buckets from a register's first reading to its last over its whole
-- history, in which the stream takes the register's value and outside which it takes the
-- other media's. A register counts in its own stream (its tariff), the unindexed one and, for
-- a tariff, the combined one. Plan: registers is MATERIALIZED so that each register stream's
-- first and last points (cluster.register_span, inlined: two probes per tier) are read once
-- for both of its uses.
CREATE OR REPLACE FUNCTION cluster.register_spans(
    p_feeds bigint[], p_channels integer[], p_from timestamptz[], p_to timestamptz[]
) RETURNS TABLE (feed_id bigint, channel integer, quantity text, idx integer, register integer,
                 combined boolean, span_first bigint, span_last bigint)
LANGUAGE sql STABLE AS $$
WITH registers AS MATERIALIZED (
    SELECT s.feed_id, s.channel, m.quantity, s.idx, e.kfirst AS span_first, e.klast AS span_last
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
SELECT feed_id, channel, quantity, 0, coalesce(idx, 0), false, min(span_first), max(span_last)
  FROM registers GROUP BY feed_id, channel, quantity, idx
UNION ALL
-- The combined stream's: every register of the channel, its total one included (the combined
-- stream takes it where there are no tariff registers, cluster.bucket_energy).
SELECT feed_id, channel, quantity, 0, 0, true, min(span_first), max(span_last)
  FROM registers GROUP BY feed_id, channel, quantity
$$;
COMMENT ON FUNCTION cluster.register_spans(bigint[], integer[], timestamptz[], timestamptz[]) IS
    'Per processed stream identity of the work''s channels with a register: the buckets span_first..span_last its registers span.';

-- The processed streams of the work's channels, a row per configuration with a medium, as the
-- buckets from_bucket <= k < to_bucket it holds for (cluster.validity_buckets), with the
-- stream's register span and the channel's work periods (window). Plan: spans is MATERIALIZED
-- and joins here, to a row per configuration: joined to the buckets (a CTE of unknown size) it
-- became a nested loop over both.
CREATE OR REPLACE FUNCTION cluster.engine_targets(
    p_feeds bigint[], p_channels integer[], p_from timestamptz[], p_to timestamptz[]
) RETURNS TABLE (stream_id bigint, feed_id bigint, channel integer, stream_idx integer,
                 stream_register integer, idx integer, register integer, combined boolean,
                 quantity text, medium text, from_bucket bigint, to_bucket bigint,
                 span_first bigint, span_last bigint, "window" tstzmultirange)
LANGUAGE sql STABLE AS $$
WITH spans AS MATERIALIZED (
    SELECT * FROM cluster.register_spans(p_feeds, p_channels, p_from, p_to)
)
SELECT ps.id, ps.feed_id, ps.channel, ps.idx, ps.register, coalesce(ps.idx, 0),
       coalesce(ps.register, 0), ps.combined, ps.quantity, c.medium, k.kfrom, k.kto,
       sp.span_first, sp.span_last, w.window
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
    'The processed streams of the work''s channels: per configuration with a medium, its buckets from_bucket..to_bucket-1, register span and work window.';

-- Pricing: per value stream (consumption, export, mean) the stretches of buckets with one
-- configuration, and beside each consumption or export stream its money stream's stretches
-- and bands with their price (cluster.pricing, the tariff formula: money = value × scale ×
-- price); a value stretch has no timezone, band, day kind, holidays, scale or price. Plan:
-- targets is MATERIALIZED (read twice); cluster.pricing is pulled up into this statement's
-- joins, each table reached through its index from the target's keys.
CREATE OR REPLACE FUNCTION cluster.engine_periods(
    p_feeds bigint[], p_channels integer[], p_from timestamptz[], p_to timestamptz[]
) RETURNS TABLE (feed_id bigint, channel integer, quantity text, idx integer, register integer,
                 combined boolean, stream_id bigint, from_bucket bigint, to_bucket bigint,
                 span_first bigint, span_last bigint, timezone text, starts time, ends time,
                 days text, holidays date[], scale double precision, price double precision)
LANGUAGE sql STABLE AS $$
WITH targets AS MATERIALIZED (
    SELECT * FROM cluster.engine_targets(p_feeds, p_channels, p_from, p_to)
)
SELECT c.feed_id, c.channel, c.quantity, c.idx, c.register, c.combined, c.stream_id,
       c.from_bucket, c.to_bucket, c.span_first, c.span_last, NULL::text, NULL::time,
       NULL::time, NULL::text, NULL::date[], NULL::float8, NULL::float8
  FROM targets c WHERE c.quantity IN ('consumption', 'export', 'mean')
UNION ALL
SELECT c.feed_id, c.channel, c.quantity, c.idx, c.register, c.combined, p.money_id,
       greatest(c.from_bucket, k.kfrom), least(c.to_bucket, k.kto), c.span_first,
       c.span_last, p.timezone,
       p.starts, p.ends, p.days, p.holidays, p.scale, p.price
  FROM targets c
 CROSS JOIN LATERAL cluster.pricing(c.feed_id, c.channel, c.stream_idx, c.stream_register,
                                    c.combined, c.quantity, c.medium, c.window) p
 CROSS JOIN LATERAL cluster.validity_buckets(p.valid) k
 WHERE greatest(c.from_bucket, k.kfrom) < least(c.to_bucket, k.kto)
$$;
COMMENT ON FUNCTION cluster.engine_periods(bigint[], integer[], timestamptz[], timestamptz[]) IS
    'Per value stream of the work''s channels its stretches of buckets, and per money stream its priced stretches and bands (cluster.pricing).';

-- The points the work's periods call for, per processed stream and bucket start: a
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
SELECT pd.stream_id, to_timestamp(cluster.bucket_seconds() * e.bucket), v.value, e.faults
  FROM cluster.bucket_energy(p_feeds, p_channels, p_from, p_to) e
  JOIN periods pd
    ON pd.feed_id = e.feed_id AND pd.channel = e.channel AND pd.quantity = e.quantity
   AND pd.idx = e.idx AND pd.register = e.register AND pd.combined = e.combined
   AND e.bucket >= pd.from_bucket AND e.bucket < pd.to_bucket
 CROSS JOIN LATERAL (
       SELECT to_timestamp(cluster.bucket_seconds() * e.bucket) AT TIME ZONE pd.timezone
              AS local) l
 CROSS JOIN LATERAL (
       SELECT CASE WHEN pd.quantity = 'mean'
                   THEN CASE WHEN e.mean_covered > 0 THEN e.mean_integral / e.mean_covered END
                   WHEN e.bucket BETWEEN pd.span_first AND pd.span_last THEN e.register_energy
                   ELSE e.measured_energy END
              * coalesce(pd.scale, 1) * coalesce(pd.price, 1) AS value) v
 WHERE (pd.timezone IS NULL
        OR (pd.starts <= l.local::time AND l.local::time < pd.ends
            AND cluster.band_holds(pd.days, l.local::date, pd.holidays)))
   AND v.value IS NOT NULL
$$;
COMMENT ON FUNCTION cluster.engine_results(bigint[], integer[], timestamptz[], timestamptz[]) IS
    'The processed points (stream, bucket start, value) the work''s periods call for, with the counter faults judged in the bucket.';
