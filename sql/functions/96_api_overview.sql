-- A feed's overview (docs/api.md#overview): what a dashboard draws of a day, week, month or year,
-- beside the bill of the same days (cluster.feed_bill, 95_billing_bills.sql). Read from the hourly
-- and daily rollups, real time as the data API's `resolution` reads them: never a point, whatever
-- the range. Re-applied by every `migrate`, after the bill's file whose functions it calls.

-- A feed's overview per bucket and counted stream over its local dates [p_from, p_to]: per local
-- hour (p_unit 'hour'), local day ('day') or local month ('month', from the first's midnight),
-- as the data API's `resolution` gives each stream's buckets:
-- * line: the bill's line the stream counts in at the hour's or day's start (power, gas, water,
--   export), and counted: false while it is a sub-meter or beside its medium's main meter
--   (listed apart, added to no line);
-- * quantity: its consumption or export in the line's unit (kWh, m³); money: its cost, or minus
--   its credit for export (the money streams' rollups, as the bill reads them); points: how many
--   90 s buckets hold its value;
-- * covered: the seconds of the bucket with data, the same on each of the bucket's rows: per
--   hour or day, the most 90 s buckets any counted stream holds, times 90 s.
-- A bucket without data has no row: it is absent, never 0. A month is the sum of its days, so
-- its rows add up to the bill of its days (energy and credit; charges are the bill's own).
-- On a day its medium has a main meter, only main meters are counted, as in the bill.
CREATE OR REPLACE FUNCTION cluster.feed_overview(
    p_feed_id bigint, p_from date, p_to date, p_unit text
) RETURNS TABLE (start timestamptz, stream_id bigint, line text, counted boolean,
                 quantity double precision, points bigint, money double precision,
                 covered double precision)
LANGUAGE sql STABLE AS $$
WITH days AS MATERIALIZED (
    SELECT * FROM cluster.feed_local_days(p_feed_id, p_from, p_to)
), span AS MATERIALIZED (
    SELECT min(start) AS lo, max(finish) AS hi FROM days
), metered AS MATERIALIZED (
    SELECT * FROM cluster.feed_metered_streams(p_feed_id)
), sources AS MATERIALIZED (
    -- Each metered stream and its money stream, and whether the engine has work queued for it
    -- (then its rollups are read in real time, as the data API and the bill read them).
    SELECT x.id, x.source, x.money,
           EXISTS (SELECT FROM cluster.rollup_work w WHERE w.stream_id = x.source)
           OR EXISTS (SELECT FROM cluster.dirty_ranges d WHERE d.stream_id = x.source) AS stale
      FROM (SELECT stream_id AS id, stream_id AS source, false AS money FROM metered
            UNION ALL
            SELECT stream_id, money_id, true FROM metered WHERE money_id IS NOT NULL) x
), rolled AS MATERIALIZED (
    -- Per metered stream and hour (or day), its value and its money side by side, grouped as
    -- the bill groups them (one row each, so max() is that row's value).
    SELECT x.id AS stream_id, r.start, r.day,
           max(r.total) FILTER (WHERE NOT x.money) AS total,
           max(r.points) FILTER (WHERE NOT x.money) AS points,
           max(r.total) FILTER (WHERE x.money) AS money_total
      FROM sources x
     CROSS JOIN LATERAL (
           SELECT h.hour AS start, NULL::date AS day, h.total, h.points::bigint AS points
             FROM cluster.hourly_rollups h
            WHERE p_unit = 'hour' AND NOT x.stale AND h.stream_id = x.source
              AND h.hour >= (SELECT lo FROM span) AND h.hour < (SELECT hi FROM span)
           UNION ALL
           SELECT h.hour, NULL, h.total, h.points
             FROM cluster.realtime_hours(x.source, (SELECT lo FROM span),
                                         (SELECT hi FROM span) - interval '1 microsecond') h
            WHERE p_unit = 'hour' AND x.stale
           UNION ALL
           SELECT d.start, d.day, d.total, d.points
             FROM cluster.daily_rollups d
            WHERE p_unit <> 'hour' AND NOT x.stale AND d.stream_id = x.source
              AND d.day >= p_from AND d.day <= p_to
           UNION ALL
           SELECT d.start, d.day, d.total, d.points
             FROM cluster.realtime_days(x.source, (SELECT lo FROM span) - interval '1 day',
                                        (SELECT hi FROM span)) d
            WHERE p_unit <> 'hour' AND x.stale AND d.day >= p_from AND d.day <= p_to) r
     GROUP BY x.id, r.start, r.day
    HAVING bool_or(NOT x.money)
), configs AS MATERIALIZED (
    -- By stream first, as the bill finds them (joined to the rows, the planner looked them up
    -- by validity alone).
    SELECT c.stream_id, c.medium, c.submeter, c.main, c.validity
      FROM metered x
      JOIN cluster.stream_configs c ON c.stream_id = x.stream_id
     WHERE c.medium = ANY (cluster.billed_media())
), mains AS MATERIALIZED (
    -- The days each medium has a main meter, as the bill judges them (cluster.feed_bill): then
    -- only main meters count, and the medium's other totals are listed apart.
    SELECT DISTINCT c.medium, d.day
      FROM configs c
      JOIN metered x ON x.stream_id = c.stream_id AND x.is_total AND x.quantity = 'consumption'
      JOIN days d ON c.validity @> d.start
     WHERE c.main
), months AS (
    -- A month starts at the local midnight of its first day (the period's days hold it: a
    -- year's overview asks from the first of January).
    SELECT date_trunc('month', d.day)::date AS month, min(d.start) AS start
      FROM days d GROUP BY 1
), units AS MATERIALIZED (
    -- Per hour (or day) and stream, in the bill's units, with the bucket it falls in.
    SELECT CASE WHEN p_unit = 'month' THEN m.start ELSE q.start END AS bucket,
           q.start, q.stream_id, l.line,
           CASE WHEN EXISTS (SELECT FROM mains n WHERE n.medium = l.line AND n.day = g.day)
                THEN x.is_total AND c.main
                ELSE x.is_total AND NOT c.submeter END AS counted,
           q.total / CASE WHEN l.line IN ('power', 'export') THEN 1000 ELSE 1 END AS quantity,
           q.points,
           coalesce(q.money_total, 0) * CASE l.line WHEN 'export' THEN -1 ELSE 1 END AS money
      FROM rolled q
      JOIN metered x ON x.stream_id = q.stream_id
      -- A day's rows carry their date; an hour's is looked up (a day's 23 to 25 hours a
      -- stream), so that a year's days join by date, not by range.
      JOIN days g ON g.day = coalesce(q.day, (SELECT d.day FROM days d
                                               WHERE q.start >= d.start AND q.start < d.finish))
      LEFT JOIN months m ON m.month = date_trunc('month', g.day)::date
      JOIN configs c ON c.stream_id = q.stream_id AND c.validity @> q.start
     CROSS JOIN LATERAL (SELECT CASE x.quantity WHEN 'export' THEN 'export' ELSE c.medium END
                                AS line) l
), covered AS (
    SELECT u.bucket, sum(u.most) * 90 AS seconds
      FROM (SELECT bucket, start, max(points) FILTER (WHERE counted) AS most
              FROM units GROUP BY bucket, start) u
     GROUP BY u.bucket
)
SELECT u.bucket, u.stream_id, min(u.line), bool_and(u.counted), sum(u.quantity),
       sum(u.points)::bigint, sum(u.money), min(v.seconds)
  FROM units u
  JOIN covered v ON v.bucket = u.bucket
 WHERE u.bucket IS NOT NULL
 GROUP BY u.bucket, u.stream_id
 ORDER BY u.bucket, u.stream_id
$$;
COMMENT ON FUNCTION cluster.feed_overview(bigint, date, date, text) IS
    'A feed''s consumption, export and money per local hour, day or month (p_unit) of its local dates [p_from, p_to], per counted stream (counted false: a sub-meter), with the seconds of each bucket that hold data; from the rollups. docs/api.md#overview.';

-- The feed's baseload over its local dates [p_from, p_to]: the 5th percentile of its electricity
-- use in the night (local 00:00 to 05:00, docs/decisions.md), in W. Each night hour's power is
-- the mean over the 90 s buckets it holds data for (total Wh x 40 / buckets), summed over the
-- counted power totals (beside a main meter, the main meters alone). The night hours are made
-- from the days (4 or 6 on a DST night) and looked up in the hourly rollups by key (real
-- time), so a year reads its 1,825 night hours a stream: scanning its 8,760 hours with a zone
-- and a configuration looked up for each took 125 ms on the benchmarks' household, the probes
-- a tenth of that. Null without a night hour of data.
-- The night hours are a day's first eight hours cut at 05:00 (a night lasts 7 hours at most,
-- after a shift of two): a series of constants, whose length the planner knows. A series
-- between two instants is estimated at 1,000 rows, a year's nights at 67,000 hours, and the
-- plan's cost passed JIT's threshold: 1.5 s a call on the benchmarks' household, nearly all of
-- it compiling. The totals' few configurations are read once (configs) and each hour is judged
-- against those rows, not by a probe of stream_configs' index per hour.
CREATE OR REPLACE FUNCTION cluster.feed_baseload(p_feed_id bigint, p_from date, p_to date)
RETURNS double precision LANGUAGE sql STABLE AS $$
WITH nights AS MATERIALIZED (
    SELECT h.hour
      FROM cluster.feed_local_days(p_feed_id, p_from, p_to) d
     CROSS JOIN LATERAL generate_series(0, 7) k
     CROSS JOIN LATERAL (SELECT d.start + k * interval '1 hour' AS hour) h
     WHERE h.hour < (d.day + time '05:00') AT TIME ZONE d.timezone
), totals AS MATERIALIZED (
    SELECT m.stream_id,
           EXISTS (SELECT FROM cluster.rollup_work w WHERE w.stream_id = m.stream_id)
           OR EXISTS (SELECT FROM cluster.dirty_ranges d WHERE d.stream_id = m.stream_id) AS stale
      FROM cluster.feed_metered_streams(p_feed_id) m
     WHERE m.is_total AND m.quantity = 'consumption'
       AND EXISTS (SELECT FROM cluster.stream_configs c
                    WHERE c.stream_id = m.stream_id AND c.medium = 'power' AND NOT c.submeter)
), configs AS MATERIALIZED (
    -- The totals' configurations as electricity not marked as a sub-meter.
    SELECT c.stream_id, c.main, c.validity
      FROM totals t
      JOIN cluster.stream_configs c ON c.stream_id = t.stream_id
     WHERE c.medium = 'power' AND NOT c.submeter
), hours AS (
    SELECT x.stream_id, r.hour, r.total, r.points::bigint AS points
      FROM totals x
     CROSS JOIN nights n
     CROSS JOIN LATERAL (
           SELECT h.hour, h.total, h.points FROM cluster.hourly_rollups h
            WHERE h.stream_id = x.stream_id AND h.hour = n.hour) r
     WHERE NOT x.stale
    UNION ALL
    SELECT x.stream_id, r.hour, r.total, r.points
      FROM totals x
     CROSS JOIN LATERAL cluster.realtime_hours(
           x.stream_id, (SELECT min(hour) FROM nights), (SELECT max(hour) FROM nights)) r
      JOIN nights n ON n.hour = r.hour
     WHERE x.stale
), night AS (
    SELECT h.hour, sum(h.total * 40 / h.points) AS watts
      FROM hours h
      JOIN configs c ON c.stream_id = h.stream_id AND c.validity @> h.hour
     -- Beside a main meter, only main meters count (as in the bill and the buckets).
     WHERE c.main OR NOT EXISTS (SELECT FROM configs o WHERE o.main AND o.validity @> h.hour)
     GROUP BY h.hour
)
SELECT percentile_cont(0.05) WITHIN GROUP (ORDER BY watts) FROM night
$$;
COMMENT ON FUNCTION cluster.feed_baseload(bigint, date, date) IS
    'A feed''s always-on electricity use over its local dates [p_from, p_to]: the 5th percentile of its night hours'' mean power (local 00:00-05:00), in W; null without data. docs/decisions.md.';

-- The mean of what the feed pays per kWh of electricity over [p_start, p_end), weighted by time:
-- what a flat load would have paid, the "market average" the overview sets beside the
-- household's own average. Per tariff period and local day: the bands that hold on the day by
-- its kind (cluster.band_holds: weekday, or weekend with the tariff's holidays), each priced by
-- the tariff formula (cluster.tariff_price, VAT, floor and cap) with its factor times the mean
-- of the area's slots that meet the period (each slot once: an area's slots have one length;
-- where it changed, such as hours before quarter hours, each slot still counts once), weighted
-- by its length; the days weighted by their time in the period. For a fixed tariff this is the
-- mean of cluster.feed_prices' curve; for a dynamic one with a floor or cap it clamps the
-- area's mean, not each slot. A year is one range of the area's slots averaged per period (20
-- ms on the benchmarks' household, a loaded machine), where weighting each slot by its length
-- took 130 ms and cutting the curve's 35,000 stretches 291; its days are a few hundred rows.
CREATE OR REPLACE FUNCTION cluster.feed_mean_price(
    p_feed_id bigint, p_start timestamptz, p_end timestamptz
) RETURNS double precision LANGUAGE sql STABLE AS $$
-- An end before the start (a period that has not begun: the overview asks up to now) is an
-- empty span, no price, not an error: a future date's overview was a 500.
WITH asked AS (
    SELECT tstzrange(p_start, greatest(p_start, p_end)) AS span
), periods AS MATERIALIZED (
    -- Materialized: inlined, the area's mean would be computed once per day below.
    SELECT t.id, t.factor, t.vat, t.floor, t.cap, t.holiday_years,
           t.validity * a.span AS span,
           CASE WHEN t.area IS NULL THEN 0 ELSE (
               SELECT avg(s.price) FROM cluster.prices s
                WHERE s.area = t.area AND s.slot && t.validity * a.span) END AS area_price
      FROM cluster.tariffs t, asked a
     WHERE t.feed_id = p_feed_id AND t.medium = 'power'
       AND t.validity && a.span AND NOT isempty(t.validity * a.span)
), pieces AS (
    SELECT p.*, d.day,
           p.span * tstzrange(d.start, d.finish)
               * cluster.holiday_span(p.holiday_years, d.timezone) AS piece
      FROM periods p
     CROSS JOIN LATERAL cluster.feed_local_days(p_feed_id, (lower(p.span) AT TIME ZONE 'UTC')::date - 1,
                                          (upper(p.span) AT TIME ZONE 'UTC')::date + 1) d
     WHERE p.area_price IS NOT NULL
), days AS (
    SELECT extract(epoch FROM upper(x.piece) - lower(x.piece)) AS seconds,
           (SELECT sum(cluster.tariff_price(x.factor, x.area_price, b.price, x.vat, x.floor,
                                            x.cap)
                       * extract(epoch FROM b.ends - b.starts)) / 86400
              FROM cluster.tariff_bands b
             WHERE b.tariff_id = x.id
               AND cluster.band_holds(b.days, x.day, ARRAY(
                       SELECT h.day FROM cluster.tariff_holidays h
                        WHERE h.tariff_id = x.id AND h.day = x.day))) AS price
      FROM pieces x
     WHERE NOT isempty(x.piece)
)
SELECT sum(price * seconds) / nullif(sum(seconds), 0) FROM days WHERE price IS NOT NULL
$$;
COMMENT ON FUNCTION cluster.feed_mean_price(bigint, timestamptz, timestamptz) IS
    'The mean price per kWh of a feed''s electricity tariffs over [p_start, p_end), weighted by time: per local day the bands of its kind (cluster.band_holds) by their length, each by the tariff formula with the area''s mean slot price; null where it has no price.';
