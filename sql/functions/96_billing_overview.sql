-- A feed's overview (docs/api.md#overview): what a dashboard draws of a day, week, month or year,
-- beside the bill of the same days (cluster.feed_bill). Billing's: its figures add up billing's
-- one reading of the period (cluster.period_rows, period_hours and period_meters,
-- 95_billing_bills.sql), which says which streams count on which day (the bill's sources and
-- main-meter rule, stale rollups read in real time); nothing here restates them. Never a point, whatever the range.
-- Re-applied by every `migrate`, after the bill's file whose functions it calls.

-- A feed's overview per bucket and stream over its local dates [p_from, p_to]: per local hour
-- (p_unit 'hour'), local day ('day') or local month ('month', from the first's midnight):
-- * line: the bill's line the stream counts in that day (power, gas, water, heat, export), and
--   counted: whether the bill adds it to the line (false: a sub-meter, or a total beside its
--   medium's main meter, listed apart);
-- * quantity: its consumption or export in the line's unit (kWh, m³); money: its cost, or minus
--   its credit for export; points: how many 90 s buckets hold its value;
-- * covered: the seconds of the bucket with data, the same on each of the bucket's rows: per
--   hour or day, the most 90 s buckets any counted stream holds, times 90 s.
-- A bucket without data has no row: it is absent, never 0. A month is the sum of its days, so
-- its rows add up to the bill of its days (energy and credit; charges are the bill's own), and
-- an hour counts as its day does.
CREATE OR REPLACE FUNCTION cluster.feed_overview(
    p_feed_id bigint, p_from date, p_to date, p_unit text
) RETURNS TABLE (start timestamptz, stream_id bigint, line text, counted boolean,
                 quantity double precision, points bigint, money double precision,
                 covered double precision)
LANGUAGE sql STABLE AS $$
WITH rows AS (
    -- Billing's reading per stream and local day, or per hour for 'hour' (the branch not asked
    -- is never run: its condition is the call's constant).
    SELECT p.line, p.day, p.start, p.stream_id, p.billed, p.quantity, p.amount, p.points
      FROM cluster.period_rows(p_feed_id, p_from, p_to) p
     WHERE p_unit <> 'hour'
    UNION ALL
    SELECT h.line, h.day, h.hour, h.stream_id, h.billed, h.quantity, h.amount, h.points
      FROM cluster.period_hours(p_feed_id, p_from, p_to) h
     WHERE p_unit = 'hour'
), months AS (
    -- A month starts at the local midnight of its first day (the period's days hold it: a
    -- year's overview asks from the first of January).
    SELECT date_trunc('month', d.day)::date AS month, min(d.start) AS start
      FROM cluster.feed_local_days(p_feed_id, p_from, p_to) d GROUP BY 1
), units AS MATERIALIZED (
    -- Per hour (or day) and stream, in the bill's units, with the bucket it falls in.
    SELECT CASE WHEN p_unit = 'month' THEN m.start ELSE r.start END AS bucket,
           r.start, r.stream_id, r.line, r.billed AS counted,
           r.quantity / cluster.bill_divisor(r.line) AS quantity, r.points,
           r.amount * CASE r.line WHEN 'export' THEN -1 ELSE 1 END AS money
      FROM rows r
      LEFT JOIN months m ON m.month = date_trunc('month', r.day)::date
), covered AS (
    SELECT u.bucket, sum(u.most) * 90 AS seconds
      FROM (SELECT bucket, start, max(points) FILTER (WHERE counted) AS most
              FROM units GROUP BY bucket, start) u
     GROUP BY u.bucket
)
-- A month's days are added in time order: in the order of the plan, the last digit of a sum
-- of 30 days changed with the plan (one January answered 208.031108975 kWh from psql and
-- 208.03110897499997 through the data API).
SELECT u.bucket, u.stream_id, min(u.line), bool_and(u.counted), sum(u.quantity ORDER BY u.start),
       sum(u.points)::bigint, sum(u.money ORDER BY u.start), min(v.seconds)
  FROM units u
  JOIN covered v ON v.bucket = u.bucket
 WHERE u.bucket IS NOT NULL
 GROUP BY u.bucket, u.stream_id
 ORDER BY u.bucket, u.stream_id
$$;
COMMENT ON FUNCTION cluster.feed_overview(bigint, date, date, text) IS
    'A feed''s consumption, export and money per local hour, day or month (p_unit) of its local dates [p_from, p_to], per stream billing reads (counted false: listed apart), with the seconds of each bucket that hold data; from cluster.period_rows and period_hours. docs/api.md#overview.';

-- The feed's baseload over its local dates [p_from, p_to]: the 5th percentile of its electricity
-- use in the night (local 00:00 to 05:00, docs/decisions.md), in W. Each night hour's power is
-- the mean over the 90 s buckets it holds data for (total Wh x 40 / buckets), summed over the
-- electricity totals the bill adds that day (cluster.period_meters: beside a main meter, the
-- main meters alone). The night hours are made from those stream-days (4 or 6 on a DST night)
-- and looked up in the hourly rollups by key (real time while the stream's rollups are stale),
-- so a year reads its 1,825 night hours a stream: scanning its 8,760 hours with a zone and a
-- configuration looked up for each took 125 ms on the benchmarks' household, the probes a
-- tenth of that. Null without a night hour of data.
-- The night hours are a day's first eight hours cut at 05:00 (a night lasts 7 hours at most,
-- after a shift of two): a series of constants, whose length the planner knows. A series
-- between two instants is estimated at 1,000 rows, a year's nights at 67,000 hours, and the
-- plan's cost passed JIT's threshold: 1.5 s a call on the benchmarks' household, nearly all of
-- it compiling.
-- PL/pgSQL, so that its plan is kept for the session: as a SQL function its statement, which
-- holds cluster.period_meters', was planned at every call (a year's baseload took 11.0 ms at
-- best on the benchmarks' household, 8.2 ms with the plan kept, at a load of 4).
CREATE OR REPLACE FUNCTION cluster.feed_baseload(p_feed_id bigint, p_from date, p_to date)
RETURNS double precision LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (
WITH counted AS MATERIALIZED (
    SELECT p.stream_id, p.day, p.start, p.timezone
      FROM cluster.period_meters(p_feed_id, p_from, p_to) p
     WHERE p.billed AND p.line = 'power'
), nights AS MATERIALIZED (
    SELECT c.stream_id, h.hour
      FROM counted c
     CROSS JOIN LATERAL generate_series(0, 7) k
     CROSS JOIN LATERAL (SELECT c.start + k * interval '1 hour' AS hour) h
     WHERE h.hour < (c.day + time '05:00') AT TIME ZONE c.timezone
), totals AS MATERIALIZED (
    SELECT t.stream_id,
           EXISTS (SELECT FROM cluster.stale_rollups s WHERE s.stream_id = t.stream_id) AS stale
      FROM (SELECT DISTINCT c.stream_id FROM counted c) t
), hours AS (
    SELECT n.hour, r.total, r.points::bigint AS points
      FROM totals x
      JOIN nights n ON n.stream_id = x.stream_id
     CROSS JOIN LATERAL (
           SELECT h.total, h.points FROM cluster.hourly_rollups h
            WHERE h.stream_id = x.stream_id AND h.hour = n.hour) r
     WHERE NOT x.stale
    UNION ALL
    SELECT r.hour, r.total, r.points
      FROM totals x
     CROSS JOIN LATERAL cluster.realtime_hours(
           x.stream_id, (SELECT min(hour) FROM nights), (SELECT max(hour) FROM nights)) r
      JOIN nights n ON n.stream_id = x.stream_id AND n.hour = r.hour
     WHERE x.stale
), night AS (
    SELECT h.hour, sum(h.total * 40 / h.points) AS watts FROM hours h GROUP BY h.hour
)
SELECT percentile_cont(0.05) WITHIN GROUP (ORDER BY watts) FROM night);
END $$;
COMMENT ON FUNCTION cluster.feed_baseload(bigint, date, date) IS
    'A feed''s always-on electricity use over its local dates [p_from, p_to]: the 5th percentile of its night hours'' mean power (local 00:00-05:00) of the electricity totals the bill adds, in W; null without data. docs/decisions.md.';

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
