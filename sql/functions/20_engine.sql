-- The engine's numbers and the expressions its statements share, its queue of recomputations,
-- and the configuration setters that feed it (the tariff and price setters are billing's:
-- 19_billing_tariffs_and_prices.sql).
-- Re-applied by every `migrate`, after the numbered migrations: the one current definition.

-- The engine's two numbers and the expressions its statements (engine/processing.py) would
-- otherwise write more than once (docs/engine.md#bucket-rules). Each is one expression in a SQL
-- function without STRICT or SET, which the planner inlines into the calling statement and
-- folds to constants where it can: a statement's plan is the one the expressions written out
-- gave, and a call costs nothing per row.

-- Bucket k is [90k, 90k + 90) in Unix seconds.
CREATE OR REPLACE FUNCTION cluster.bucket_seconds() RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 90 $$;
COMMENT ON FUNCTION cluster.bucket_seconds() IS
    'Length of the engine''s buckets in seconds: bucket k starts k times this after the epoch.';

CREATE OR REPLACE FUNCTION cluster.bucket_width() RETURNS interval
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT make_interval(secs => cluster.bucket_seconds())
$$;
COMMENT ON FUNCTION cluster.bucket_width() IS
    'Length of the engine''s buckets, for time_bucket.';

-- Samples further apart than this are a gap: no line is drawn between them.
CREATE OR REPLACE FUNCTION cluster.bridge_seconds() RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 300 $$;
COMMENT ON FUNCTION cluster.bridge_seconds() IS
    'Longest gap in seconds between two samples that the engine bridges with a line (inclusive).';

CREATE OR REPLACE FUNCTION cluster.bridge_limit() RETURNS interval
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT make_interval(secs => cluster.bridge_seconds())
$$;
COMMENT ON FUNCTION cluster.bridge_limit() IS
    'cluster.bridge_seconds() as an interval.';

CREATE OR REPLACE FUNCTION cluster.bridged(e0 double precision, e1 double precision)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT e1 - e0 <= cluster.bridge_seconds() $$;
COMMENT ON FUNCTION cluster.bridged(double precision, double precision) IS
    'True when samples at e0 <= e1 (Unix seconds) are close enough to be joined by a line.';

CREATE OR REPLACE FUNCTION cluster.bucket_of(e double precision) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT floor(e / cluster.bucket_seconds())::bigint
$$;
COMMENT ON FUNCTION cluster.bucket_of(double precision) IS
    'The bucket k holding the instant e (Unix seconds).';

-- Meter counters (registers, gas and water readings; docs/engine.md#registers-wh): the two
-- limits their rules read, set per transaction by the engine from EngineSettings
-- (engine/processing.py, TUNE: `ep.engine_max_spread`, `ep.engine_max_rate_<medium>`). Unset
-- (a session that is not the engine's), a rise is spread only where power is bridged and no
-- rise is too steep: the rules before issue 48.
CREATE OR REPLACE FUNCTION cluster.max_spread_seconds() RETURNS double precision
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(nullif(current_setting('ep.engine_max_spread', true), '')::double precision,
                    cluster.bridge_seconds())
$$;
COMMENT ON FUNCTION cluster.max_spread_seconds() IS
    'Longest gap in seconds over which a register''s rise between two readings is spread evenly (EP_ENGINE_MAX_SPREAD); a longer one''s goes whole to the later reading''s bucket.';

CREATE OR REPLACE FUNCTION cluster.default_max_rate(medium text) RETURNS double precision
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT nullif(current_setting('ep.engine_max_rate_' || medium, true), '')::double precision
$$;
COMMENT ON FUNCTION cluster.default_max_rate(text) IS
    'The fastest rise per hour a counter of this processed medium can make (EP_ENGINE_MAX_RATE_<MEDIUM>: W, m³/h, kW); null: no limit.';

-- A counter's rate limit at the instant e (Unix seconds): rate when one limit holds
-- throughout, else rates[i] from starts[i] on (ascending, the first -Infinity), as
-- cluster.engine_sources gathers them. No subquery, so that it is inlined; in the usual case
-- (one limit) it costs a test per reading.
CREATE OR REPLACE FUNCTION cluster.rate_at(
    rate double precision, starts double precision[], rates double precision[],
    e double precision
) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(rate, rates[width_bucket(e, starts)])
$$;
COMMENT ON FUNCTION cluster.rate_at(double precision, double precision[], double precision[], double precision) IS
    'The rate limit valid at e: rate, else rates[i] from starts[i] (ascending) on.';

-- The units a meter's reader may send for a counter of each processed medium, as the factor
-- to the medium's own unit (Wh, m³, kWh): one table, read by the engine (cluster.engine_sources)
-- and by `admin streams configure --unit`, which refuses a unit it does not list. NULL unit:
-- the medium's own (what docs/devices.md says a reader sends); NULL answer: no such unit.
CREATE OR REPLACE FUNCTION cluster.unit_factor(p_medium text, p_unit text)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN p_unit IS NULL THEN 1
                WHEN p_medium = 'power' THEN
                     CASE p_unit WHEN 'Wh' THEN 1 WHEN 'kWh' THEN 1e3 WHEN 'MWh' THEN 1e6 END
                WHEN p_medium IN ('gas', 'water') THEN
                     CASE p_unit WHEN 'm3' THEN 1 WHEN 'm³' THEN 1 WHEN 'l' THEN 1e-3 END
                -- 1 GJ = 1e9 J / 3.6e6 J per kWh
                WHEN p_medium = 'heat' THEN
                     CASE p_unit WHEN 'kWh' THEN 1 WHEN 'MWh' THEN 1e3 WHEN 'GJ' THEN 1e9 / 3.6e6
                     END
           END
$$;
COMMENT ON FUNCTION cluster.unit_factor(text, text) IS
    'The factor from a unit a meter''s reader sends to the processed medium''s own unit (power Wh/kWh/MWh, gas and water m3/l, heat kWh/MWh/GJ); 1 for NULL, NULL for a unit the medium has not.';

-- A rise from (e0, v0) to (e1, v1) that the channel can make: not down, and not faster than
-- its rate (per second; null: no limit). Anything else is a reset or a replacement: it adds 0.
CREATE OR REPLACE FUNCTION cluster.plausible_rise(
    v0 double precision, e0 double precision, v1 double precision, e1 double precision,
    rate double precision
) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT v1 >= v0 AND (rate IS NULL OR v1 - v0 <= rate * (e1 - e0))
$$;
COMMENT ON FUNCTION cluster.plausible_rise(double precision, double precision, double precision, double precision, double precision) IS
    'True when a counter can rise from v0 at e0 to v1 at e1 (not down, at most rate per second).';

-- A glitch: a reading (e, v) below the one before it (pe, pv), where the next one (ne, nv) is
-- back at or above that one within a plausible rise (its rate nr). It is skipped: the segment
-- goes from the reading before it to the one after it. Only a reading's neighbours decide, so
-- late and out-of-order readings are judged as on arrival in order; two glitches are never
-- neighbours (the one after a glitch is above it).
CREATE OR REPLACE FUNCTION cluster.glitch(
    pe double precision, pv double precision, v double precision, ne double precision,
    nv double precision, nr double precision
) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(v < pv AND cluster.plausible_rise(pv, pe, nv, ne, nr), false)
$$;
COMMENT ON FUNCTION cluster.glitch(double precision, double precision, double precision, double precision, double precision, double precision) IS
    'True when the reading v is a glitch: below the one before it (pe, pv), and the next (ne, nv) is back at or above that one within a plausible rise (rate nr per second).';

-- The part [a, c] of the segment from (e0, v0) to (e1, v1) that lies in one bucket: its
-- trapezoid (value·s, the integral of the line over [a, c]) and the seconds it covers. Both are
-- 0 for a gap (bridged false) or an empty part, so that a sum over a bucket's parts needs no
-- filter.
CREATE OR REPLACE FUNCTION cluster.segment_integral(
    e0 double precision, v0 double precision, e1 double precision, v1 double precision,
    bridged boolean, a double precision, c double precision
) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN bridged AND c > a
                THEN (c - a) * (v0 + (v1 - v0) * ((a + c) / 2 - e0) / (e1 - e0)) ELSE 0 END
$$;
COMMENT ON FUNCTION cluster.segment_integral(double precision, double precision, double precision, double precision, boolean, double precision, double precision) IS
    'Integral (value·s) over [a, c] of the line from (e0, v0) to (e1, v1); 0 if not bridged or a >= c.';

CREATE OR REPLACE FUNCTION cluster.segment_covered(
    bridged boolean, a double precision, c double precision
) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN bridged AND c > a THEN c - a ELSE 0 END
$$;
COMMENT ON FUNCTION cluster.segment_covered(boolean, double precision, double precision) IS
    'Seconds of [a, c] covered by a segment''s line; 0 when not bridged or a >= c.';

-- A configuration, tariff or time zone holds for a bucket when the bucket's start lies in its
-- validity: kfrom <= k < kto. Unbounded ends are the bigint's extremes. A table function so that
-- both ends are one definition; STABLE as the epoch of a timestamptz is.
CREATE OR REPLACE FUNCTION cluster.validity_buckets(validity tstzrange)
RETURNS TABLE (kfrom bigint, kto bigint)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN lower_inf(validity) THEN -9223372036854775807
                ELSE ceil(date_part('epoch', lower(validity)) / cluster.bucket_seconds())::bigint
           END,
           CASE WHEN upper_inf(validity) THEN 9223372036854775807
                ELSE ceil(date_part('epoch', upper(validity)) / cluster.bucket_seconds())::bigint
           END
$$;
COMMENT ON FUNCTION cluster.validity_buckets(tstzrange) IS
    'The buckets whose start lies in the validity range: kfrom <= k < kto.';

-- The processed stream a raw stream counts in, by its method (cluster.processable_media) and
-- index: a register's index is its register (1-0:1.8.2 is medium 22, index 2: register 2), any
-- other medium's index is its own (a phase). A table function so that the planner inlines it.
CREATE OR REPLACE FUNCTION cluster.processed_target(method text, raw_idx integer)
RETURNS TABLE (idx integer, register integer)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN method = 'register' THEN NULL ELSE raw_idx END,
           CASE WHEN method = 'register' THEN raw_idx END
$$;
COMMENT ON FUNCTION cluster.processed_target(text, integer) IS
    'The (idx, register) of the processed stream a raw stream of this method and index counts in.';

-- Where a register counts (docs/engine.md#each-wh-once): the buckets its readings span, from the
-- one holding its first reading to the last one its line reaches into (a last reading on a
-- bucket's start leaves that bucket out). A register of one reading spans nothing. Its first and
-- last readings are cluster.point_neighbours's (both tiers), so that the planner inlines both
-- functions: called per stream, each call planned its probes again (a third of a batch's time).
CREATE OR REPLACE FUNCTION cluster.register_span(p_stream_id bigint)
RETURNS TABLE (kfirst bigint, klast bigint)
LANGUAGE sql STABLE AS $$
    SELECT cluster.bucket_of(date_part('epoch', n.after)),
           ceil(date_part('epoch', n.before) / cluster.bucket_seconds())::bigint - 1
      FROM cluster.point_neighbours(p_stream_id, 'infinity', '-infinity') n
     WHERE n.after < n.before
$$;
COMMENT ON FUNCTION cluster.register_span(bigint) IS
    'The buckets from a raw stream''s first point to its last (kfirst <= k <= klast); no row for fewer than two points.';

-- Queue the buckets of one channel that overlap p_period, cut to the channel's raw data: no
-- processed point lies outside it, and data arriving later brings its own dirty range.
CREATE OR REPLACE FUNCTION cluster.engine_invalidate(p_feed_id bigint, p_channel integer, p_period tstzmultirange)
RETURNS void LANGUAGE sql AS $$
    WITH data AS (
        SELECT min(cluster.stream_point_edge(s.id, false)) AS first_ts,
               max(cluster.stream_point_edge(s.id, true)) AS last_ts
          FROM cluster.streams s
          JOIN cluster.processable_media m ON m.medium_id = s.medium
         WHERE s.feed_id = p_feed_id AND s.channel = p_channel AND s.type = 'raw'
    ), cut AS (
        SELECT greatest(lower(r), d.first_ts) AS lo,
               least(upper(r), d.last_ts + interval '1 microsecond') AS hi
          FROM unnest(p_period) r, data d
         WHERE d.first_ts IS NOT NULL
    )
    INSERT INTO cluster.engine_work (feed_id, channel, buckets)
    SELECT p_feed_id, p_channel,
           tstzrange(time_bucket(cluster.bucket_width(), lo),
                     time_bucket(cluster.bucket_width(), hi - interval '1 microsecond')
                         + cluster.bucket_width())
      FROM cut
     WHERE lo < hi
$$;
COMMENT ON FUNCTION cluster.engine_invalidate(bigint, integer, tstzmultirange) IS
    'Queue the recomputation of a channel''s processed points over a period (cut to its raw data).';

CREATE OR REPLACE FUNCTION cluster.engine_invalidate_feed(p_feed_id bigint, p_period tstzmultirange)
RETURNS void LANGUAGE sql AS $$
    SELECT cluster.engine_invalidate(p_feed_id, channel, p_period)
      FROM (SELECT DISTINCT channel FROM cluster.streams
             WHERE feed_id = p_feed_id AND type = 'processed') c
$$;
COMMENT ON FUNCTION cluster.engine_invalidate_feed(bigint, tstzmultirange) IS
    'Queue the recomputation of every processed channel of a feed over a period.';

-- Reprocessing goes through ingest's queue, as if the raw points had just arrived: missing
-- processed streams are created and every affected bucket is recomputed.
CREATE OR REPLACE FUNCTION cluster.engine_reprocess(p_feed_id bigint, p_from timestamptz, p_to timestamptz)
RETURNS integer LANGUAGE sql AS $$
    WITH queued AS (
        INSERT INTO cluster.dirty_ranges (stream_id, ts_from, ts_to)
        SELECT s.id, greatest(p_from, e.first_ts), least(p_to, e.last_ts)
          FROM cluster.streams s
          JOIN cluster.processable_media m ON m.medium_id = s.medium
          CROSS JOIN LATERAL (SELECT cluster.point_from(s.id, p_from) AS first_ts,
                                     cluster.point_before(s.id, p_to) AS last_ts) e
         WHERE s.feed_id = p_feed_id AND s.type = 'raw'
           AND e.first_ts < p_to AND e.last_ts >= p_from
        RETURNING 1
    )
    SELECT count(*)::integer FROM queued
$$;
COMMENT ON FUNCTION cluster.engine_reprocess(bigint, timestamptz, timestamptz) IS
    'Queue every processable raw stream of a feed over [p_from, p_to) for processing; returns the number of streams.';

-- Setting a configuration "from an instant on": periods starting at or after the instant go,
-- the period holding the instant ends there, and a new current period starts at it. One
-- statement, so concurrent changes of one feed or stream serialise on its row lock. The engine
-- recomputes exactly the period whose medium changes (a new title or shown unit changes no
-- value); where the rate limit of its meter counters or the unit their readers send changes,
-- their readings are queued as if they had just arrived, so that intake widens them to every
-- segment the limit or the unit judges (docs/engine.md#registers-wh).
CREATE OR REPLACE FUNCTION cluster.set_stream_config(
    p_stream_id bigint, p_from timestamptz, p_title text, p_medium text, p_unit text,
    p_submeter boolean DEFAULT false, p_max_rate double precision DEFAULT NULL,
    p_main boolean DEFAULT false, p_sent_unit text DEFAULT NULL
) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_from timestamptz := nullif(p_from, '-infinity');  -- -infinity or NULL: from the start
    v_feed_id bigint;
    v_channel integer;
    v_changed tstzmultirange;
    v_rate_changed tstzmultirange;
BEGIN
    SELECT feed_id, channel INTO v_feed_id, v_channel
      FROM cluster.streams WHERE id = p_stream_id AND type = 'processed' FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'processed stream % does not exist', p_stream_id
            USING ERRCODE = 'no_data_found';
    END IF;
    SELECT tstzmultirange(tstzrange(v_from, NULL, '[)'))
           - coalesce(range_agg(validity * tstzrange(v_from, NULL, '[)'))
                          FILTER (WHERE medium IS NOT DISTINCT FROM p_medium),
                      '{}'::tstzmultirange),
           tstzmultirange(tstzrange(v_from, NULL, '[)'))
           - coalesce(range_agg(validity * tstzrange(v_from, NULL, '[)'))
                          FILTER (WHERE max_rate IS NOT DISTINCT FROM p_max_rate
                                    AND sent_unit IS NOT DISTINCT FROM p_sent_unit),
                      '{}'::tstzmultirange)
      INTO v_changed, v_rate_changed
      FROM cluster.stream_configs WHERE stream_id = p_stream_id;
    DELETE FROM cluster.stream_configs
     WHERE stream_id = p_stream_id
       AND (v_from IS NULL OR (NOT lower_inf(validity) AND lower(validity) >= v_from));
    UPDATE cluster.stream_configs SET validity = tstzrange(lower(validity), v_from, '[)')
     WHERE stream_id = p_stream_id AND v_from IS NOT NULL AND validity @> v_from;
    INSERT INTO cluster.stream_configs (stream_id, title, medium, unit, submeter, max_rate, main,
                                        sent_unit, validity)
    VALUES (p_stream_id, p_title, p_medium, p_unit, p_submeter, p_max_rate, p_main, p_sent_unit,
            tstzrange(v_from, NULL, '[)'));
    PERFORM cluster.engine_invalidate(v_feed_id, v_channel, v_changed);
    INSERT INTO cluster.dirty_ranges (stream_id, ts_from, ts_to)
    SELECT s.id, e.first_ts, e.last_ts
      FROM cluster.streams s
      JOIN cluster.processable_media m
        ON m.medium_id = s.medium AND m.method IN ('register', 'reading')
     CROSS JOIN unnest(v_rate_changed) r
     CROSS JOIN LATERAL (
           SELECT cluster.point_from(s.id, coalesce(lower(r), '-infinity')) AS first_ts,
                  cluster.point_before(s.id, coalesce(upper(r), 'infinity')) AS last_ts) e
     WHERE s.feed_id = v_feed_id AND s.channel = v_channel AND s.type = 'raw'
       AND e.first_ts <= e.last_ts;
END $$;
COMMENT ON FUNCTION cluster.set_stream_config(bigint, timestamptz, text, text, text, boolean, double precision, boolean, text) IS
    'Make (title, medium, unit, sub-meter or not, max rate of its meter counters, main meter or not, the unit its meter counters'' readers send) the processed stream''s configuration from p_from on; the engine recomputes the period whose medium, rate or sent unit changed (a bill reads the sub-meter and main-meter flags when asked).';

-- The same for a feed; the engine recomputes where the time zone changes: time-of-use tariffs
-- are read in the feed's local time.
CREATE OR REPLACE FUNCTION cluster.set_feed_config(
    p_feed_id bigint, p_from timestamptz, p_title text, p_timezone text
) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_from timestamptz := nullif(p_from, '-infinity');  -- -infinity or NULL: from the start
    v_changed tstzmultirange;
BEGIN
    PERFORM 1 FROM cluster.feeds WHERE id = p_feed_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'feed % does not exist', p_feed_id USING ERRCODE = 'no_data_found';
    END IF;
    SELECT tstzmultirange(tstzrange(v_from, NULL, '[)'))
           - coalesce(range_agg(validity * tstzrange(v_from, NULL, '[)'))
                          FILTER (WHERE timezone = p_timezone),
                      '{}'::tstzmultirange)
      INTO v_changed
      FROM cluster.feed_configs WHERE feed_id = p_feed_id;
    DELETE FROM cluster.feed_configs
     WHERE feed_id = p_feed_id
       AND (v_from IS NULL OR (NOT lower_inf(validity) AND lower(validity) >= v_from));
    UPDATE cluster.feed_configs SET validity = tstzrange(lower(validity), v_from, '[)')
     WHERE feed_id = p_feed_id AND v_from IS NOT NULL AND validity @> v_from;
    INSERT INTO cluster.feed_configs (feed_id, title, timezone, validity)
    VALUES (p_feed_id, p_title, p_timezone, tstzrange(v_from, NULL, '[)'));
    PERFORM cluster.engine_invalidate_feed(p_feed_id, v_changed);
    -- Hourly rollups are keyed by local hours: every stream's hours move to the new zone. The
    -- processed ones are queued here too, not only by the recomputation queued above, so that a
    -- real-time reader (61_core_realtime_rollups.sql) answers them in the new zone at once.
    INSERT INTO cluster.rollup_work (stream_id, span)
    SELECT s.id, r FROM cluster.streams s, unnest(v_changed) r
     WHERE s.feed_id = p_feed_id;
END $$;
COMMENT ON FUNCTION cluster.set_feed_config(bigint, timestamptz, text, text) IS
    'Make (title, timezone) the feed''s configuration from p_from on; the engine recomputes the period whose time zone changed.';

-- The engine hears of ingest's work when it is committed, not at its next poll
-- (src/energy_platform/engine/wakeup.py): every statement that queues raw ranges notifies the
-- channel ep_engine_work. PostgreSQL sends the notification when the transaction commits and
-- folds a transaction's identical notifications into one. The trigger is defined here with its
-- function (CREATE OR REPLACE: re-applied by every migrate like the rest of this file).
CREATE OR REPLACE FUNCTION cluster.notify_engine() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('ep_engine_work', '');
    RETURN NULL;
END $$;
COMMENT ON FUNCTION cluster.notify_engine() IS
    'Trigger: tell the engine (LISTEN ep_engine_work) that work was queued, at commit.';
CREATE OR REPLACE TRIGGER dirty_ranges_notify AFTER INSERT ON cluster.dirty_ranges
    FOR EACH STATEMENT EXECUTE FUNCTION cluster.notify_engine();
