-- A metered stream's quarter hours as one array per UTC day, where 0056 kept a row per quarter:
-- what-if multiplies a day's 96 quarters by the 96 prices of the same UTC day in
-- cluster.price_days, element by element, instead of joining 35,040 rows a year to their prices
-- (about 5 us a quarter, so a year's four contracts took 0.5 s against the bill's 25 ms:
-- docs/billing.md#what-if). The engine keeps them (cluster.rollup_quarters,
-- sql/functions/60_core_rollups.sql); readers answer pending days from the points
-- (cluster.pending_quarter_days). A row of 96 values stays under the 2 kB at which PostgreSQL
-- compresses a value or moves it out of line.

CREATE TABLE cluster.quarter_days (
    stream_id bigint NOT NULL REFERENCES cluster.streams (id) ON DELETE CASCADE,
    day       date NOT NULL,
    totals    double precision[] NOT NULL CHECK (cardinality(totals) = 96),
    PRIMARY KEY (stream_id, day)
);
COMMENT ON TABLE cluster.quarter_days IS 'Per processed consumption or export stream and UTC day with points: the sum of its points per quarter hour. Kept by the engine with the hourly rollups; pending days read through cluster.pending_quarter_days.';
COMMENT ON COLUMN cluster.quarter_days.stream_id IS 'The stream (processed, quantity consumption or export).';
COMMENT ON COLUMN cluster.quarter_days.day IS 'The UTC date: quarter n (1 to 96) starts at day + (n - 1) x 15 minutes UTC, as in cluster.price_days.';
COMMENT ON COLUMN cluster.quarter_days.totals IS 'Per quarter hour, the sum of the values of the stream''s points in it; null where it has none.';

-- The quarters kept so far, moved (migrations run before the functions are applied, so this
-- one cannot call cluster.quarter_array).
INSERT INTO cluster.quarter_days (stream_id, day, totals)
SELECT d.stream_id, d.day, array_agg(r.total ORDER BY q.n)
  FROM (SELECT DISTINCT stream_id, (start AT TIME ZONE 'UTC')::date AS day
          FROM cluster.quarter_rollups) d
 CROSS JOIN generate_series(1, 96) AS q (n)
  LEFT JOIN cluster.quarter_rollups r
    ON r.stream_id = d.stream_id
   AND r.start = d.day::timestamp AT TIME ZONE 'UTC' + (q.n - 1) * interval '15 minutes'
 GROUP BY d.stream_id, d.day;

-- Each price day's lowest and highest price: what-if prices a day of a contract with a floor or
-- a cap quarter by quarter only where the clamp may hold between them.
ALTER TABLE cluster.price_days ADD COLUMN low double precision, ADD COLUMN high double precision;
UPDATE cluster.price_days d
   SET low = (SELECT min(v) FROM unnest(d.prices) AS v), high = (SELECT max(v) FROM unnest(d.prices) AS v);
ALTER TABLE cluster.price_days ALTER COLUMN low SET NOT NULL, ALTER COLUMN high SET NOT NULL;
COMMENT ON COLUMN cluster.price_days.low IS 'The day''s lowest price.';
COMMENT ON COLUMN cluster.price_days.high IS 'The day''s highest price.';

DROP FUNCTION IF EXISTS cluster.realtime_quarters(bigint, timestamptz, timestamptz);
DROP TABLE cluster.quarter_rollups;
