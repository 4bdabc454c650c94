-- A feed's bill over local dates (docs/billing.md#the-bill), read from the daily rollups (real
-- time, as the data API's `resolution=day` reads them) and the tariff periods: a year's bill
-- reads a few hundred rows per stream, never a point. Re-applied by every `migrate`, after the
-- views it reads (cluster.channel_totals).

-- A feed's local midnight of a date: the date's start in the feed's time zone valid then.
CREATE OR REPLACE FUNCTION cluster.local_midnight(p_feed_id bigint, p_day date)
RETURNS TABLE (start timestamptz, timezone text) LANGUAGE sql STABLE AS $$
    SELECT p_day::timestamp AT TIME ZONE z.tz, z.tz
      FROM (SELECT coalesce(
                (SELECT c.timezone FROM cluster.feed_configs c
                  WHERE c.feed_id = p_feed_id
                    AND c.validity @> (p_day::timestamp AT TIME ZONE c.timezone)
                  ORDER BY lower(c.validity) DESC LIMIT 1),
                'UTC') AS tz) z
$$;
COMMENT ON FUNCTION cluster.local_midnight(bigint, date) IS
    'The instant a local date starts for a feed (midnight in its time zone valid then; UTC without one), and that zone.';

-- The local dates [p_from, p_to] of a feed, each with the instants it starts and ends (a DST day
-- lasts 23 or 25 hours). Each midnight is cluster.local_midnight's, found by one join of the
-- dates with the feed's few configurations in the same order (three look-ups per date, two for
-- its start and zone and one for its end, took 2 ms for a year), and a day ends where the next
-- starts. Named for what it is (cluster.bill_days before 0054): the bill, the overview, the
-- baseload, the price curve and the plans all read it.
CREATE OR REPLACE FUNCTION cluster.feed_local_days(p_feed_id bigint, p_from date, p_to date)
RETURNS TABLE (day date, start timestamptz, finish timestamptz, timezone text)
LANGUAGE sql STABLE AS $$
    WITH zones AS MATERIALIZED (
        SELECT c.timezone, c.validity FROM cluster.feed_configs c WHERE c.feed_id = p_feed_id
    ), midnights AS (
        SELECT DISTINCT ON (g.d) g.d, coalesce(z.timezone, 'UTC') AS tz
          FROM generate_series(p_from::timestamp, p_to::timestamp + interval '1 day',
                               interval '1 day') g (d)
          LEFT JOIN zones z ON z.validity @> (g.d AT TIME ZONE z.timezone)
         ORDER BY g.d, lower(z.validity) DESC
    )
    SELECT x.day, x.start, x.finish, x.tz
      FROM (SELECT m.d::date AS day, m.d AT TIME ZONE m.tz AS start,
                   lead(m.d AT TIME ZONE m.tz) OVER (ORDER BY m.d) AS finish, m.tz
              FROM midnights m) x
     WHERE x.day <= p_to
$$;
COMMENT ON FUNCTION cluster.feed_local_days(bigint, date, date) IS
    'A feed''s local dates from p_from to p_to (both inclusive) with the instants each starts and ends, and its zone.';

-- The media a bill has lines for (besides export), named once: the bill, the overview and the
-- overview's meter list (api/queries.py) all select by it, so a new medium reaches all three.
CREATE OR REPLACE FUNCTION cluster.billed_media() RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT ARRAY['power', 'gas', 'water', 'heat'] $$;
COMMENT ON FUNCTION cluster.billed_media() IS
    'The media a bill has lines for, besides export: power, gas, water, heat.';

-- What a line's stored quantity is divided by for its unit: Wh to kWh for
-- power and export; gas and water stay m³, heat kWh.
CREATE OR REPLACE FUNCTION cluster.bill_divisor(p_line text) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN p_line IN ('power', 'export') THEN 1000 ELSE 1 END::float8
$$;
COMMENT ON FUNCTION cluster.bill_divisor(text) IS
    'What a bill line''s stored quantity is divided by for its unit: 1000 (Wh to kWh) for power and export, else 1.';

