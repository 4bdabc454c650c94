-- Billing's setters: a feed's tariff from an instant on, and an area's market prices. Both
-- change tables and record the periods whose price changed in cluster.repriced_periods
-- (sql/0053_billing_repriced_periods.sql), which the engine reads: its trigger queues those buckets and
-- the engine reprices them (docs/billing.md). Billing calls no function of the engine, which
-- calls billing's pricing (docs/architecture.md#sql).
-- Re-applied by every `migrate`, after the numbered migrations: the one current definition.

-- A tariff from an instant on, like the configurations: periods starting at or after p_from go,
-- the one holding it ends there, and a new current one starts (none when p_starts is NULL).
-- Bands: p_starts[i] (local time of day) with p_prices[i], on the days p_days[i] ('weekday',
-- 'weekend', or 'all' or null: every day); before a day kind's first start its last band's
-- price applies, so bands wrap around midnight. A band of every day counts on weekdays and on
-- weekends: a tariff with a band of a day kind is stored as its weekday and its weekend
-- bands, each covering 00:00 to 24:00. The formula's settings (cluster.tariff_price): VAT in
-- percent, floor and cap; the standing charge per 'day' or 'month'; gas's kWh per m³. The
-- holidays p_holiday_days (named p_holiday_names) of calendar p_holidays are the weekend days
-- of the local years p_holiday_years besides Saturdays and Sundays (billing/holidays.py
-- computes them with the holidays package).
CREATE OR REPLACE FUNCTION cluster.set_tariff(
    p_feed_id bigint, p_medium text, p_from timestamptz, p_starts time[], p_prices double precision[],
    p_area text DEFAULT NULL, p_factor double precision DEFAULT 1,
    p_standing double precision DEFAULT 0, p_days text[] DEFAULT NULL,
    p_vat double precision DEFAULT 0, p_floor double precision DEFAULT NULL,
    p_cap double precision DEFAULT NULL, p_standing_per text DEFAULT 'day',
    p_kwh_per_m3 double precision DEFAULT NULL, p_holidays text DEFAULT NULL,
    p_holiday_days date[] DEFAULT NULL, p_holiday_names text[] DEFAULT NULL,
    p_holiday_years int4range DEFAULT NULL
) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_from timestamptz := nullif(p_from, '-infinity');
    v_tariff_id bigint;
BEGIN
    PERFORM 1 FROM cluster.feeds WHERE id = p_feed_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'feed % does not exist', p_feed_id USING ERRCODE = 'no_data_found';
    END IF;
    IF p_area IS NOT NULL AND NOT EXISTS (SELECT FROM cluster.prices WHERE area = p_area) THEN
        RAISE EXCEPTION 'price area % has no prices', p_area USING ERRCODE = 'no_data_found';
    END IF;
    IF p_starts IS NOT NULL AND (cardinality(p_starts) = 0
            OR cardinality(p_starts) <> cardinality(p_prices)
            OR cardinality(p_starts) <> coalesce(cardinality(p_days), cardinality(p_starts))) THEN
        RAISE EXCEPTION 'a tariff needs one price (and day kind) per band start'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    DELETE FROM cluster.tariffs
     WHERE feed_id = p_feed_id AND medium = p_medium
       AND (v_from IS NULL OR (NOT lower_inf(validity) AND lower(validity) >= v_from));
    UPDATE cluster.tariffs SET validity = tstzrange(lower(validity), v_from, '[)')
     WHERE feed_id = p_feed_id AND medium = p_medium AND v_from IS NOT NULL AND validity @> v_from;
    IF p_starts IS NOT NULL THEN
        INSERT INTO cluster.tariffs (feed_id, medium, validity, area, factor, standing, vat,
                                     floor, cap, standing_per, kwh_per_m3, holidays,
                                     holiday_years)
        VALUES (p_feed_id, p_medium, tstzrange(v_from, NULL, '[)'), p_area,
                CASE WHEN p_area IS NULL THEN 1 ELSE p_factor END, p_standing, p_vat, p_floor,
                p_cap, p_standing_per, p_kwh_per_m3, p_holidays, p_holiday_years)
        RETURNING id INTO v_tariff_id;
        INSERT INTO cluster.tariff_bands (tariff_id, days, starts, ends, price)
        SELECT v_tariff_id, b.days, b.starts, b.ends, b.price
          FROM cluster.band_rows(p_starts, p_prices, p_days) b;
        -- Weekday bands without weekend ones, or the other way round (two bands of one kind
        -- of day starting at once break the primary key).
        IF (SELECT count(DISTINCT days) FROM cluster.tariff_bands
             WHERE tariff_id = v_tariff_id AND days <> 'all') = 1 THEN
            RAISE EXCEPTION 'weekdays and weekends each need a band: give bands of every day or of the other kind too'
                USING ERRCODE = 'invalid_parameter_value';
        END IF;
        INSERT INTO cluster.tariff_holidays (tariff_id, day, name)
        SELECT v_tariff_id, h.day, h.name
          FROM unnest(p_holiday_days, p_holiday_names) AS h (day, name);
    END IF;
    INSERT INTO cluster.repriced_periods (feed_id, period)
    VALUES (p_feed_id, tstzmultirange(tstzrange(v_from, NULL, '[)')));
