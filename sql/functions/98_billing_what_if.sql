-- What-if (docs/billing.md#what-if): a household's own buckets replayed through other contracts,
-- month by month, beside what its current tariffs billed. Nothing here restates the bill: the
-- quantities are billing's one reading of the period (cluster.period_rows: the streams the bill
-- adds, by the main-meter rule), the current contract's money is those rows' money and the
-- charges of cluster.period_charges, and a contract prices by the tariff formula
-- (cluster.tariff_price), the kind of a day (cluster.band_holds), the bands as stored
-- (cluster.band_rows) and a standing charge's daily share (cluster.standing_share).
-- Re-applied by every `migrate`, after the bill's functions it reads.

-- A contract's public holidays, as the caller computed them (billing/holidays.py: SQL cannot
-- call the holidays package): `holiday_days`, a list of dates, beside `holidays`. A part that
-- names a calendar without its dates is refused rather than priced as if it had none.
CREATE OR REPLACE FUNCTION cluster.contract_holidays(p_part jsonb) RETURNS date[]
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF p_part ? 'holidays' AND NOT p_part ? 'holiday_days' THEN
        RAISE EXCEPTION 'a contract with holidays % needs their dates as holiday_days (billing/holidays.py computes them)',
            p_part ->> 'holidays' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN ARRAY(SELECT jsonb_array_elements_text(coalesce(p_part -> 'holiday_days', '[]'))::date);
END $$;
COMMENT ON FUNCTION cluster.contract_holidays(jsonb) IS
    'A contract part''s public holidays (its holiday_days); refuses a part with holidays but no holiday_days.';

-- A contract part's bands as stored (cluster.band_rows): its `bands` as `admin tariffs set`
-- writes them ([weekday/|weekend/]HH:MM=PRICE), else one band of its `price`, else (an area's
-- prices alone) one band of 0. The contract was checked when it came in (billing/contracts.py).
CREATE OR REPLACE FUNCTION cluster.contract_bands(p_part jsonb)
RETURNS TABLE (days text, starts time, ends time, price double precision)
LANGUAGE sql IMMUTABLE AS $$
    WITH given AS (
        SELECT coalesce(m[1], 'all') AS d, m[2]::time AS s, m[3]::float8 AS p
          FROM jsonb_array_elements_text(coalesce(p_part -> 'bands', '[]')) AS e (band)
         CROSS JOIN regexp_match(e.band, '^(?:(weekday|weekend)/)?(\d\d:\d\d)=(.+)$') AS m
        UNION ALL
        SELECT 'all', '00:00', coalesce((p_part ->> 'price')::float8, 0)
         WHERE coalesce(jsonb_array_length(p_part -> 'bands'), 0) = 0
    )
    SELECT b.days, b.starts, b.ends, b.price
      FROM (SELECT array_agg(s) AS s, array_agg(p) AS p, array_agg(d) AS d FROM given) g
     CROSS JOIN LATERAL cluster.band_rows(g.s, g.p, g.d) b
$$;
COMMENT ON FUNCTION cluster.contract_bands(jsonb) IS
    'A contract part''s bands (its bands, or its flat price, or 0 on an area) as cluster.band_rows stores them.';

-- Per contract (0: the feed's current tariffs, when p_current; 1..n: p_contracts[i]) and local
-- month of [p_from, p_to] as of p_now, the household's own buckets priced:
-- * quantity, export: what the bill adds (cluster.period_rows, billed), in the line's unit;
-- * the current contract: energy and credit are its cost and credit streams' days, standing
--   and VAT the bill's (cluster.period_charges), so that its months add up to the bill;
-- * a contract: the billed streams' quarter hours (cluster.quarter_days, read once for all
--   contracts), each quarter priced by the contract's band holding its local start on its
--   kind of day and, on an area, the area's slot holding its start (15-minute slots where
--   the area has them, hourly before); a quarter with energy and no price leaves its month
--   incomplete and its money out; standing charges per local day that has begun; VAT included
--   at the contract's rate; no export part: no credit. How, without a row per quarter:
--   docs/billing.md#what-if;
-- * coverage: the share of the month's time with points of the billed consumption (never
--   scaled up to a whole month); complete: every day over and every bucket priced;
-- * market_average_price: the area's price over the month weighted by time, and
--   load_shape_factor: the area's price weighted by the household's consumption over it.
CREATE OR REPLACE FUNCTION cluster.what_ifs(
    p_feed_id bigint, p_medium text, p_contracts jsonb[], p_from date, p_to date,
    p_now timestamptz, p_current boolean DEFAULT true
) RETURNS TABLE (contract integer, month date, quantity double precision,
                 export double precision, energy double precision, standing double precision,
                 credit double precision, vat double precision, total double precision,
                 average_price double precision, coverage double precision, complete boolean,
                 market_average_price double precision, load_shape_factor double precision)
