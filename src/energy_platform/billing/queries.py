"""Named SQL of billing: the tariff and price setters behind the admin commands
(sql/functions/19_billing_tariffs_and_prices.sql), the bill and price curve of the data API
(sql/functions/95_billing_bills.sql) and the overview (sql/functions/96_billing_overview.sql)."""

TARIFF_FEED = "SELECT 1 FROM cluster.feeds WHERE id = $1"
SET_TARIFF = """
SELECT cluster.set_tariff($1, $2, $3, $4::time[], $5::float8[], $6, $7, $8, $9::text[], $10,
                          $11, $12, $13, $14, $15, $16::date[], $17::text[], $18::int4range)"""
TARIFFS_OF_FEED = """
SELECT t.id, medium, lower(validity) AS valid_from, upper(validity) AS valid_to, area, factor,
       standing, vat, floor, cap, standing_per, holidays, holiday_years, kwh_per_m3, b.days,
       to_char(starts, 'HH24:MI') AS starts, to_char(ends, 'HH24:MI') AS ends, price
  FROM cluster.tariffs t JOIN cluster.tariff_bands b ON b.tariff_id = t.id
 WHERE t.feed_id = $1
 ORDER BY medium, lower(validity) NULLS FIRST, b.days, starts"""
SET_PRICES = "SELECT cluster.set_prices($1, $2::tstzrange[], $3::float8[])"
# An import reads the lengths of the slots its rows replace, then sets its prices: the area's
# row lock first (set_prices takes it too), so that no other import changes them in between.
LOCK_AREA = "SELECT 1 FROM cluster.price_areas WHERE area = $1 FOR UPDATE"
# Joined, not `= ANY`: a year's file asks 35,136 starts, each compared with every slot else.
REPLACED_SLOTS = """
SELECT lower(p.slot) AS start, upper(p.slot) - lower(p.slot) AS length
  FROM cluster.prices p
  JOIN unnest($2::timestamptz[]) AS s (start) ON lower(p.slot) = s.start
 WHERE p.area = $1 AND p.slot && tstzrange($3, $4, '[]')"""
AREA_EXISTS = "SELECT 1 FROM cluster.price_areas WHERE area = $1"
PRICES_OF_AREA = """
SELECT lower(slot) AS start, upper(slot) AS "end", price
  FROM cluster.prices
 WHERE area = $1 AND slot && tstzrange($2, $3, '[)')
 ORDER BY lower(slot)"""

# The bill (http.py) and the overview (overview.py): their local dates (the zone, how many days
# and how many are over, the instants the range starts and ends, now), and the bill's lines and
# sub-meters as of now(), read in one snapshot (sql/functions/95_billing_bills.sql).
BILL_DAYS = """
SELECT (array_agg(timezone ORDER BY day))[1] AS timezone, count(*) AS days,
       count(*) FILTER (WHERE finish <= now()) AS over,
       min(start) AS start, max(finish) AS finish, now() AS now
  FROM cluster.feed_local_days($1, $2, $3)"""

FEED_BILL = """
SELECT medium, stream_id, title, quantity, unit, amount, standing, settled, unpriced,
       unpriced_from, vat, kwh, shared_streams, shared_channels
  FROM cluster.feed_bill($1, $2, $3, now())"""

FEED_PRICES = """
SELECT start, finish, price FROM cluster.feed_prices($1, $4, $2, $3)"""

# The plan (plans.py), in one round trip: feed $1 if user $2 (admin: $3) sees it, else no row;
# its time zone at the window's first UTC date; the price of each quarter hour of [$5, $6) on
# basis $4 ('all_in' or 'market', cluster.quarter_prices), null where not all of it is priced.
PLAN_QUARTERS = """
SELECT f.id, z.timezone,
       ARRAY(SELECT q.price FROM cluster.quarter_prices(f.id, $4, $5, $6) q ORDER BY q.start)
           AS prices
  FROM cluster.user_feeds($2, $3) f
 CROSS JOIN cluster.local_midnight(f.id, ($5 AT TIME ZONE 'UTC')::date) z
 WHERE f.id = $1"""

# The catalogue of contracts (contracts.py, admin.py, http.py).
ADD_CONTRACT = """
INSERT INTO cluster.contracts (name, contract) VALUES ($1, $2::jsonb)
ON CONFLICT (name) DO UPDATE SET contract = EXCLUDED.contract, added_at = now()"""
REMOVE_CONTRACT = "DELETE FROM cluster.contracts WHERE name = $1 RETURNING name"
CONTRACTS = "SELECT name, contract::text AS contract, added_at FROM cluster.contracts ORDER BY name"
KNOWN_AREAS = "SELECT area FROM cluster.price_areas WHERE area = ANY ($1::text[])"
CONTRACTS_NAMED = """
SELECT name, contract::text AS contract FROM cluster.contracts WHERE name = ANY ($1::text[])"""

