-- A feed's day in quarter hours, at its all-in price (the price curve, cluster.feed_prices):
-- what the "prices published" notification tells (notifications/rules.py), the same quarters
-- and prices as the plan endpoint's (billing/plans.py, docs/api.md#plan). Re-applied by every
-- `migrate`, after the bill's functions it reads.

-- The quarter hours [p_start, p_end) of a feed (steps of 900 s of UTC time from p_start, a
-- whole quarter), each with its price per kWh, weighted by time where a band or slot changes
-- inside it; null where some of it has no price. p_basis 'all_in': the household's price (the
-- price curve, cluster.feed_prices, of the local dates around the span); 'market': its power
-- tariffs' area prices alone. Each stretch of the curve is cut at the quarters it covers (a
-- quarter-hour slot covers one, a band of 8 hours 32): the work grows with stretches plus
-- quarters, not with their product as a join of each quarter with the curve did.
CREATE OR REPLACE FUNCTION cluster.quarter_prices(
    p_feed_id bigint, p_basis text, p_start timestamptz, p_end timestamptz
) RETURNS TABLE (start timestamptz, price double precision)
LANGUAGE sql STABLE AS $$
    WITH curve AS (
        SELECT c.start, c.finish, c.price
          FROM cluster.feed_prices(p_feed_id, 'power', (p_start AT TIME ZONE 'UTC')::date - 1,
                                   (p_end AT TIME ZONE 'UTC')::date + 1) c
         WHERE p_basis = 'all_in' AND c.start < p_end AND c.finish > p_start
        UNION ALL
        SELECT lower(s.slot * t.validity), upper(s.slot * t.validity), s.price
          FROM cluster.tariffs t
          JOIN cluster.prices s ON s.area = t.area AND s.slot && t.validity
         WHERE p_basis = 'market' AND t.feed_id = p_feed_id AND t.medium = 'power'
           AND t.area IS NOT NULL AND s.slot && tstzrange(p_start, p_end)
    ), cut AS (
        SELECT q.q, c.price,
               extract(epoch FROM least(c.finish, p_start + (q.q + 1) * interval '15 minutes')
                                  - greatest(c.start, p_start + q.q * interval '15 minutes'))
                   AS seconds
          FROM curve c
         CROSS JOIN LATERAL generate_series(
               greatest(floor(extract(epoch FROM c.start - p_start) / 900), 0)::integer,
               least(ceil(extract(epoch FROM c.finish - p_start) / 900),
                     extract(epoch FROM p_end - p_start) / 900)::integer - 1) q (q)
    )
    SELECT p_start + g.q * interval '15 minutes',
           CASE WHEN sum(c.seconds) = 900 THEN sum(c.price * c.seconds) / 900 END
      FROM generate_series(0, (extract(epoch FROM p_end - p_start) / 900)::integer - 1) g (q)
      LEFT JOIN cut c ON c.q = g.q
     GROUP BY g.q
     ORDER BY g.q
$$;
COMMENT ON FUNCTION cluster.quarter_prices(bigint, text, timestamptz, timestamptz) IS
    'A feed''s quarter hours from p_start to p_end with the price of each, all in or the market''s (time-weighted; null where not all of it has a price).';

-- Every quarter hour of a feed's local date (92 or 100 on a DST day: steps of 900 s of UTC
-- time from local midnight to the next) at its all-in price: the plan's quarters and prices.
CREATE OR REPLACE FUNCTION cluster.day_quarter_prices(p_feed_id bigint, p_day date)
RETURNS TABLE (start timestamptz, price double precision)
LANGUAGE sql STABLE AS $$
    SELECT q.start, q.price
      FROM cluster.feed_local_days(p_feed_id, p_day, p_day) d
     CROSS JOIN LATERAL cluster.quarter_prices(p_feed_id, 'all_in', d.start, d.finish) q
$$;
COMMENT ON FUNCTION cluster.day_quarter_prices(bigint, date) IS
    'The quarter hours of a feed''s local date with its all-in price of each (time-weighted; null where not all of it has a price).';

-- The cheapest run of p_quarters consecutive quarter hours of a feed's local date, all priced:
-- its start and end and its mean price (the earliest of equals); no row when the day has no
-- such run.
CREATE OR REPLACE FUNCTION cluster.cheapest_window(p_feed_id bigint, p_day date, p_quarters integer)
RETURNS TABLE (start timestamptz, finish timestamptz, price double precision)
LANGUAGE sql STABLE AS $$
    SELECT x.start, x.start + make_interval(mins => 15 * p_quarters), x.mean
      FROM (SELECT q.start,
                   avg(q.price) OVER w AS mean, count(q.price) OVER w AS priced
              FROM cluster.day_quarter_prices(p_feed_id, p_day) q
            WINDOW w AS (ORDER BY q.start ROWS BETWEEN CURRENT ROW AND p_quarters - 1 FOLLOWING)) x
     WHERE x.priced = p_quarters
     ORDER BY x.mean, x.start
     LIMIT 1
$$;
COMMENT ON FUNCTION cluster.cheapest_window(bigint, date, integer) IS
    'The cheapest run of p_quarters priced quarter hours of a feed''s local date: start, end, mean all-in price.';

-- The runs of quarter hours of a feed's local date whose all-in price is below zero, in time
-- order, each with its lowest price. Quarters are 900 s apart, so a run's quarters share
-- (their time / 900 - their rank among the negative ones).
CREATE OR REPLACE FUNCTION cluster.negative_windows(p_feed_id bigint, p_day date)
RETURNS TABLE (start timestamptz, finish timestamptz, lowest double precision)
LANGUAGE sql STABLE AS $$
    SELECT min(n.start), max(n.start) + interval '15 minutes', min(n.price)
      FROM (SELECT q.start, q.price,
                   extract(epoch FROM q.start) / 900 - row_number() OVER (ORDER BY q.start) AS run
              FROM cluster.day_quarter_prices(p_feed_id, p_day) q
             WHERE q.price < 0) n
     GROUP BY n.run
     ORDER BY 1
$$;
COMMENT ON FUNCTION cluster.negative_windows(bigint, date) IS
    'The runs of quarter hours of a feed''s local date priced below zero, all in: start, end, lowest price.';

-- Whether an area's prices cover [p_start, p_end) whole: its slots there add up to the span
-- (slots of one area never overlap).
CREATE OR REPLACE FUNCTION cluster.area_covers(p_area text, p_start timestamptz, p_end timestamptz)
RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT coalesce(sum(upper(p.slot * tstzrange(p_start, p_end))
                        - lower(p.slot * tstzrange(p_start, p_end))), interval '0')
           = p_end - p_start
      FROM cluster.prices p
     WHERE p.area = p_area AND p.slot && tstzrange(p_start, p_end)
$$;
COMMENT ON FUNCTION cluster.area_covers(text, timestamptz, timestamptz) IS
    'Whether an area''s price slots cover [p_start, p_end) without a gap.';
