-- An area's prices per UTC day as 96 quarter hours: what-if prices a household's quarters and
-- the market's monthly averages from a year's 365 rows of an area, not from its 35,040 slots
-- (read, sorted and searched per call, those were most of a call over 1,000 feeds:
-- docs/billing.md#what-if). Kept by cluster.set_prices, the one writer of cluster.prices
-- (cluster.refresh_price_days, sql/functions/19_billing_tariffs_and_prices.sql). A row stays
-- under the 2 kB at which PostgreSQL compresses or moves a value out of line, so reading a
-- quarter's price never decompresses a day.

CREATE TABLE cluster.price_days (
    area   text NOT NULL REFERENCES cluster.price_areas (area) ON DELETE CASCADE,
    day    date NOT NULL,
    prices double precision[] NOT NULL CHECK (cardinality(prices) = 96),
    total  double precision NOT NULL,
    priced smallint NOT NULL CHECK (priced BETWEEN 1 AND 96),
    PRIMARY KEY (area, day)
);
COMMENT ON TABLE cluster.price_days IS 'An area''s prices per UTC day and quarter hour, as cluster.set_prices keeps them from cluster.prices: a day with no slot has no row. What-if reads them.';
COMMENT ON COLUMN cluster.price_days.area IS 'The price area.';
COMMENT ON COLUMN cluster.price_days.day IS 'The UTC date: quarter n (1 to 96) starts at day + (n - 1) x 15 minutes UTC.';
COMMENT ON COLUMN cluster.price_days.prices IS 'Per quarter hour, the price of the slot holding its start; null where no slot does.';
COMMENT ON COLUMN cluster.price_days.total IS 'The sum of the day''s non-null prices (a market average''s whole days).';
COMMENT ON COLUMN cluster.price_days.priced IS 'How many of the day''s quarters have a price.';

-- The prices stored so far, as cluster.refresh_price_days makes them (migrations run before the
-- functions are applied, so this one cannot call it): each slot's quarter hours, by their
-- seconds since 1970.
INSERT INTO cluster.price_days (area, day, prices, total, priced)
SELECT d.area, d.day, array_agg(x.price ORDER BY q.n), coalesce(sum(x.price), 0), count(x.price)
  FROM (SELECT DISTINCT s.area, date '1970-01-01' + (e / 86400)::integer AS day
          FROM cluster.prices s
         CROSS JOIN LATERAL generate_series(ceil(date_part('epoch', lower(s.slot)) / 900)::bigint * 900,
                                            ceil(date_part('epoch', upper(s.slot)) / 900)::bigint * 900 - 900,
                                            900) AS e) d
 CROSS JOIN generate_series(1, 96) AS q (n)
  LEFT JOIN (SELECT s.area, date '1970-01-01' + (e / 86400)::integer AS day,
                    (e % 86400 / 900 + 1)::integer AS n, s.price
               FROM cluster.prices s
              CROSS JOIN LATERAL generate_series(ceil(date_part('epoch', lower(s.slot)) / 900)::bigint * 900,
                                                 ceil(date_part('epoch', upper(s.slot)) / 900)::bigint * 900 - 900,
                                                 900) AS e) x
    ON x.area = d.area AND x.day = d.day AND x.n = q.n
 GROUP BY d.area, d.day;