END $$;
COMMENT ON FUNCTION cluster.set_tariff(bigint, text, timestamptz, time[], double precision[], text, double precision, double precision, text[], double precision, double precision, double precision, text, double precision, text, date[], text[], int4range) IS
    'Make the bands (local start times, prices, day kinds) the feed''s tariff for the medium from p_from on (none when p_starts is NULL), plus p_factor times the prices of area p_area when given, with VAT, floor and cap, p_standing charged per local day or month, kWh per m³ for gas, and the public holidays that count as weekend days; the engine recomputes the cost from p_from.';

-- An area's quarter-hour prices per UTC day (cluster.price_days, sql/0057_price_days.sql) over
-- the days p_changed touches (null: every day of its slots), from cluster.prices: what
-- cluster.set_prices calls after each change. A day left without any priced quarter loses its
-- row.
CREATE OR REPLACE FUNCTION cluster.refresh_price_days(p_area text, p_changed tstzmultirange)
RETURNS void LANGUAGE sql AS $$
WITH touched AS (
    SELECT coalesce(p_changed, (SELECT range_agg(s.slot) FROM cluster.prices s
                                 WHERE s.area = p_area)) AS span
), days AS (
    SELECT DISTINCT g::date AS day
      FROM touched t
     CROSS JOIN LATERAL unnest(t.span) AS r (span)
     CROSS JOIN LATERAL generate_series(date_trunc('day', lower(r.span) AT TIME ZONE 'UTC'),
                                        (upper(r.span) - interval '1 microsecond') AT TIME ZONE 'UTC',
                                        interval '1 day') AS g
), quarters AS (
    -- From the slots (one slot's quarters generated, not each quarter searched for its slot):
    -- every quarter hour whose start lies in a slot of the touched days, by its seconds since
    -- 1970.
    SELECT (to_timestamp(e) AT TIME ZONE 'UTC')::date AS day,
           cluster.quarter_number(to_timestamp(e)) AS n, s.price
      FROM cluster.prices s
     CROSS JOIN LATERAL generate_series(ceil(date_part('epoch', lower(s.slot)) / 900)::bigint * 900,
                                        ceil(date_part('epoch', upper(s.slot)) / 900)::bigint * 900 - 900,
                                        900) AS e
     WHERE s.area = p_area
       AND s.slot && tstzrange(((SELECT min(day) FROM days)::timestamp AT TIME ZONE 'UTC'),
                               ((SELECT max(day) + 1 FROM days)::timestamp AT TIME ZONE 'UTC'))
), summed AS (
    SELECT d.day, array_agg(x.price ORDER BY q.n) AS prices, coalesce(sum(x.price), 0) AS total,
           count(x.price) AS priced, min(x.price) AS low, max(x.price) AS high
      FROM days d
     CROSS JOIN generate_series(1, 96) AS q (n)
      LEFT JOIN quarters x ON x.day = d.day AND x.n = q.n
     GROUP BY d.day
), emptied AS (
    DELETE FROM cluster.price_days p USING summed s
     WHERE p.area = p_area AND p.day = s.day AND s.priced = 0
)
INSERT INTO cluster.price_days AS p (area, day, prices, total, priced, low, high)
SELECT p_area, s.day, s.prices, s.total, s.priced, s.low, s.high FROM summed s WHERE s.priced > 0
    ON CONFLICT (area, day) DO UPDATE
   SET prices = EXCLUDED.prices, total = EXCLUDED.total, priced = EXCLUDED.priced,
       low = EXCLUDED.low, high = EXCLUDED.high
$$;
COMMENT ON FUNCTION cluster.refresh_price_days(text, tstzmultirange) IS
    'Recompute an area''s quarter-hour prices per UTC day (cluster.price_days) over the days p_changed touches (null: all its slots'' days).';

-- Prices of an area's slots: the given slots come, and a stored slot they overlap keeps only
-- its parts outside them, at its price: an import changes exactly the time it covers and never
-- un-prices a slot it left out (the area is made on its first prices). A part that is not whole
-- 90 s buckets refuses the call, naming both slots: a given slot would cut a stored one off its
-- bucket grid. The buckets whose price changed (a given slot not stored before with the same
-- bounds and price) are queued for every feed with a tariff on the area while that tariff is
-- valid, as late data is: their cost, hours, days and months follow, and nothing else moves.
-- Under the area's row lock: two imports of one area serialise.
CREATE OR REPLACE FUNCTION cluster.set_prices(
    p_area text, p_slots tstzrange[], p_prices double precision[]
) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    v_old cluster.prices[];
    v_cut tstzrange;
    v_kept tstzrange;
    v_given tstzmultirange;
    v_changed tstzmultirange;
    v_count integer;
BEGIN
    IF cardinality(p_slots) IS DISTINCT FROM cardinality(p_prices) THEN
        RAISE EXCEPTION 'one price per slot' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO cluster.price_areas (area) VALUES (p_area) ON CONFLICT DO NOTHING;
    PERFORM 1 FROM cluster.price_areas WHERE area = p_area FOR UPDATE;
    SELECT coalesce(range_agg(g), '{}') INTO v_given FROM unnest(p_slots) g;
    -- Against the given slots merged (a year's file is one range): `&& ANY (p_slots)` compared
    -- every stored slot with every given one, and a year imported again took 149 s.
    WITH gone AS (
        DELETE FROM cluster.prices p WHERE p.area = p_area AND p.slot && v_given
        RETURNING p.*
    )
    SELECT coalesce(array_agg(gone), '{}') INTO v_old FROM gone;
    SELECT o.slot, kept.slot INTO v_cut, v_kept
      FROM unnest(v_old) o
     CROSS JOIN LATERAL unnest(tstzmultirange(o.slot) - v_given) AS kept (slot)
     WHERE (date_part('epoch', upper(kept.slot)) - date_part('epoch', lower(kept.slot)))::numeric
           % 90 <> 0
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'the stored slot % would keep % outside the new slots, not whole 90 s buckets',
            v_cut, v_kept USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO cluster.prices (area, slot, price)
    SELECT p_area, g.slot, g.price FROM unnest(p_slots, p_prices) AS g (slot, price)
    UNION ALL
    SELECT p_area, kept.slot, o.price
      FROM unnest(v_old) o
     CROSS JOIN LATERAL unnest(tstzmultirange(o.slot) - v_given) AS kept (slot);
    -- Given slots that were not stored before with the same bounds and price (an anti-join,
    -- which can hash: a year of quarter hours against a year).
    SELECT coalesce(range_agg(g.slot), '{}'), count(*)
      INTO v_changed, v_count
      FROM unnest(p_slots, p_prices) AS g (slot, price)
      LEFT JOIN unnest(v_old) o ON o.slot = g.slot AND o.price = g.price
     WHERE o.slot IS NULL;
    PERFORM cluster.refresh_price_days(p_area, v_changed);
    INSERT INTO cluster.repriced_periods (feed_id, period)
    SELECT t.feed_id, v_changed * tstzmultirange(t.validity)
      FROM cluster.tariffs t
     WHERE t.area = p_area AND NOT isempty(v_changed * tstzmultirange(t.validity));
    RETURN v_count;
END $$;
COMMENT ON FUNCTION cluster.set_prices(text, tstzrange[], double precision[]) IS
    'Set the prices of an area''s slots: stored slots overlapping a given one keep only their parts outside the given ones, so nothing left out loses its price; the engine reprices the buckets whose price changed for every feed on the area. Returns the number of given slots new or changed.';