LANGUAGE plpgsql STABLE SET jit = off SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
BEGIN
RETURN QUERY
WITH period AS MATERIALIZED (
    SELECT p.* FROM cluster.period_rows(p_feed_id, p_from, p_to) p
     WHERE p.billed AND p.line IN (p_medium, 'export')
), days AS MATERIALIZED (
    SELECT d.day, date_trunc('month', d.day)::date AS month, d.start, d.finish, d.timezone,
           extract(epoch FROM d.finish - d.start) AS seconds
      FROM cluster.feed_local_days(p_feed_id, p_from, p_to) d
), months AS MATERIALIZED (
    -- Per month: its days' time and the part of it the billed consumption has points for (on
    -- a day two totals are added, the one with more; a point is a 90 s bucket, as the
    -- overview's coverage counts them), its quantities, and whether it is over.
    SELECT d.month, min(d.start) AS start, max(d.finish) AS finish, bool_and(d.finish <= p_now) AS over,
           least(1, sum(coalesce(c.points, 0)) * 90 / sum(d.seconds)) AS coverage,
           sum(c.quantity) / cluster.bill_divisor(p_medium) AS quantity,
           sum(c.export) / 1000 AS export
      FROM days d
      LEFT JOIN (SELECT p.day, max(p.points) FILTER (WHERE p.line = p_medium) AS points,
                        sum(p.quantity) FILTER (WHERE p.line = p_medium) AS quantity,
                        sum(p.quantity) FILTER (WHERE p.line = 'export') AS export
                   FROM period p GROUP BY p.day) c ON c.day = d.day
     GROUP BY d.month
), current_days AS (
    -- The current contract per line and day: the bill's money and charges, each day's VAT
    -- share at the rate of the tariff holding its start, as cluster.feed_bill counts them.
    SELECT coalesce(m.line, c.line) AS line, date_trunc('month', coalesce(m.day, c.day))::date AS month,
           coalesce(m.amount, 0) AS amount, coalesce(c.standing, 0) AS standing,
           coalesce(c.vat / (100 + c.vat), 0) AS vat_share, coalesce(m.unpriced, false) AS unpriced
      FROM (SELECT p.line, p.day, sum(p.amount) AS amount,
                   bool_or(p.short AND EXISTS (
                       SELECT FROM cluster.tariffs t
                        WHERE t.feed_id = p_feed_id AND t.medium = p.line
                          AND t.validity && tstzrange(p.start, p.finish))) AS unpriced
              FROM period p WHERE p_current GROUP BY p.line, p.day) m
      FULL JOIN (SELECT c.* FROM cluster.period_charges(p_feed_id, p_from, p_to, p_now) c
                  WHERE p_current AND c.line IN (p_medium, 'export')) c
        ON c.line = m.line AND c.day = m.day
), current_months AS (
    SELECT 0 AS contract, m.month,
           sum(x.amount) FILTER (WHERE x.line <> 'export') AS energy,
           sum(x.amount) FILTER (WHERE x.line = 'export') AS credit,
           sum(x.standing) AS standing,
           sum((x.standing + CASE x.line WHEN 'export' THEN -x.amount ELSE x.amount END)
               * x.vat_share) AS vat,
           coalesce(bool_or(x.unpriced), false) AS unpriced,
           NULL::float8 AS area_money, NULL::float8 AS area_units, NULL::text AS area
      FROM months m
      LEFT JOIN current_days x ON x.month = m.month
     WHERE p_current
     GROUP BY m.month
), parts AS MATERIALIZED (
    -- Each contract's parts: its medium's terms (the contract itself) and its export part.
    SELECT c.n::integer AS contract, k.kind, k.part, k.part ->> 'area' AS area,
           -- The part's bit in a day's mask of kinds (local_days): at most 20 parts a call.
           (row_number() OVER (ORDER BY c.n, k.kind) - 1)::integer AS bit,
           coalesce((k.part ->> 'factor')::float8, 1) AS factor,
           coalesce((k.part ->> 'vat')::float8, 0) AS vat,
           (k.part ->> 'floor')::float8 AS floor, (k.part ->> 'cap')::float8 AS cap,
           coalesce((k.part ->> 'standing')::float8, 0) AS standing,
           coalesce(k.part ->> 'standing_per', 'day') AS standing_per,
           -- The unit a price is per: kWh of Wh (power and export), kWh of m³ (gas per kWh).
           CASE WHEN k.kind = 'export' OR p_medium = 'power' THEN 0.001::float8
                ELSE coalesce((k.part ->> 'kwh_per_m3')::float8, 1) END AS scale,
           cluster.contract_holidays(k.part) AS holidays
      FROM unnest(p_contracts) WITH ORDINALITY AS c (terms, n)
     CROSS JOIN LATERAL (VALUES ('consumption', c.terms), ('export', c.terms -> 'export')) AS k (kind, part)
     WHERE jsonb_typeof(k.part) = 'object'
), part_days AS MATERIALIZED (
    -- Per contract part, its bands as sorted arrays per kind of day (cluster.contract_bands;
    -- `all` serves both kinds) and the kind of each of the range's days by its holidays
    -- (cluster.is_weekend_day), in the days' order: a group of segments then finds its band
    -- by a binary search in one row.
    SELECT p.contract, p.kind, p.area, p.factor, p.vat, p.floor, p.cap, p.scale, p.bit,
           -- A part whose floor or cap holds on its area's price is not linear in it.
           p.area IS NOT NULL AND (p.floor IS NOT NULL OR p.cap IS NOT NULL) AS clamped,
           b.weekday_starts, b.weekday_prices, b.weekend_starts, b.weekend_prices,
           -- Only where the part's bands tell the kinds of day apart.
           CASE WHEN (b.weekday_starts, b.weekday_prices)
                     IS DISTINCT FROM (b.weekend_starts, b.weekend_prices)
                THEN (SELECT array_agg(cluster.is_weekend_day(d.day, p.holidays) ORDER BY d.day)
                        FROM days d) END AS weekends
      FROM parts p
     CROSS JOIN LATERAL (
           SELECT array_agg(b.starts ORDER BY b.starts) FILTER (WHERE b.days <> 'weekend')
                      AS weekday_starts,
                  array_agg(b.price ORDER BY b.starts) FILTER (WHERE b.days <> 'weekend')
                      AS weekday_prices,
                  array_agg(b.starts ORDER BY b.starts) FILTER (WHERE b.days <> 'weekday')
                      AS weekend_starts,
                  array_agg(b.price ORDER BY b.starts) FILTER (WHERE b.days <> 'weekday')
                      AS weekend_prices
             FROM cluster.contract_bands(p.part) b) b
), areas AS MATERIALIZED (
    -- The areas the quarters are priced in: each a contract names, or '' (none) when none
    -- does. A contract without an area reads the first's segments' energy.
    SELECT DISTINCT p.area FROM parts p WHERE p.area IS NOT NULL
    UNION ALL
    SELECT '' WHERE NOT EXISTS (SELECT FROM parts p WHERE p.area IS NOT NULL)
), local_days AS MATERIALIZED (
    -- Each local day, per area, with its place among the UTC days that cluster.quarter_days
    -- and cluster.price_days index: its number in the range (in the days' order), the UTC day
    -- its first quarter hour lies in and that quarter's number there, its quarters (92 or 100
    -- on the day of a DST change; local midnight is a whole quarter hour in every zone of
    -- today's offsets), and the area's prices of those quarters in the order of its time
    -- (null: no price; for '', null), looked up by the key of cluster.price_days.
    SELECT l.*, a.area,
           CASE WHEN a.area <> '' THEN cluster.day_quarters(x.prices, y.prices, l.first, l.quarters)
                END AS prices,
           least(x.low, y.low) AS low, greatest(x.high, y.high) AS high,
           -- The day's kind under each part (cluster.is_weekend_day by its holidays) as a mask
           -- of the parts' bits: days of one mask are priced alike by every part.
           (SELECT coalesce(bit_or(1::bigint << p.bit) FILTER (WHERE p.weekends[l.i]), 0)
              FROM part_days p WHERE p.weekends IS NOT NULL) AS mask
      FROM (SELECT d.day, row_number() OVER (ORDER BY d.day)::integer AS i, d.month, d.start,
                   d.timezone, d.seconds = 86400 AS whole,
                   (d.start AT TIME ZONE 'UTC')::date AS utc_day,
                   cluster.quarter_number(d.start) AS first, (d.seconds / 900)::integer AS quarters
              FROM days d) l
     CROSS JOIN areas a
      LEFT JOIN cluster.price_days x ON x.area = a.area AND x.day = l.utc_day
      LEFT JOIN cluster.price_days y ON y.area = a.area AND y.day = l.utc_day + 1
), streams AS MATERIALIZED (
    -- The billed streams to read for the contracts (none when only the current one is asked;
    -- export only for a contract with an export part), each over the UTC days its billed
    -- local days touch, and whether the engine has work queued for it
    -- (cluster.stale_rollups: then its days are read in real time).
    SELECT s.stream_id, s.kind, (s.lo AT TIME ZONE 'UTC')::date AS lo,
           ((s.hi - interval '1 microsecond') AT TIME ZONE 'UTC')::date AS hi,
           EXISTS (SELECT FROM cluster.stale_rollups x WHERE x.stream_id = s.stream_id) AS stale
      FROM (SELECT r.stream_id,
                   CASE WHEN bool_or(r.line = 'export') THEN 'export' ELSE 'consumption' END AS kind,
                   min(r.start) AS lo, max(r.finish) AS hi
              FROM period r
             WHERE cardinality(p_contracts) > 0
               AND (r.line <> 'export' OR EXISTS (SELECT FROM parts WHERE kind = 'export'))
             GROUP BY r.stream_id) s
), pending AS MATERIALIZED (
    -- The UTC days of the streams with work queued (cluster.stale_rollups) that the engine has
    -- yet to recompute (cluster.pending_quarter_days): a few a stream, read in real time.
    SELECT s.stream_id, q.day, q.totals
      FROM streams s
     CROSS JOIN LATERAL cluster.pending_quarter_days(s.stream_id, s.lo, s.hi) q
     WHERE s.stale
), stream_rows AS MATERIALIZED (
    -- The billed streams' UTC days of cluster.quarter_days over the days they are read for,
    -- in one range of the key each (a look-up per local day and UTC day took twice as long),
    -- the pending days in place of the stored ones.
    SELECT r.stream_id, r.day, coalesce(q.totals, r.totals) AS totals
      FROM streams s
      JOIN cluster.quarter_days r ON r.stream_id = s.stream_id AND r.day BETWEEN s.lo AND s.hi
      LEFT JOIN pending q ON q.stream_id = r.stream_id AND q.day = r.day
    UNION ALL
    SELECT q.stream_id, q.day, q.totals
      FROM pending q
     WHERE NOT EXISTS (SELECT FROM cluster.quarter_days r
                        WHERE r.stream_id = q.stream_id AND r.day = q.day)
), stream_days AS MATERIALIZED (
    -- Per stream billed on a local day (cluster.period_rows) and area, the stream's quarters
    -- in the order of the day's time (cluster.day_quarters over its two UTC days), beside the
    -- area's prices: read once for every contract. Streams billed together on a day are not
    -- added here: every sum below is linear in the quarters, so their segments add up instead.
    SELECT row_number() OVER () AS id, s.kind, l.area, l.month, l.whole, l.start, l.timezone,
           l.quarters, l.prices, l.low, l.high, l.mask,
           cluster.day_quarters(a.totals, b.totals, l.first, l.quarters) AS totals,
           -- Whether every quarter of the day has a price (nearly always): then the priced
           -- energy is the energy and none is unpriced, with no second look.
           l.area <> '' AND array_position(l.prices, NULL) IS NULL AS full
      FROM period p
      JOIN streams s ON s.stream_id = p.stream_id
      JOIN local_days l ON l.day = p.day
      LEFT JOIN stream_rows a ON a.stream_id = p.stream_id AND a.day = l.utc_day
      LEFT JOIN stream_rows b ON b.stream_id = p.stream_id AND b.day = l.utc_day + 1
), cuts AS MATERIALIZED (
    -- Per kind, the segments of a day of 24 hours: runs of quarters (lo to hi, by number in the
    -- day) that every contract's band holds whole, each starting at the first quarter that
    -- starts at or after a local time a band of any contract's part of that kind starts at
    -- (or midnight), with that quarter's local start (quarter n starts at (n - 1) x 15
    -- minutes), which picks each contract's band.
    SELECT k.kind, array_agg(g.lo ORDER BY g.lo) AS los, array_agg(g.hi ORDER BY g.lo) AS his,
           array_agg(((g.lo - 1) * interval '15 minutes')::time ORDER BY g.lo) AS locals
      FROM (VALUES ('consumption'), ('export')) AS k (kind)
     CROSS JOIN LATERAL (
           SELECT x.lo, coalesce(lead(x.lo) OVER (ORDER BY x.lo) - 1, 96) AS hi
             FROM (SELECT DISTINCT ceil(date_part('epoch', c.t) / 900)::integer + 1 AS lo
                     FROM (SELECT '00:00'::time AS t
                           UNION ALL SELECT unnest(p.weekday_starts) FROM part_days p WHERE p.kind = k.kind
                           UNION ALL SELECT unnest(p.weekend_starts) FROM part_days p WHERE p.kind = k.kind) c) x
            WHERE x.lo <= 96) g
     GROUP BY k.kind
), segments AS MATERIALIZED (
    -- Per stream, area, day and segment (on the day of a DST change, each quarter is its
    -- own, by its local start: in autumn the repeated hour may lie on both sides of a band's
    -- start): the energy and its money at the area's price (cluster.slice_sum and
    -- cluster.slice_dot over the day's quarters and prices: both over a stream's 365 whole days
    -- in under 0.5 ms, where a row per quarter took about 6), with the day's lowest and highest
    -- area price.
    SELECT k.id, k.kind, k.area, k.mask, k.month, g.lo, g.hi, g.local, k.low, k.high,
           cluster.slice_sum(k.totals, g.lo, g.hi) AS value,
           cluster.slice_dot(k.totals, k.prices, g.lo, g.hi) AS area_value,
           CASE WHEN k.full THEN cluster.slice_sum(k.totals, g.lo, g.hi)
                WHEN k.area <> ''
                THEN (SELECT sum(k.totals[n]) FROM generate_series(g.lo, g.hi) AS n
                       WHERE k.prices[n] IS NOT NULL) END AS priced_value,
           NOT k.full AND k.area <> ''
           AND (SELECT bool_or(k.prices[n] IS NULL AND k.totals[n] <> 0)
                  FROM generate_series(g.lo, g.hi) AS n) AS unpriced
      FROM stream_days k
      JOIN cuts c ON c.kind = k.kind
     CROSS JOIN LATERAL (
           SELECT u.lo, u.hi, u.local FROM unnest(c.los, c.his, c.locals) AS u (lo, hi, local)
            WHERE k.whole
           UNION ALL
           SELECT n, n, ((k.start + (n - 1) * interval '15 minutes') AT TIME ZONE k.timezone)::time
             FROM generate_series(1, k.quarters) AS n
            WHERE NOT k.whole) g
), segment_groups AS MATERIALIZED (
    -- The segments added up per kind, area, month, local start and mask of the day's kinds:
    -- every part prices a group's segments alike (the benchmark's year of 4 contracts: 1,836
    -- segments, 464 groups, most of them the quarters of the two DST days). A quarter's energy is
    -- never negative, so a segment with energy is one whose sum is not 0.
    SELECT s.kind, s.area, s.month, s.local, s.mask, sum(s.value) AS value,
           sum(s.priced_value) AS priced_value, sum(s.area_value) AS area_value,
           bool_or(s.unpriced) AS unpriced, coalesce(bool_or(s.value <> 0), false) AS used
      FROM segments s
     GROUP BY s.kind, s.area, s.month, s.local, s.mask
), priced AS (
    -- Each contract part linear in the area's price (without an area, or on one without floor
    -- or cap) per group, by the band holding its local start on its kind of day: the group's
    -- energy at the price its energy-weighted area price makes is the sum of its quarters'
    -- money.
    SELECT p.contract, g.kind, g.month,
           -- A band-less group with energy (a contract with no band on the day's kind) is
           -- unpriced too.
           (p.area IS NOT NULL AND g.unpriced) OR (b.price IS NULL AND g.used) AS unpriced,
           CASE WHEN p.area IS NOT NULL THEN g.priced_value * p.scale END AS area_units,
           CASE WHEN p.area IS NOT NULL THEN g.area_value * p.scale END AS area_money,
           p.scale * CASE
               WHEN p.area IS NULL
               THEN g.value * cluster.tariff_price(p.factor, 0, b.price, p.vat, p.floor, p.cap)
               ELSE g.priced_value * cluster.tariff_price(
                        p.factor, coalesce(g.area_value / nullif(g.priced_value, 0), 0),
                        b.price, p.vat, p.floor, p.cap)
           END AS money
      FROM part_days p
      JOIN segment_groups g ON g.kind = p.kind
                           AND g.area = coalesce(p.area, (SELECT min(area) FROM areas))
     CROSS JOIN LATERAL (
           SELECT CASE WHEN g.mask & (1::bigint << p.bit) <> 0
                       THEN p.weekend_prices[width_bucket(g.local, p.weekend_starts)]
                       ELSE p.weekday_prices[width_bucket(g.local, p.weekday_starts)] END
                      AS price) b
     WHERE NOT p.clamped
    UNION ALL
    -- A part with a floor or a cap on its area per segment: linear too where the clamp cannot
    -- hold (the price at the day's lowest and highest area price lies between floor and cap),
    -- else each quarter priced, clamped, from its day's quarters and prices.
    SELECT p.contract, s.kind, s.month,
           s.unpriced OR (b.price IS NULL AND coalesce(s.value <> 0, false)),
           s.priced_value * p.scale, s.area_value * p.scale,
           p.scale * CASE
               WHEN coalesce(
                        least(cluster.tariff_price(p.factor, s.low, b.price, p.vat, NULL, NULL),
                              cluster.tariff_price(p.factor, s.high, b.price, p.vat, NULL, NULL))
                            >= coalesce(p.floor, '-Infinity')
                        AND greatest(cluster.tariff_price(p.factor, s.low, b.price, p.vat, NULL, NULL),
                                     cluster.tariff_price(p.factor, s.high, b.price, p.vat, NULL, NULL))
                            <= coalesce(p.cap, 'Infinity'), false)
               THEN s.priced_value * cluster.tariff_price(
                        p.factor, coalesce(s.area_value / nullif(s.priced_value, 0), 0),
                        b.price, p.vat, p.floor, p.cap)
               ELSE (SELECT sum(k.totals[n] * cluster.tariff_price(p.factor, k.prices[n], b.price,
                                                                   p.vat, p.floor, p.cap))
                       FROM generate_series(s.lo, s.hi) AS n)
           END
      FROM part_days p
      JOIN segments s ON s.kind = p.kind AND s.area = p.area
      JOIN stream_days k ON k.id = s.id
     CROSS JOIN LATERAL (
           SELECT CASE WHEN s.mask & (1::bigint << p.bit) <> 0
                       THEN p.weekend_prices[width_bucket(s.local, p.weekend_starts)]
                       ELSE p.weekday_prices[width_bucket(s.local, p.weekday_starts)] END
                      AS price) b
     WHERE p.clamped
), contract_months AS (
    SELECT p.contract, p.month,
           coalesce(sum(p.money) FILTER (WHERE p.kind = 'consumption'), 0) AS energy,
           coalesce(sum(p.money) FILTER (WHERE p.kind = 'export'), 0) AS credit,
           bool_or(p.unpriced) AS unpriced,
           sum(p.area_money) FILTER (WHERE p.kind = 'consumption') AS area_money,
           sum(p.area_units) FILTER (WHERE p.kind = 'consumption') AS area_units
      FROM priced p
     GROUP BY p.contract, p.month
), charges AS (
    -- Each contract's standing charges and VAT rates per month: every day that has begun.
    SELECT p.contract, d.month,
           sum(CASE WHEN d.start <= p_now
                    THEN cluster.standing_share(p.standing, p.vat, p.standing_per, d.day)
                    ELSE 0 END) FILTER (WHERE p.kind = 'consumption') AS standing,
           coalesce(sum(CASE WHEN d.start <= p_now
                        THEN cluster.standing_share(p.standing, p.vat, p.standing_per, d.day)
                        ELSE 0 END) FILTER (WHERE p.kind = 'export'), 0) AS export_standing,
           max(p.vat / (100 + p.vat)) FILTER (WHERE p.kind = 'consumption') AS vat_share,
           coalesce(max(p.vat / (100 + p.vat)) FILTER (WHERE p.kind = 'export'), 0) AS export_share,
           max(p.area) FILTER (WHERE p.kind = 'consumption') AS area
      FROM parts p CROSS JOIN days d
     GROUP BY p.contract, d.month
), answered AS (
    SELECT c.contract, c.month, coalesce(m.energy, 0) AS energy, coalesce(m.credit, 0) AS credit,
           c.standing + c.export_standing AS standing,
           (coalesce(m.energy, 0) + c.standing) * c.vat_share
           + (c.export_standing - coalesce(m.credit, 0)) * c.export_share AS vat,
           coalesce(m.unpriced, false) AS unpriced, m.area_money, m.area_units, c.area
      FROM charges c
      LEFT JOIN contract_months m ON m.contract = c.contract AND m.month = c.month
    UNION ALL
    SELECT x.contract, x.month, coalesce(x.energy, 0), coalesce(x.credit, 0),
           coalesce(x.standing, 0), coalesce(x.vat, 0), x.unpriced, x.area_money, x.area_units,
           x.area
      FROM current_months x
), area_days AS MATERIALIZED (
    -- The areas' quarter-hour prices per UTC day over the months (cluster.price_days, kept by
    -- cluster.set_prices): a year is 365 rows an area, where its slots were 35,040 to read,
    -- sort and search each call.
    SELECT d.area, d.day, d.prices, d.total, d.priced
      FROM cluster.price_days d
     WHERE d.area IN (SELECT area FROM areas)
       AND d.day >= ((SELECT min(start) FROM months) AT TIME ZONE 'UTC')::date
       AND d.day <= ((SELECT max(finish) FROM months) AT TIME ZONE 'UTC')::date
), market_days AS (
    -- Each month's UTC days of each area's prices (a day in two months is in both), with the
    -- month's quarters of that day: all 96 inside the month, the first or last ones on the
    -- days it begins and ends on (local midnight is a whole quarter hour in every zone of
    -- today's offsets).
    SELECT d.area, m.month, d.day, d.prices, d.total, d.priced,
           CASE WHEN d.day = m.first_day THEN m.first_quarter ELSE 1 END AS lo,
           CASE WHEN d.day = m.last_day THEN m.last_quarter ELSE 96 END AS hi
      FROM (SELECT x.month,
                   (x.start AT TIME ZONE 'UTC')::date AS first_day,
                   cluster.quarter_number(x.start) AS first_quarter,
                   (x.last AT TIME ZONE 'UTC')::date AS last_day,
                   cluster.quarter_number(x.last) AS last_quarter
              FROM (SELECT mm.month, mm.start, mm.finish - interval '15 minutes' AS last
                      FROM months mm) x) m
      JOIN area_days d ON d.day BETWEEN m.first_day AND m.last_day
), markets AS (
    -- Each area's price over each month, weighted by time at the quarter hour: the mean of
    -- its quarters' prices that have one (a whole day by its stored sum).
    SELECT x.area, x.month, sum(x.total) / nullif(sum(x.priced), 0) AS price
      FROM (SELECT d.area, d.month,
                   CASE WHEN d.lo = 1 AND d.hi = 96 THEN d.total
                        ELSE (SELECT sum(v) FROM unnest(d.prices[d.lo:d.hi]) v) END AS total,
                   CASE WHEN d.lo = 1 AND d.hi = 96 THEN d.priced
                        ELSE (SELECT count(v) FROM unnest(d.prices[d.lo:d.hi]) v) END AS priced
              FROM market_days d) x
     GROUP BY x.area, x.month
)
SELECT a.contract, m.month, coalesce(m.quantity, 0), coalesce(m.export, 0), a.energy,
       a.standing, a.credit, a.vat, a.energy + a.standing - a.credit,
       a.energy / nullif(m.quantity, 0), m.coverage::float8, m.over AND NOT a.unpriced, k.price,
       a.area_money / nullif(a.area_units, 0) / nullif(k.price, 0)
  FROM answered a
  JOIN months m ON m.month = a.month
  LEFT JOIN markets k ON k.area = a.area AND k.month = a.month
 ORDER BY a.contract, m.month;
END $$;
COMMENT ON FUNCTION cluster.what_ifs(bigint, text, jsonb[], date, date, timestamptz, boolean) IS
    'What-if: per contract (0: the current tariffs, when p_current; i: p_contracts[i]) and local month of [p_from, p_to] as of p_now, the household''s billed buckets priced: quantity, export, energy, standing, credit, VAT, total, average price, coverage, complete, and for an area the market''s time-weighted average price and the load shape factor.';

-- One contract over one feed's local dates [p_from, p_to], month by month: what an analyst
-- runs over every feed of a market in one statement,
--     SELECT f.id, w.* FROM cluster.feeds f,
--            LATERAL cluster.what_if(f.id, (SELECT contract FROM cluster.contracts
--                                            WHERE name = 'dynamic'), '2025-01-01', '2025-12-31') w;
-- A contract with public holidays needs their dates (holiday_days, cluster.contract_holidays).
CREATE OR REPLACE FUNCTION cluster.what_if(
    p_feed_id bigint, p_contract jsonb, p_from date, p_to date
) RETURNS TABLE (month date, quantity double precision, export double precision,
                 energy double precision, standing double precision, credit double precision,
                 vat double precision, total double precision, average_price double precision,
                 coverage double precision, complete boolean,
                 market_average_price double precision, load_shape_factor double precision)
LANGUAGE sql STABLE AS $$
    SELECT w.month, w.quantity, w.export, w.energy, w.standing, w.credit, w.vat, w.total,
           w.average_price, w.coverage, w.complete, w.market_average_price, w.load_shape_factor
      FROM cluster.what_ifs(p_feed_id, coalesce(p_contract ->> 'medium', 'power'),
                            ARRAY[p_contract], p_from, p_to, now(), false) w
$$;
COMMENT ON FUNCTION cluster.what_if(bigint, jsonb, date, date) IS
    'A contract (JSON as the catalogue holds it; holiday_days beside holidays) over a feed''s local dates [p_from, p_to]: its monthly rows as POST /feeds/{id}/what-if answers them.';