# What-if (what_if.py, sql/functions/98_billing_what_if.sql): the feed's zone today (for the
# default months), and the current contract and each asked ($3) month by month as of now().
FEED_ZONE_TODAY = (
    "SELECT timezone FROM cluster.local_midnight($1, (now() AT TIME ZONE 'UTC')::date)"
)
WHAT_IFS = """
SELECT contract, month, quantity, export, energy, standing, credit, vat, total, average_price,
       coverage, complete, market_average_price, load_shape_factor
  FROM cluster.what_ifs($1, $4, $5::jsonb[], $2, $3, now())"""

# The overview (overview.py; sql/functions/96_billing_overview.sql). Every statement runs in one
# read-only snapshot, so a day ending meanwhile is over in all or in none.
# Feed $1 if user $2 (admin: $3) sees it (else no row), in one round trip with the channels
# an overview of it would read (EP_API_OVERVIEW_MAX_CHANNELS bounds them; the streams'
# (feed_id, channel, ...) index answers without a stream row) and its local date now, in its
# current zone.
OVERVIEW_FEED = """
SELECT f.id,
       (SELECT count(DISTINCT s.channel) FROM cluster.streams s WHERE s.feed_id = f.id)
           AS channels,
       (now() AT TIME ZONE coalesce(
           (SELECT c.timezone FROM cluster.feed_configs c
             WHERE c.feed_id = f.id AND c.validity @> now()), 'UTC'))::date AS today
  FROM cluster.user_feeds($2, $3) f
 WHERE f.id = $1"""

OVERVIEW_BUCKETS = """
SELECT start, stream_id, line, counted, quantity, points, money, covered
  FROM cluster.feed_overview($1, $2, $3, $4)"""

OVERVIEW_METERS = """
SELECT m.stream_id, m.quantity, c.title, c.medium, c.submeter
  FROM cluster.feed_metered_streams($1) m
  CROSS JOIN LATERAL (
        SELECT title, medium, submeter FROM cluster.stream_configs s
         -- The newest: a configuration from the start has no lower bound, which DESC
         -- would otherwise put first.
         WHERE s.stream_id = m.stream_id ORDER BY lower(s.validity) DESC NULLS LAST LIMIT 1) c
 WHERE c.medium = ANY (cluster.billed_media())
 ORDER BY m.stream_id"""

# Baseload and the mean price over the period's dates [$2, $3] (up to now); what holds now: per
# electricity meter counted now (the main-meter rule, cluster.meter_billed, by the
# configurations now) its newest 90 s bucket of the last 15 minutes (Wh x 40 = W), and the
# price of the curve at now ($4 is the feed's local today).
OVERVIEW_FIGURES = """
WITH span AS (
    SELECT min(start) AS lo, max(finish) AS hi FROM cluster.feed_local_days($1, $2, $3)
), metered AS MATERIALIZED (
    SELECT m.stream_id, m.quantity, m.is_total, c.main, c.submeter
      FROM cluster.feed_metered_streams($1) m
      JOIN cluster.stream_configs c
        ON c.stream_id = m.stream_id AND c.validity @> now() AND c.medium = 'power'
), newest AS (
    SELECT m.quantity, p.ts, p.value
      FROM metered m
     CROSS JOIN LATERAL (
           SELECT q.ts, q.value FROM cluster.processed_points q
            WHERE q.stream_id = m.stream_id AND q.ts >= now() - interval '15 minutes'
            ORDER BY q.ts DESC LIMIT 1) p
     WHERE cluster.meter_billed(
               m.quantity = 'consumption'
               AND EXISTS (SELECT FROM metered x
                            WHERE cluster.is_main_meter(x.quantity, x.is_total, x.main)),
               m.is_total, m.main, m.submeter))
SELECT cluster.feed_baseload($1, $2, $3) AS baseload,
       cluster.feed_mean_price($1, (SELECT lo FROM span), least((SELECT hi FROM span), now()))
           AS mean_price,
       (SELECT sum(value) * 40 FROM newest WHERE quantity = 'consumption') AS power_w,
       (SELECT sum(value) * 40 FROM newest WHERE quantity = 'export') AS export_w,
       (SELECT max(ts) FROM newest) AS at,
       (SELECT p.price FROM cluster.feed_prices($1, 'power', $4, $4) p
         WHERE p.start <= now() AND p.finish > now() LIMIT 1) AS price"""
