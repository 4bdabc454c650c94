-- The views, dropped and created again in one go: CREATE OR REPLACE VIEW cannot drop or
-- change a column, and every view is rebuilt from its one definition here (but
-- cluster.visible_feeds and cluster.current_feed_titles, which 14_core_feeds.sql makes for the
-- definitions before this file).
-- Re-applied by every `migrate`, after the numbered migrations: the one current definition.

DROP VIEW IF EXISTS cluster.channel_totals, cluster.daily_readings, cluster.hourly_readings, cluster.dead_letter_causes, cluster.homebase_activity, cluster.tariff_prices, cluster.readings, cluster.system_readings, cluster.processed_readings, cluster.raw_readings, cluster.compacted_points;

-- The compact tier one point per row, for the views below (docs/schema.md#tiers). A filter on
-- stream_id and day reads only those rows; one on ts alone unpacks every day.
CREATE VIEW cluster.compacted_points AS
SELECT d.stream_id, d.day, x.ts, x.value
  FROM cluster.point_days d
 CROSS JOIN LATERAL cluster.unpack(d.first_ts, d.step_us, d.offsets_us, d.vals, d.scale, d.base,
                                   d.deltas, d.wide_at, d.wide) x;
COMMENT ON VIEW cluster.compacted_points IS 'The points of the compact tier (cluster.point_days), one per row, with their UTC day.';

-- Views for analysts: each point with its feed, stream and the configuration valid at its time,
-- from both tiers: the functions of the same name (85_core_reading_ranges.sql) over all time. A filter
-- on stream_id (or feed_id) reaches both tiers' keys; one on ts alone cannot skip a compacted
-- day, so a time range is asked of the functions: cluster.raw_readings($from, $to)
-- (docs/schema.md#time-ranges). They and the rollup views below show every feed, forwarded
-- ones included: analysts see the whole cluster, and a join with cluster.visible_feeds keeps
-- what users see.
CREATE VIEW cluster.raw_readings AS
SELECT * FROM cluster.raw_readings('-infinity', 'infinity');
COMMENT ON VIEW cluster.raw_readings IS 'Raw points with feed title, time zone, channel, device and medium ID valid at each point''s time. For a time range use the function cluster.raw_readings(time_from, time_to): a filter on ts here unpacks every compacted day.';

CREATE VIEW cluster.processed_readings AS
SELECT * FROM cluster.processed_readings('-infinity', 'infinity');
COMMENT ON VIEW cluster.processed_readings IS 'Processed points with feed title, what the stream is (quantity: consumption, export, cost, credit or mean; register: the energy register it counts (1-0:1.8.n: n), else null) and the stream configuration (title, medium, unit) valid at each point''s time. Sum a channel''s totals (cluster.channel_totals), never every stream. For a time range use the function cluster.processed_readings(time_from, time_to).';

CREATE VIEW cluster.system_readings AS
SELECT * FROM cluster.system_readings('-infinity', 'infinity');
COMMENT ON VIEW cluster.system_readings IS 'System points with feed title, channel, device and source. For a time range use the function cluster.system_readings(time_from, time_to).';

CREATE VIEW cluster.readings AS
SELECT * FROM cluster.readings('-infinity', 'infinity');
COMMENT ON VIEW cluster.readings IS 'All points of all types in one view; medium is the raw medium ID, the processed medium name or the system source; register and quantity as in cluster.processed_readings (null for raw and system streams). For a time range use the function cluster.readings(time_from, time_to).';

CREATE VIEW cluster.tariff_prices AS
SELECT t.feed_id, t.medium, lower(t.validity) AS valid_from, upper(t.validity) AS valid_to,
       b.starts, b.ends, b.price, t.area, t.factor, t.standing, b.days, t.vat, t.floor, t.cap,
       t.standing_per, t.holidays, t.kwh_per_m3
  FROM cluster.tariffs t JOIN cluster.tariff_bands b ON b.tariff_id = t.id;
COMMENT ON VIEW cluster.tariff_prices IS 'Every tariff band with its feed, medium and validity period (valid_to null: current); a bucket costs cluster.tariff_price(factor, its area''s price (cluster.prices) or 0, the band''s price, vat, floor, cap) per unit, on local dates of the band''s days (all, weekday, weekend: with the holidays of cluster.tariff_holidays). standing: the period''s charge per local day or month (standing_per), before VAT (the same on each of its bands'' rows).';

-- When a homebase (or CoAP device) last sent data here. Boots and configuration requests are
-- provisioning's, in provisioning's database: a cluster reads nothing there (docs/scaling.md),
-- and at one every two hours (boots) or every hour (configuration) they could not keep a
-- homebase from counting as offline after EP_NOTIFICATIONS_OFFLINE_AFTER (900 s) anyway.
CREATE VIEW cluster.homebase_activity AS
SELECT f.id AS feed_id, f.owner_id, f.homebase_sn, p.last_data_at AS last_seen
  FROM cluster.visible_feeds f
  LEFT JOIN cluster.homebase_presence p ON p.homebase_sn = f.homebase_sn;
COMMENT ON VIEW cluster.homebase_activity IS 'Per visible feed (cluster.visible_feeds): when its homebase or device last sent data.';

-- A channel's total, per quantity (docs/engine.md#a-channels-total): its combined stream when it
-- has one (the sum of its tariff registers or its phases), else its one stream without index or
-- register. An unindexed stream beside a combined one (a total register or total power beside
-- the tariff registers or phases) measures the same energy another way: adding both counts it twice.
CREATE VIEW cluster.channel_totals AS
SELECT s.id AS stream_id, s.feed_id, s.channel, s.quantity
  FROM cluster.streams s
 WHERE s.type = 'processed' AND s.idx IS NULL AND s.register IS NULL
   AND (s.combined OR NOT EXISTS (
           SELECT FROM cluster.streams c
            WHERE c.type = 'processed' AND c.feed_id = s.feed_id AND c.channel = s.channel
              AND c.quantity = s.quantity AND c.combined));
COMMENT ON VIEW cluster.channel_totals IS 'Per feed, channel and quantity the one processed stream that is the channel''s total: the combined stream if there is one, else the stream without index or register. Sum these, never every processed stream.';

CREATE VIEW cluster.dead_letter_causes AS
SELECT sn, cause, count(*) AS messages, min(received_at) AS first_at, max(received_at) AS last_at
  FROM cluster.dead_letters
 GROUP BY sn, cause;
COMMENT ON VIEW cluster.dead_letter_causes IS 'Dead letters per homebase or device and cause: where to start looking.';

-- Rollups for analysts: an hour or a local day per row, the value as the data API's
-- `resolution` gives it (summed for processed energy, volume and cost; else the mean). Real
-- time: hours and days not yet recomputed by the engine are made from the points at read time
-- (61_core_realtime_rollups.sql), so a filter on stream_id or feed_id reads only those streams.
-- quantity and register say what a processed stream is: a sum over a feed takes its channels'
-- totals (cluster.channel_totals), not every stream.
CREATE VIEW cluster.hourly_readings AS
SELECT r.hour, s.id AS stream_id, s.feed_id, f.homebase_sn, s.type AS stream_type, s.channel,
       s.idx AS index, s.register, s.quantity, coalesce(fc.timezone, 'UTC') AS timezone, sc.medium,
       r.total, r.points,
       CASE WHEN cluster.additive(s.type, sc.medium) THEN r.total ELSE r.total / r.points END AS value
  FROM cluster.streams s
  CROSS JOIN LATERAL cluster.realtime_hours(s.id, '-infinity', 'infinity') r
  JOIN cluster.feeds f ON f.id = s.feed_id
  LEFT JOIN cluster.feed_configs fc ON fc.feed_id = f.id AND fc.validity @> r.hour
  LEFT JOIN cluster.stream_configs sc ON sc.stream_id = s.id AND sc.validity @> r.hour;
COMMENT ON VIEW cluster.hourly_readings IS 'Per stream and local hour: sum (total) and number (points) of its points, and value: the total for processed energy, volume and cost, else the mean. register and quantity: what a processed stream is (null for raw and system streams), as in cluster.processed_readings; medium is the processed stream''s medium valid at the hour. Real time: hours the engine has not recomputed yet are summed from the points at read time.';

CREATE VIEW cluster.daily_readings AS
SELECT r.day AS local_day, r.start, s.id AS stream_id, s.feed_id, f.homebase_sn,
       s.type AS stream_type, s.channel, s.idx AS index, s.register, s.quantity, r.timezone,
       sc.medium, r.total, r.points,
       CASE WHEN cluster.additive(s.type, sc.medium) THEN r.total ELSE r.total / r.points END AS value
  FROM cluster.streams s
  CROSS JOIN LATERAL cluster.realtime_days(s.id, '-infinity', 'infinity') r
  JOIN cluster.feeds f ON f.id = s.feed_id
  LEFT JOIN cluster.stream_configs sc ON sc.stream_id = s.id AND sc.validity @> r.start;
COMMENT ON VIEW cluster.daily_readings IS 'Per stream and local day of its feed (a DST day has 23 or 25 hours): total, points, value, register and quantity as in cluster.hourly_readings. "How much each month": sum value by date_trunc(''month'', local_day). Real time, like cluster.hourly_readings.';