-- The streams a bill counts (cluster.feed_bill) and the overview draws
-- (96_billing_overview.sql): each channel total of consumption or export (is_total), and each
-- stream ever configured as a sub-meter, with the money stream beside it (cost of consumption,
-- credit of export). Which of them counts on a day (its medium, whether it is a sub-meter then)
-- is its configuration's at that day's start (cluster.period_meters).
-- Named for what it is (cluster.bill_meters before 0054): the overview and the baseload read
-- it too.
CREATE OR REPLACE FUNCTION cluster.feed_metered_streams(p_feed_id bigint)
RETURNS TABLE (stream_id bigint, channel integer, quantity text, is_total boolean,
               money_id bigint)
LANGUAGE sql STABLE AS $$
    SELECT s.id, s.channel, s.quantity, t.stream_id IS NOT NULL, m.id
      FROM cluster.streams s
      LEFT JOIN cluster.channel_totals t ON t.stream_id = s.id
      LEFT JOIN cluster.streams m
        ON m.feed_id = s.feed_id AND m.type = 'processed' AND m.channel = s.channel
       AND m.idx IS NOT DISTINCT FROM s.idx AND m.register IS NOT DISTINCT FROM s.register
       AND m.combined = s.combined
       AND m.quantity = cluster.money_quantity(s.quantity)
     WHERE s.feed_id = p_feed_id AND s.type = 'processed'
       AND s.quantity IN ('consumption', 'export')
       AND (t.stream_id IS NOT NULL OR EXISTS (
                SELECT FROM cluster.stream_configs c WHERE c.stream_id = s.id AND c.submeter))
$$;
COMMENT ON FUNCTION cluster.feed_metered_streams(bigint) IS
    'The streams a feed''s bill counts (channel totals of consumption and export) or lists (sub-meters), each with its money stream: what cluster.feed_bill and cluster.feed_overview read.';

-- The first bucket of [p_start, p_finish) where stream p_stream has a point and its money
-- stream p_money none (null: none at all); null when every point has its money. PL/pgSQL, so
-- that the bill's statement does not plan its probes of every point table's chunks (inlined,
-- they tripled the planning of every bill, 3 to 9 ms, though it runs only for a bill with a
-- bucket without money).
CREATE OR REPLACE FUNCTION cluster.first_unpriced_bucket(
    p_stream bigint, p_money bigint, p_start timestamptz, p_finish timestamptz
) RETURNS timestamptz LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (SELECT min(c.ts)
              FROM cluster.stream_points(p_stream, p_start, p_finish) c
              LEFT JOIN cluster.stream_points(p_money, p_start, p_finish) m ON m.ts = c.ts
             WHERE m.ts IS NULL);
END $$;
COMMENT ON FUNCTION cluster.first_unpriced_bucket(bigint, bigint, timestamptz, timestamptz) IS
    'The first point time of a stream in [p_start, p_finish) that its money stream has no point at (null: none).';

-- What a main meter is: a consumption total configured `main` (export has none). Its medium's
-- line then adds it alone (cluster.meter_billed).
CREATE OR REPLACE FUNCTION cluster.is_main_meter(
    p_quantity text, p_is_total boolean, p_main boolean
) RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN p_is_total AND p_main AND p_quantity = 'consumption';
COMMENT ON FUNCTION cluster.is_main_meter(text, boolean, boolean) IS
    'Whether a metered stream is a main meter: a consumption total configured main.';

