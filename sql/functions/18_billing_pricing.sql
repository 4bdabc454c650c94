-- Pricing: which stream a processed value's money goes to, and what a bucket of it costs.
-- Re-applied by every `migrate`, after the numbered migrations: the one current definition.
-- The engine calls these in its compute statement (sql/functions/22_engine_stages.sql), the
-- engine's intake when it creates a channel's streams, and the bill when it reads them.
-- Both are LANGUAGE sql without STRICT or SET, which the planner inlines into the calling
-- statement: the plan is the one the expressions written out at each call gave.

-- The rule, once: a consumption stream's money is its cost, an export stream's its credit;
-- any other quantity (mean: a temperature) has no money stream (null).
CREATE OR REPLACE FUNCTION cluster.money_quantity(p_quantity text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE p_quantity WHEN 'consumption' THEN 'cost' WHEN 'export' THEN 'credit' END
$$;
COMMENT ON FUNCTION cluster.money_quantity(text) IS
    'The quantity of the money stream beside a processed stream of this quantity: cost of consumption, credit of export; null for any other.';

-- The tariff formula of one value stream (docs/engine.md#tariffs, #prices): its money stream
-- (cluster.money_quantity), and per stretch of time with one money configuration, one tariff,
-- one feed time zone and one market slot, and per band of that tariff, the price of a unit of
-- the value:
--
--     money = value × scale × price,   price = band price + factor × area price of the slot,
--
-- where scale makes the value the tariff's unit (Wh to kWh for power: 0.001, else 1), and the
-- band holds the bucket's start in local time of `timezone` (starts <= local < ends). The
-- tariff is the one of the money stream's medium; export's is the tariff of medium `export`.
-- A dynamic tariff's stretches are cut at its area's slots that overlap p_window (a bucket in
-- no slot has no price yet, and no money point); the window's multirange, not its hull:
-- yesterday's late points beside live ones would have joined a day of slots.
--
-- Plan: called per value stream (LATERAL) from cluster.engine_periods; inlined and pulled up,
-- its joins are the caller's: each table is reached through its index from the value stream's
-- keys. Joined as CTEs instead, whose sizes the planner cannot know, they became a nested loop
-- over every pair of periods (4 s for a batch of 1,000 channels). No bucket passes through
-- here: the caller cuts its buckets by `valid` (cluster.validity_buckets).
CREATE OR REPLACE FUNCTION cluster.pricing(
    p_feed_id bigint, p_channel integer, p_idx integer, p_tariff integer, p_combined boolean,
    p_quantity text, p_medium text, p_window tstzmultirange
) RETURNS TABLE (money_id bigint, valid tstzrange, timezone text, starts time, ends time,
                 scale double precision, price double precision)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT cs.id, v.valid, z.timezone, b.starts, b.ends,
           CASE WHEN p_medium = 'power' THEN 0.001::float8 ELSE 1 END, b.price + m.market
      FROM cluster.streams cs
      JOIN cluster.stream_configs cc ON cc.stream_id = cs.id
      JOIN cluster.tariffs tr
        ON tr.feed_id = cs.feed_id
       AND tr.medium = CASE p_quantity WHEN 'export' THEN 'export' ELSE cc.medium END
      JOIN cluster.feed_configs z ON z.feed_id = cs.feed_id
     CROSS JOIN LATERAL (
           SELECT '(,)'::tstzrange AS slot, 0::float8 AS market WHERE tr.area IS NULL
           UNION ALL
           SELECT p.slot, tr.factor * p.price FROM cluster.prices p
            WHERE tr.area IS NOT NULL AND p.area = tr.area AND p.slot && p_window) m
     CROSS JOIN LATERAL (SELECT cc.validity * tr.validity * z.validity * m.slot AS valid) v
      JOIN cluster.tariff_bands b ON b.tariff_id = tr.id
     WHERE cs.feed_id = p_feed_id AND cs.type = 'processed' AND cs.channel = p_channel
       AND cs.idx IS NOT DISTINCT FROM p_idx AND cs.tariff IS NOT DISTINCT FROM p_tariff
       AND cs.combined = p_combined AND cs.quantity = cluster.money_quantity(p_quantity)
       AND NOT isempty(v.valid)
$$;
COMMENT ON FUNCTION cluster.pricing(bigint, integer, integer, integer, boolean, text, text, tstzmultirange) IS
    'A value stream''s money stream, and per stretch of one money configuration, tariff, time zone and market slot that overlaps p_window, per band: money = value x scale x price for a bucket whose start lies in valid and, in local time, in [starts, ends).';
