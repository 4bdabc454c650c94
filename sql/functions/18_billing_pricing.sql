-- Pricing: which stream a processed value's money goes to, and what a bucket of it costs.
-- Re-applied by every `migrate`, after the numbered migrations: the one current definition.
-- The engine calls these in its compute statement (sql/functions/25_engine_results.sql), the
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

-- The price of a unit, as contracts write it (docs/billing.md#tariffs): the band's price plus
-- factor times the area's price (0 without an area), VAT on both, then held between the
-- floor and the cap (null: none; greatest and least skip nulls):
--
--     price = clamp((factor × area price + band price) × (1 + vat/100), floor, cap)
--
-- The one definition the engine's pricing and the price curve use. A scalar LANGUAGE sql
-- expression, each parameter used once: the planner inlines it wherever it is called.
CREATE OR REPLACE FUNCTION cluster.tariff_price(
    p_factor double precision, p_area_price double precision, p_band_price double precision,
    p_vat double precision, p_floor double precision, p_cap double precision
) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT least(greatest((p_factor * p_area_price + p_band_price) * (1 + p_vat / 100), p_floor),
                 p_cap)
$$;
COMMENT ON FUNCTION cluster.tariff_price(double precision, double precision, double precision, double precision, double precision, double precision) IS
    'clamp((factor x area price + band price) x (1 + vat/100), floor, cap): the price of a unit after VAT; a null floor or cap is none.';

-- The kind of a local date, the one rule that every price reads (the engine's pricing, the price
-- curve, the bill and the overview's mean price): a weekend day is a Saturday or Sunday (ISO
-- weekday 6 or 7) or one of the tariff's public holidays p_holidays; any other day is a
-- weekday. A tariff without holidays passes NULL or an empty array, and has none: `= ANY
-- (NULL)` is NULL, not false, which once made every weekday band of such a tariff hold on no
-- day at all (weekdays priced nothing, issue 57). Inlined like the above.
CREATE OR REPLACE FUNCTION cluster.is_weekend_day(p_day date, p_holidays date[])
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT extract(isodow FROM p_day) >= 6 OR coalesce(p_day = ANY (p_holidays), false)
$$;
COMMENT ON FUNCTION cluster.is_weekend_day(date, date[]) IS
    'Whether a local date is a weekend day: Saturday, Sunday or one of p_holidays (null: none); never null for a date.';

-- Whether a band of kind p_days ('all', 'weekday', 'weekend') holds on the local date p_day,
-- by the kind of the day (cluster.is_weekend_day). The engine passes each bucket's local date,
-- the price curve each day's; inlined like the above.
CREATE OR REPLACE FUNCTION cluster.band_holds(p_days text, p_day date, p_holidays date[])
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT p_days = 'all' OR (p_days = 'weekend') = cluster.is_weekend_day(p_day, p_holidays)
$$;
COMMENT ON FUNCTION cluster.band_holds(text, date, date[]) IS
    'Whether a band of kind all, weekday or weekend holds on a local date (cluster.is_weekend_day with the tariff''s holidays, null: none).';

-- The local years whose holidays a tariff holds (cluster.tariffs.holiday_years) as instants in
-- a time zone; unbounded for a tariff without holidays. A bucket outside them has no price
-- (its holidays are unknown), as a bucket whose market price has not arrived.
CREATE OR REPLACE FUNCTION cluster.holiday_span(p_years int4range, p_timezone text)
RETURNS tstzrange
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN p_years IS NULL THEN '(,)'::tstzrange
                ELSE tstzrange(make_date(lower(p_years), 1, 1)::timestamp AT TIME ZONE p_timezone,
                               make_date(upper(p_years), 1, 1)::timestamp AT TIME ZONE p_timezone)
           END
$$;
COMMENT ON FUNCTION cluster.holiday_span(int4range, text) IS
    'The instants of the local years p_years in p_timezone ([1 January of the first, 1 January after the last)); unbounded for null.';

-- The tariff formula of one value stream (docs/engine.md#tariffs, #prices): its money stream
-- (cluster.money_quantity), and per stretch of time with one money configuration, one tariff,
-- one feed time zone and one market slot, and per band of that tariff, the price of a unit of
-- the value:
--
--     money = value × scale × price,   price = cluster.tariff_price(...),
--
-- where scale makes the value the tariff's unit (Wh to kWh for power: 0.001; m³ to kWh for gas
-- on a tariff with kwh_per_m3; else 1), and the band holds the bucket's start in local time of
-- `timezone` (starts <= local < ends) on a local date of its kind (cluster.band_holds, with
-- the tariff's holidays inside the window, an array of a few dates; null without holidays).
-- The tariff is the one of the money stream's medium; export's is the tariff of medium
-- `export`. A dynamic tariff's stretches are cut at its area's slots that overlap p_window (a
-- bucket in no slot has no price yet, and no money point); the window's multirange, not its
-- hull: yesterday's late points beside live ones would have joined a day of slots. A tariff
-- with holidays is cut at the years they are known for (cluster.holiday_span).
--
-- Plan: called per value stream (LATERAL) from cluster.engine_periods; inlined and pulled up,
-- its joins are the caller's: each table is reached through its index from the value stream's
-- keys. Joined as CTEs instead, whose sizes the planner cannot know, they became a nested loop
-- over every pair of periods (4 s for a batch of 1,000 channels). The quantities
-- cluster.money_quantity prices are also named as a list: a filter on the caller's streams that
-- the planner can estimate (without it, the caller's streams of every quantity were joined to
-- the tariffs first, and each feed's streams tried against them: 12,000 probes for 300
-- streams). No bucket passes through here: the caller cuts its buckets by `valid`
-- (cluster.validity_buckets). The holidays are a subplan per stretch and band, run only for a
-- tariff that has them.
CREATE OR REPLACE FUNCTION cluster.pricing(
    p_feed_id bigint, p_channel integer, p_idx integer, p_register integer, p_combined boolean,
    p_quantity text, p_medium text, p_window tstzmultirange
) RETURNS TABLE (money_id bigint, valid tstzrange, timezone text, starts time, ends time,
                 days text, holidays date[], scale double precision, price double precision)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT cs.id, v.valid, z.timezone, b.starts, b.ends, b.days,
           CASE WHEN tr.holidays IS NOT NULL THEN ARRAY(
               SELECT h.day FROM cluster.tariff_holidays h
                WHERE h.tariff_id = tr.id
                  AND h.day >= (lower(range_merge(p_window)) AT TIME ZONE z.timezone)::date - 1
                  AND h.day <= (upper(range_merge(p_window)) AT TIME ZONE z.timezone)::date + 1)
           END,
           CASE WHEN p_medium = 'power' THEN 0.001::float8 ELSE coalesce(tr.kwh_per_m3, 1) END,
           cluster.tariff_price(tr.factor, m.area_price, b.price, tr.vat, tr.floor, tr.cap)
      FROM cluster.streams cs
      JOIN cluster.stream_configs cc ON cc.stream_id = cs.id
      JOIN cluster.tariffs tr
        ON tr.feed_id = cs.feed_id
       AND tr.medium = CASE p_quantity WHEN 'export' THEN 'export' ELSE cc.medium END
      JOIN cluster.feed_configs z ON z.feed_id = cs.feed_id
     CROSS JOIN LATERAL (
           SELECT '(,)'::tstzrange AS slot, 0::float8 AS area_price WHERE tr.area IS NULL
           UNION ALL
           SELECT p.slot, p.price FROM cluster.prices p
            WHERE tr.area IS NOT NULL AND p.area = tr.area AND p.slot && p_window) m
     CROSS JOIN LATERAL (
           SELECT cc.validity * tr.validity * z.validity * m.slot
                  * cluster.holiday_span(tr.holiday_years, z.timezone) AS valid) v
      JOIN cluster.tariff_bands b ON b.tariff_id = tr.id
     WHERE p_quantity IN ('consumption', 'export')
       AND cs.feed_id = p_feed_id AND cs.type = 'processed' AND cs.channel = p_channel
       AND cs.idx IS NOT DISTINCT FROM p_idx AND cs.register IS NOT DISTINCT FROM p_register
       AND cs.combined = p_combined AND cs.quantity = cluster.money_quantity(p_quantity)
       AND NOT isempty(v.valid)
$$;
COMMENT ON FUNCTION cluster.pricing(bigint, integer, integer, integer, boolean, text, text, tstzmultirange) IS
    'A value stream''s money stream, and per stretch of one money configuration, tariff, time zone and market slot that overlaps p_window, per band: money = value x scale x price for a bucket whose start lies in valid and, in local time, in [starts, ends) on a date of kind days (cluster.band_holds with holidays).';

-- A tariff's bands as stored (cluster.tariff_bands): p_starts[i] (local time of day) with
-- p_prices[i] on the days p_days[i] ('weekday', 'weekend', or 'all' or null: every day), each
-- band ending where the next of its kind starts; before a kind's first start its last band's
-- price applies (bands wrap around midnight). A band of every day counts on weekdays and on
-- weekends: with any band of a day kind, the rows are the weekday and the weekend ones, each
-- kind covering 00:00 to 24:00. cluster.set_tariff stores them; what-if prices a contract's
-- bands by them (98_billing_what_if.sql).
CREATE OR REPLACE FUNCTION cluster.band_rows(p_starts time[], p_prices double precision[],
                                             p_days text[])
RETURNS TABLE (days text, starts time, ends time, price double precision)
LANGUAGE sql IMMUTABLE AS $$
    WITH given AS (
        SELECT u.s, u.p, coalesce(u.d, 'all') AS d
          FROM unnest(p_starts, p_prices, p_days) AS u (s, p, d)
    ), kinds AS (
        SELECT k.kind
          FROM unnest(CASE WHEN (SELECT bool_and(d = 'all') FROM given) THEN ARRAY['all']
                           ELSE ARRAY['weekday', 'weekend'] END) AS k (kind)
    ), b AS (
        SELECT k.kind, g.s AS starts, g.p AS price,
               lead(g.s, 1, '24:00'::time) OVER w AS ends,
               last_value(g.p) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING
                                       AND UNBOUNDED FOLLOWING) AS last_price
          FROM kinds k JOIN given g ON g.d IN ('all', k.kind)
        WINDOW w AS (PARTITION BY k.kind ORDER BY g.s)
    )
    SELECT kind, starts, ends, price FROM b
    UNION ALL
    SELECT kind, '00:00', min(starts), min(last_price) FROM b
     GROUP BY kind HAVING min(starts) > '00:00'
$$;
COMMENT ON FUNCTION cluster.band_rows(time[], double precision[], text[]) IS
    'Bands as given (local starts, prices, day kinds) as stored: per day kind (all, or weekday and weekend) [starts, ends) with its price, wrapping around midnight.';