-- The main-meter rule, written once (docs/billing.md#the-bill): whether a metered stream is
-- added to its line, where p_has_main says whether its line's medium has a main meter then.
-- With one, only main meters are added and its other totals listed; without, every total not
-- marked as a sub-meter is added (main is only ever set on consumption totals: export has none).
-- The bill's days (cluster.period_meters) and the overview's power now read it.
CREATE OR REPLACE FUNCTION cluster.meter_billed(
    p_has_main boolean, p_is_total boolean, p_main boolean, p_submeter boolean
) RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN p_has_main THEN p_is_total AND p_main ELSE p_is_total AND NOT p_submeter END;
COMMENT ON FUNCTION cluster.meter_billed(boolean, boolean, boolean, boolean) IS
    'The main-meter rule: a stream is added to its line when it is a main meter of a medium that has one, else when it is a total not marked as a sub-meter.';

-- Which streams billing counts on which day of a period, and how (docs/billing.md#the-bill): per
-- metered stream (cluster.feed_metered_streams) and local date of [p_from, p_to] on which it is
-- configured as one of the billed media at the day's start, the line it belongs to that day (its
-- medium, or `export`) and how the bill counts it: billed (added to its line) or listed apart (a
-- sub-meter, or a total beside its medium's main meter). The main-meter rule, written once:
-- cluster.period_rows adds the days' rollups to these rows, and the baseload reads them without
-- the rollups. A row says nothing of data: a day without any has one too.
CREATE OR REPLACE FUNCTION cluster.period_meters(p_feed_id bigint, p_from date, p_to date)
RETURNS TABLE (line text, day date, start timestamptz, finish timestamptz, timezone text,
               stream_id bigint, money_id bigint, channel integer, is_total boolean,
               submeter boolean, main boolean, billed boolean, listed boolean,
               has_main boolean)
LANGUAGE sql STABLE AS $$
WITH days AS MATERIALIZED (
    SELECT * FROM cluster.feed_local_days(p_feed_id, p_from, p_to)
), metered AS MATERIALIZED (
    -- Channel totals and sub-meters, each with the stream of its money beside it.
    SELECT stream_id AS id, channel, quantity, is_total, money_id
      FROM cluster.feed_metered_streams(p_feed_id)
), configs AS MATERIALIZED (
    -- The metered streams' configurations, found by stream first: joined to the days, the
    -- planner looked them up by validity alone, and each day read every stream's
    -- configuration in the cluster (a year's bill among 1,000 feeds: 6.5 s).
    SELECT c.stream_id, c.medium, c.submeter, c.main, c.validity
      FROM metered x
      JOIN cluster.stream_configs c ON c.stream_id = x.id
     WHERE c.medium = ANY (cluster.billed_media())
), mains AS MATERIALIZED (
    -- When each medium has a main meter, by configuration: a main meter that sent nothing on a
    -- day still makes its medium's other totals sub-meters that day (the bill never switches to
    -- another meter's figure by itself). Its configurations' periods, mostly none: each day
    -- looks its own up in these few rows, not in a join of every day (a year without data
    -- then took 10 to 15 ms for the overview's months, at a load of 5).
    SELECT c.medium AS line, c.validity
      FROM configs c
      JOIN metered x ON x.id = c.stream_id
     WHERE cluster.is_main_meter(x.quantity, x.is_total, c.main)
), daily AS MATERIALIZED (
    SELECT x.id, x.money_id, x.channel, x.is_total, c.submeter, c.main, d.day, d.start,
           d.finish, d.timezone, l.line,
           EXISTS (SELECT FROM mains m WHERE m.line = l.line AND m.validity @> d.start)
               AS has_main
      FROM metered x
      JOIN configs c ON c.stream_id = x.id
      JOIN days d ON c.validity @> d.start
     CROSS JOIN LATERAL (SELECT CASE x.quantity WHEN 'export' THEN 'export' ELSE c.medium END
                                AS line) l
)
-- Added to its line (billed, cluster.meter_billed) or listed apart (listed): a sub-meter, or a
-- total beside its medium's main meter that day.
SELECT g.line, g.day, g.start, g.finish, g.timezone, g.id, g.money_id, g.channel, g.is_total,
       g.submeter, g.main,
       cluster.meter_billed(g.has_main, g.is_total, g.main, g.submeter),
       g.submeter OR (g.has_main AND g.is_total AND NOT g.main),
       g.has_main
  FROM daily g
$$;
COMMENT ON FUNCTION cluster.period_meters(bigint, date, date) IS
    'Per metered stream and local date of [p_from, p_to] configured as a billed medium at the day''s start: its line and whether the bill adds it (billed: the main-meter rule) or lists it apart; no data read.';

-- The streams billing reads for a feed's metered streams (cluster.feed_metered_streams): each
-- metered stream (money false) and its money stream (money true) as source, with whether the
-- engine has work queued for the source (cluster.stale_rollups: then a reader answers its
-- rollups in real time). cluster.period_rows reads their days, cluster.period_hours their
-- hours.
CREATE OR REPLACE FUNCTION cluster.feed_metered_sources(p_feed_id bigint)
RETURNS TABLE (id bigint, source bigint, money boolean, stale boolean)
LANGUAGE sql STABLE AS $$
    WITH metered AS MATERIALIZED (
        SELECT m.stream_id, m.money_id FROM cluster.feed_metered_streams(p_feed_id) m
    )
    SELECT x.id, x.source, x.money,
           EXISTS (SELECT FROM cluster.stale_rollups s WHERE s.stream_id = x.source)
      FROM (SELECT stream_id, stream_id, false FROM metered
            UNION ALL
            SELECT stream_id, money_id, true FROM metered WHERE money_id IS NOT NULL)
           AS x (id, source, money)
$$;
COMMENT ON FUNCTION cluster.feed_metered_sources(bigint) IS
    'A feed''s metered streams and their money streams as the sources billing reads (money: the money stream), each with whether its rollups are stale (cluster.stale_rollups).';

-- Billing's one reading of a period (issue 60, docs/billing.md#the-bill): per metered stream
-- and local date of [p_from, p_to] with data, the line it belongs to that day and how the bill
-- counts it (cluster.period_meters: billed, listed), its quantity (Wh, m³, kWh as stored) and
-- its money stream's amount from the daily rollups (real time while cluster.stale_rollups has
-- the stream), and whether some bucket lacks its money (short). The bill (cluster.feed_bill),
-- what-if (98_billing_what_if.sql) and the overview (96_billing_overview.sql) add these rows
-- up; none restates the rules. Each CTE's planner notes are the bill's, which it was tuned for.
CREATE OR REPLACE FUNCTION cluster.period_rows(p_feed_id bigint, p_from date, p_to date)
RETURNS TABLE (line text, day date, start timestamptz, finish timestamptz, stream_id bigint,
               money_id bigint, channel integer, is_total boolean, submeter boolean,
               main boolean, quantity double precision, amount double precision,
               points bigint, short boolean, billed boolean, listed boolean, has_main boolean,
               timezone text)
LANGUAGE sql STABLE AS $$
WITH meters AS MATERIALIZED (
    SELECT * FROM cluster.period_meters(p_feed_id, p_from, p_to)
), span AS MATERIALIZED (
    -- The days' rollups are looked up with a day of margin either side: a day's start is then
    -- matched by its date.
    SELECT min(start) - interval '1 day' AS lo, max(start) + interval '1 day' AS hi FROM meters
), sources AS MATERIALIZED (
    -- The streams read (cluster.feed_metered_sources; stale: its days are read in real time).
    SELECT * FROM cluster.feed_metered_sources(p_feed_id)
), rolled AS MATERIALIZED (
    -- Per metered stream and day, its day and its money stream's day side by side: grouped,
    -- not joined (a join of the two planned as a nested loop over ~5 estimated rows a stream,
    -- and a year's bill compared 1,095 days with 2,190 each: 230 ms). A stream has one row a
    -- day, so max() is that row's value. With nothing queued, cluster.realtime_days reads the
    -- daily rollups alone: read here directly, without a PL/pgSQL call a stream.
    SELECT x.id AS stream_id, r.day,
           max(r.total) FILTER (WHERE NOT x.money) AS total,
           max(r.points) FILTER (WHERE NOT x.money) AS points,
           max(r.total) FILTER (WHERE x.money) AS money_total,
           max(r.points) FILTER (WHERE x.money) AS money_points
      FROM sources x
     CROSS JOIN LATERAL (
           SELECT d.day, d.total, d.points
             FROM cluster.daily_rollups d
            WHERE NOT x.stale AND d.stream_id = x.source
              AND d.start >= (SELECT lo FROM span) AND d.start <= (SELECT hi FROM span)
           UNION ALL
           SELECT t.day, t.total, t.points
             FROM cluster.realtime_days(x.source, (SELECT lo FROM span), (SELECT hi FROM span)) t
            WHERE x.stale) r
     WHERE r.day BETWEEN p_from AND p_to
     GROUP BY x.id, r.day
    HAVING bool_or(NOT x.money)
)
SELECT m.line, m.day, m.start, m.finish, m.stream_id, m.money_id, m.channel, m.is_total,
       m.submeter, m.main, q.total, coalesce(q.money_total, 0), q.points,
       coalesce(q.money_points, 0) < q.points, m.billed, m.listed, m.has_main, m.timezone
  FROM meters m
  JOIN rolled q ON q.stream_id = m.stream_id AND q.day = m.day
$$;
COMMENT ON FUNCTION cluster.period_rows(bigint, date, date) IS
    'Billing''s one reading of a period: per metered stream (channel total or sub-meter) and local date of [p_from, p_to], its line, quantity, money and points of the daily rollups (real time), whether a bucket lacks money, and whether the bill adds it (billed: the main-meter rule) or lists it apart.';

-- The same reading per local hour, for what is drawn per hour (the overview's day): per stream
-- and local day of cluster.period_meters (its line, billed and listed: the configuration at the
-- day's start and the main-meter rule), that day's hours of the hourly rollups (real time while
-- cluster.stale_rollups has the stream), its money stream's hours beside them. An hour is judged
-- as its day is, so that a day's hours add up to its day and to the bill. An hour without data
-- has no row.
CREATE OR REPLACE FUNCTION cluster.period_hours(p_feed_id bigint, p_from date, p_to date)
RETURNS TABLE (line text, day date, hour timestamptz, stream_id bigint, billed boolean,
               listed boolean, quantity double precision, amount double precision,
               points bigint)
LANGUAGE sql STABLE AS $$
WITH days AS MATERIALIZED (
    SELECT p.line, p.day, p.start, p.finish, p.stream_id, p.money_id, p.billed, p.listed
      FROM cluster.period_meters(p_feed_id, p_from, p_to) p
), span AS MATERIALIZED (
    SELECT min(start) AS lo, max(finish) AS hi FROM days
), sources AS MATERIALIZED (
    -- Each stream and its money stream, as cluster.period_rows reads them.
    SELECT * FROM cluster.feed_metered_sources(p_feed_id)
), rolled AS MATERIALIZED (
    -- Per stream and hour, its value and its money side by side: grouped, one row each, as
    -- cluster.period_rows groups its days.
    SELECT x.id AS stream_id, r.hour,
           max(r.total) FILTER (WHERE NOT x.money) AS total,
           max(r.points) FILTER (WHERE NOT x.money) AS points,
           max(r.total) FILTER (WHERE x.money) AS money_total
      FROM sources x
     CROSS JOIN LATERAL (
           SELECT h.hour, h.total, h.points::bigint AS points
             FROM cluster.hourly_rollups h
            WHERE NOT x.stale AND h.stream_id = x.source
              AND h.hour >= (SELECT lo FROM span) AND h.hour < (SELECT hi FROM span)
           UNION ALL
           SELECT h.hour, h.total, h.points
             FROM cluster.realtime_hours(x.source, (SELECT lo FROM span),
                                         (SELECT hi FROM span) - interval '1 microsecond') h
            WHERE x.stale) r
     GROUP BY x.id, r.hour
    HAVING bool_or(NOT x.money)
)
SELECT d.line, d.day, q.hour, d.stream_id, d.billed, d.listed, q.total,
       coalesce(q.money_total, 0), q.points
  FROM rolled q
  JOIN days d ON d.stream_id = q.stream_id AND q.hour >= d.start AND q.hour < d.finish
$$;
COMMENT ON FUNCTION cluster.period_hours(bigint, date, date) IS
    'Billing''s reading of a period per local hour: each stream-day of cluster.period_meters as its hours of the hourly rollups (real time), with its money, judged as its day (line, billed, listed).';

-- A tariff period's standing charge for one local date, after VAT: a charge per day once, a
-- charge per month by 1 / the days of the date's month. The bill's charges and what-if's
-- contracts both price a day by it. The month is truncated as a timestamp: on a timestamptz (a
-- date's default cast) it would depend on the session's zone, the planner would not inline it,
-- and each call cost what-if's year of days 0.1 ms.
CREATE OR REPLACE FUNCTION cluster.standing_share(
    p_standing double precision, p_vat double precision, p_per text, p_day date
) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT p_standing * (1 + p_vat / 100)
           / CASE p_per WHEN 'month' THEN extract(day FROM date_trunc('month', p_day::timestamp)
                                                           + interval '1 month - 1 day')
                        ELSE 1 END
$$;
COMMENT ON FUNCTION cluster.standing_share(double precision, double precision, text, date) IS
    'A standing charge''s part for one local date after VAT: the whole per day, 1 / the month''s days per month.';

-- Per medium and local date of [p_from, p_to], the feed's tariff period holding the day's
-- start: its charge once the day has begun at p_now (cluster.standing_share), its VAT rate and
-- gas's kWh per m³, for the day's amount and quantity. What the bill charges, and what-if's
-- current contract.
CREATE OR REPLACE FUNCTION cluster.period_charges(
    p_feed_id bigint, p_from date, p_to date, p_now timestamptz
) RETURNS TABLE (line text, day date, finish timestamptz, vat double precision,
                 kwh_per_m3 double precision, standing double precision)
LANGUAGE sql STABLE AS $$
    SELECT t.medium, d.day, d.finish, t.vat, t.kwh_per_m3,
           CASE WHEN d.start <= p_now
                THEN cluster.standing_share(t.standing, t.vat, t.standing_per, d.day)
                ELSE 0 END
      FROM cluster.feed_local_days(p_feed_id, p_from, p_to) d
      JOIN cluster.tariffs t ON t.feed_id = p_feed_id AND t.validity @> d.start
$$;
COMMENT ON FUNCTION cluster.period_charges(bigint, date, date, timestamptz) IS
    'Per tariff medium and local date of [p_from, p_to]: the standing charge after VAT once the day has begun at p_now, the VAT rate and kWh per m³ of the tariff period holding the day''s start.';

-- The bill's lines (stream_id null: one per medium of consumption, and `export`) and its
-- sub-meters (stream_id set), over the local dates [p_from, p_to] as of p_now:
-- * quantity: the days' consumption (export) of the feed's channel totals, in kWh for power and
--   export, m³ for gas and water; a stream counts under the medium configured at a day's start,
--   and not at all on a day it is configured as a sub-meter (then it is listed apart); on a day
--   a medium has a main meter, only main meters count and its other totals are listed apart;
-- * amount: their cost streams' (credit streams') days, as the data API's days give them;
-- * standing: each day that has begun is charged the standing charge of the tariff period of
--   the line's medium that holds the day's start, with its VAT: a charge per day once, a
--   charge per month by 1 / the days of the day's month (a whole month: once; a part of one:
--   its days covered / its days);
-- * vat: the VAT included in the line's total: each day's amount and charge times vat / (100 +
--   vat) at the VAT rate of the tariff period holding the day's start (prices after VAT,
--   cluster.tariff_price; export's credit counts against its charge, as in the total);
-- * kwh (gas): each day's m³ times the kWh per m³ of the tariff period holding its start; null
--   where no day of the range had one;
-- * settled: what the days already over come to (amount, negative for export, plus standing):
--   the base of the projection;
-- * unpriced: some day had a tariff of the line's medium in force and a bucket of the line's
--   consumption (export) without its cost (credit) point: a slot whose price has not arrived,
--   a year whose holidays are not known, a part of the day before the tariff began, or
--   anything else that left money out; unpriced_from: the first such bucket (the bill's
--   warning names it);
-- * shared_streams, shared_channels: the totals a line adds together on days its medium has no
--   main meter, when it adds more than one (one supply metered twice counts twice: the bill
--   warns), by channel; null when it adds one at most.
-- A medium with a tariff in the range but nothing measured has its line, with its charges.
CREATE OR REPLACE FUNCTION cluster.feed_bill(
    p_feed_id bigint, p_from date, p_to date, p_now timestamptz
) RETURNS TABLE (medium text, stream_id bigint, title text, quantity double precision, unit text,
                 amount double precision, standing double precision, settled double precision,
                 unpriced boolean, unpriced_from timestamptz, vat double precision,
                 kwh double precision, shared_streams bigint[], shared_channels integer[])
LANGUAGE sql STABLE AS $$
WITH days AS MATERIALIZED (
    SELECT * FROM cluster.feed_local_days(p_feed_id, p_from, p_to)
), judged AS MATERIALIZED (
    -- Per stream and day: added to its line (billed) or listed apart (listed), by billing's
    -- one reading of the period.
    SELECT p.line, p.day, p.start, p.finish, p.stream_id AS id, p.money_id, p.channel,
           p.quantity, p.amount, p.short, p.billed, p.listed, p.has_main
      FROM cluster.period_rows(p_feed_id, p_from, p_to) p
), first_unpriced AS (
    -- Per line, the first bucket without its money of its first short stream-day (fewer money
    -- points than points) on a day a tariff of the line was in force: read from that one
    -- day's points. Asked only for a line found unpriced below (the CASE evaluates it then
    -- alone): a bill whose buckets all have their money pays nothing for it.
    SELECT u.line, cluster.first_unpriced_bucket(u.id, u.money_id, u.start, u.finish) AS bucket
      FROM (SELECT DISTINCT ON (g.line) g.line, g.id, g.money_id, g.start, g.finish
              FROM judged g
             WHERE g.billed AND g.short
               AND EXISTS (SELECT FROM cluster.tariffs t
                            WHERE t.feed_id = p_feed_id AND t.medium = g.line
                              AND t.validity && tstzrange(g.start, g.finish))
             ORDER BY g.line, g.day, g.id) u
), measured AS (
    SELECT g.line, g.day, sum(g.quantity) AS quantity, sum(g.amount) AS amount,
           -- Several totals added on a day without a main meter: which (the bill's warning).
           CASE WHEN count(*) > 1 AND NOT bool_or(g.has_main)
                THEN array_agg(g.id) END AS shared_ids,
           CASE WHEN count(*) > 1 AND NOT bool_or(g.has_main)
                THEN array_agg(g.channel) END AS shared_channels,
           -- Any tariff of the line: a bucket without money is never one the bill can call
           -- complete (a fixed tariff's weekday bands once priced no weekday bucket, and the
           -- bill said complete, 0.00). Short is almost always false: the engine writes a
           -- bucket's money with it, so the tariffs are rarely looked at.
           bool_or(g.short AND EXISTS (
               SELECT FROM cluster.tariffs t
                WHERE t.feed_id = p_feed_id AND t.medium = g.line
                  AND t.validity && tstzrange(g.start, g.finish))) AS unpriced
      FROM judged g
     WHERE g.billed
     GROUP BY g.line, g.day
), shared AS (
    -- The totals added together on days without a main meter, over the range, by channel:
    -- collected by the days' groups above, not joined back to the streams' days (estimated
    -- at a row each, such a join ran as a nested loop: 195 ms for a year of five totals).
    SELECT x.line, array_agg(x.id ORDER BY x.channel, x.id) AS streams,
           array_agg(x.channel ORDER BY x.channel, x.id) AS channels
      FROM (SELECT DISTINCT m.line, u.id, u.channel
              FROM measured m
             CROSS JOIN LATERAL unnest(m.shared_ids, m.shared_channels) AS u (id, channel)
             WHERE m.shared_ids IS NOT NULL) x
     GROUP BY x.line
), charged AS (
    SELECT c.line, c.day, c.vat, c.kwh_per_m3, c.standing
      FROM cluster.period_charges(p_feed_id, p_from, p_to, p_now) c
), tariffed AS (
    SELECT DISTINCT t.medium AS line
      FROM cluster.tariffs t
     WHERE t.feed_id = p_feed_id
       AND t.validity && tstzrange((SELECT min(start) FROM days), (SELECT max(finish) FROM days))
), per_day AS (
    SELECT coalesce(m.line, c.line) AS line, coalesce(m.day, c.day) AS day,
           coalesce(m.quantity, 0) AS quantity, coalesce(m.amount, 0) AS amount,
           coalesce(c.standing, 0) AS standing, coalesce(m.unpriced, false) AS unpriced,
           coalesce(c.vat / (100 + c.vat), 0) AS vat_share, m.quantity * c.kwh_per_m3 AS kwh
      FROM measured m
      FULL JOIN charged c ON c.line = m.line AND c.day = m.day
    UNION ALL
    SELECT t.line, NULL, 0, 0, 0, false, 0, NULL FROM tariffed t
)
SELECT p.line, NULL::bigint, NULL::text,
       sum(p.quantity) / cluster.bill_divisor(p.line),
       CASE WHEN p.line IN ('power', 'export', 'heat') THEN 'kWh' ELSE 'm³' END,
       sum(p.amount), sum(p.standing),
       coalesce(sum(p.standing + CASE p.line WHEN 'export' THEN -p.amount ELSE p.amount END)
                    FILTER (WHERE d.finish <= p_now), 0),
       bool_or(p.unpriced),
       CASE WHEN bool_or(p.unpriced)
            THEN (SELECT u.bucket FROM first_unpriced u WHERE u.line = p.line) END,
       coalesce(sum((p.standing + CASE p.line WHEN 'export' THEN -p.amount ELSE p.amount END)
                    * p.vat_share), 0),
       sum(p.kwh),
       (SELECT x.streams FROM shared x WHERE x.line = p.line),
       (SELECT x.channels FROM shared x WHERE x.line = p.line)
  FROM per_day p
  LEFT JOIN days d ON d.day = p.day
 GROUP BY p.line
UNION ALL
SELECT g.line, g.id, (SELECT c.title FROM cluster.stream_configs c
                       WHERE c.stream_id = g.id AND c.validity @> max(g.start)),
       sum(g.quantity) / cluster.bill_divisor(g.line),
       CASE WHEN g.line IN ('power', 'export', 'heat') THEN 'kWh' ELSE 'm³' END,
       sum(g.amount), 0, NULL, false, NULL, NULL, NULL, NULL, NULL
  FROM judged g
 WHERE g.listed
 GROUP BY g.line, g.id
$$;
COMMENT ON FUNCTION cluster.feed_bill(bigint, date, date, timestamptz) IS
    'A feed''s bill over its local dates [p_from, p_to] as of p_now: a row per medium (stream_id null: quantity in kWh or m³, energy cost or export credit, standing charges after VAT, what the days already over settled, whether some consumption has no money and its first such bucket, the VAT included, gas in kWh, the totals it adds together without a main meter when several) and per sub-meter (stream_id set: marked so, or a total beside its medium''s main meter). docs/billing.md#the-bill.';

-- What a feed pays (earns, for export) per kWh or m³ over its local dates [p_from, p_to]: a row
-- per stretch of one price, in time order. A fixed tariff's stretches are its bands each day
-- (those of the day's kind: weekday, or weekend with the tariff's holidays); a dynamic
-- tariff's are its bands cut at its area's slots, and a slot without a price is a gap; each
-- priced by cluster.tariff_price, as the engine prices a bucket. Times without a tariff, or
-- in a year whose holidays are not known, are gaps too. What the page draws as today's and
-- tomorrow's price curve.
CREATE OR REPLACE FUNCTION cluster.feed_prices(
    p_feed_id bigint, p_medium text, p_from date, p_to date
) RETURNS TABLE (start timestamptz, finish timestamptz, price double precision)
LANGUAGE sql STABLE AS $$
WITH pieces AS (
    SELECT t.area, t.factor, t.vat, t.floor, t.cap, b.price,
           tstzrange((d.day + b.starts) AT TIME ZONE d.timezone,
                     (d.day + b.ends) AT TIME ZONE d.timezone, '[)')
               * tstzrange(d.start, d.finish, '[)') * t.validity
               * cluster.holiday_span(t.holiday_years, d.timezone) AS span
      FROM cluster.feed_local_days(p_feed_id, p_from, p_to) d
      JOIN cluster.tariffs t
        ON t.feed_id = p_feed_id AND t.medium = p_medium
       AND t.validity && tstzrange(d.start, d.finish, '[)')
      JOIN cluster.tariff_bands b
        ON b.tariff_id = t.id
       AND cluster.band_holds(b.days, d.day, ARRAY(SELECT h.day FROM cluster.tariff_holidays h
                                                    WHERE h.tariff_id = t.id AND h.day = d.day))
), priced AS (
    SELECT p.span, cluster.tariff_price(p.factor, 0, p.price, p.vat, p.floor, p.cap) AS price
      FROM pieces p WHERE p.area IS NULL
    UNION ALL
    SELECT p.span * s.slot, cluster.tariff_price(p.factor, s.price, p.price, p.vat, p.floor, p.cap)
      FROM pieces p
      JOIN cluster.prices s ON s.area = p.area AND s.slot && p.span
     WHERE p.area IS NOT NULL
)
SELECT lower(span), upper(span), price FROM priced WHERE NOT isempty(span) ORDER BY lower(span)
$$;
COMMENT ON FUNCTION cluster.feed_prices(bigint, text, date, date) IS
    'A feed''s price per kWh or m³ of a medium (export: earned) over its local dates [p_from, p_to]: [start, finish) stretches of one price each, in order; gaps where no tariff or no market price holds.';
