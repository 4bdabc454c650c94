-- The live log (sql/0023_live.sql, docs/api.md#live): writers stage their events in the
-- statements that write the points, and publish them as the last statement before COMMIT,
-- which gives them their positions under one advisory lock held to the commit. Positions are
-- therefore in commit order, and a reader that has seen position p has seen, or will never
-- see, every smaller one: "everything after my id" is exact without gaps or repeats.
-- Re-applied by every `migrate`, after the numbered migrations: the one current definition.

-- Staged rows wait under negative numbers of their own until cluster.live_publish.
CREATE SEQUENCE IF NOT EXISTS cluster.live_staging;

-- Stage the events of the given points (flat arrays, any order): per stream, points in events of
-- at most 1,000 (a homebase's backlog after an outage comes as several events of a size a
-- client can take), or buckets. A stream with more than p_max buckets in one transaction (the
-- engine re-processing a long period) gets one reload event for their time range instead: a
-- dashboard reads the range again rather than receive days of buckets. Returns the events
-- staged.
CREATE OR REPLACE FUNCTION cluster.live_stage(p_kind text, p_streams bigint[], p_times bigint[],
                                              p_values double precision[],
                                              p_max integer DEFAULT NULL)
RETURNS integer LANGUAGE sql VOLATILE AS $$
    WITH numbered AS (
        SELECT u.s, u.t, u.v, (row_number() OVER (PARTITION BY u.s ORDER BY u.t) - 1) / 1000 AS part,
               count(*) OVER (PARTITION BY u.s) AS n
          FROM unnest(p_streams, p_times, p_values) AS u (s, t, v)
         WHERE u.s IS NOT NULL
    ), grouped AS (
        SELECT s, n > p_max AS too_many, array_agg(t ORDER BY t) AS times,
               array_agg(v ORDER BY t) AS vals
          FROM numbered
         GROUP BY s, n, CASE WHEN n > p_max THEN 0 ELSE part END
    ), staged AS (
        INSERT INTO cluster.live_log (pos, feed_id, stream_id, kind, times, vals)
        SELECT -nextval('cluster.live_staging'), st.feed_id, g.s,
               CASE WHEN g.too_many THEN 'reload' ELSE p_kind END,
               CASE WHEN g.too_many THEN ARRAY[g.times[1], g.times[cardinality(g.times)]]
                    ELSE g.times END,
               CASE WHEN g.too_many THEN '{}'::float8[] ELSE g.vals END
          FROM grouped g
          JOIN cluster.streams st ON st.id = g.s
         ORDER BY g.s, g.times[1]
        RETURNING 1
    )
    SELECT count(*)::integer FROM staged
$$;
COMMENT ON FUNCTION cluster.live_stage(text, bigint[], bigint[], double precision[], integer) IS
    'Stage live events (per stream, at most 1,000 points each; more than p_max: one reload) of points written in this transaction; cluster.live_publish gives them their positions before COMMIT.';

-- Stage one prices event per feed: its area's prices of the feed's local day p_days[i] are in
-- (the notification rule prices_published, in the transaction that tells the owner, so the
-- page redraws exactly when the notice is written, once). The feed's event, not a stream's.
-- Returns the events staged. PL/pgSQL: its body is checked when it runs, not when it is
-- created, so this file applies to a schema before 0051 (its day column) too, as the
-- migration tests apply today's functions to older schemas.
CREATE OR REPLACE FUNCTION cluster.live_stage_prices(p_feeds bigint[], p_days date[])
RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_count integer;
BEGIN
    INSERT INTO cluster.live_log (pos, feed_id, stream_id, kind, times, vals, day)
    SELECT -nextval('cluster.live_staging'), u.f, NULL, 'prices', '{}', '{}', u.d
      FROM unnest(p_feeds, p_days) AS u (f, d)
     WHERE u.f IS NOT NULL
     ORDER BY u.f;
    GET DIAGNOSTICS v_count = ROW_COUNT;
    RETURN v_count;
END $$;
COMMENT ON FUNCTION cluster.live_stage_prices(bigint[], date[]) IS
    'Stage one live prices event per feed (the area''s prices of the feed''s local day are in); cluster.live_publish gives them their positions before COMMIT.';

-- The last statement of a writing transaction: take the live log's lock (held to the commit),
-- number this transaction's staged events in commit order, and wake the API processes
-- (LISTEN ep_live). Nothing staged: no lock, nothing done. Returns the events published.
CREATE OR REPLACE FUNCTION cluster.live_publish() RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    v_count integer;
BEGIN
    IF NOT EXISTS (SELECT FROM cluster.live_log WHERE pos < 0) THEN
        RETURN 0;
    END IF;
    PERFORM pg_advisory_xact_lock(cluster.lock_key('live_log'));
    UPDATE cluster.live_log SET pos = nextval('cluster.live_positions') WHERE pos < 0;
    GET DIAGNOSTICS v_count = ROW_COUNT;
    PERFORM pg_notify('ep_live', '');
    RETURN v_count;
END $$;
COMMENT ON FUNCTION cluster.live_publish() IS
    'Number the live events staged in this transaction in commit order (under the live_log advisory lock, held to COMMIT) and notify ep_live. Call it last, just before COMMIT.';

-- The engine's pruning: events older than p_keep go (of stream p_stream_id only, unless it is
-- null), and the horizon remembers the highest position removed (a Last-Event-ID below it gets
-- reload). Returns the events removed. A stream at a time is how the pruning round goes on
-- once the whole failed (live/pruning.py): one stream's failure costs that stream only.
CREATE OR REPLACE FUNCTION cluster.live_prune_stream(p_keep interval, p_stream_id bigint)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    v_top bigint;
    v_count bigint;
BEGIN
    WITH gone AS (
        DELETE FROM cluster.live_log
         WHERE logged_at < now() - p_keep AND pos > 0
           AND (p_stream_id IS NULL OR stream_id = p_stream_id)
        RETURNING pos
    )
    SELECT max(pos), count(*) INTO v_top, v_count FROM gone;
    IF v_top IS NOT NULL THEN
        UPDATE cluster.live_horizon SET pos = greatest(pos, v_top);
    END IF;
    RETURN v_count;
END $$;
COMMENT ON FUNCTION cluster.live_prune_stream(interval, bigint) IS
    'Remove the live events of one stream (null: of every stream) logged more than p_keep ago and raise cluster.live_horizon; returns how many went.';

CREATE OR REPLACE FUNCTION cluster.live_prune(p_keep interval) RETURNS bigint
LANGUAGE sql AS $$
    SELECT cluster.live_prune_stream(p_keep, NULL)
$$;
COMMENT ON FUNCTION cluster.live_prune(interval) IS
    'Remove live events logged more than p_keep ago (EP_LIVE_REPLAY_S) and raise cluster.live_horizon; returns how many went.';

-- Whoever may see a feed live can change without a word to the API: a token revoked, a user
-- or feed removed, a feed's owner changed, a homebase registered with the forwarder. Each such
-- statement notifies ep_live_access, and every API process checks its live clients again
-- (not a token's last use, written once a minute: only the columns that decide access).
CREATE OR REPLACE FUNCTION cluster.notify_live_access() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('ep_live_access', '');
    RETURN NULL;
END $$;
COMMENT ON FUNCTION cluster.notify_live_access() IS
    'Trigger: tell the API processes (LISTEN ep_live_access) to check who may still see their live streams, at commit.';
CREATE OR REPLACE TRIGGER user_tokens_live_access AFTER UPDATE OF user_id, scope, token_sha256 OR DELETE
    ON cluster.user_tokens
    FOR EACH STATEMENT EXECUTE FUNCTION cluster.notify_live_access();
CREATE OR REPLACE TRIGGER users_live_access AFTER UPDATE OF is_admin OR DELETE ON cluster.users
    FOR EACH STATEMENT EXECUTE FUNCTION cluster.notify_live_access();
CREATE OR REPLACE TRIGGER feeds_live_access AFTER UPDATE OF owner_id, homebase_sn OR DELETE
    ON cluster.feeds
    FOR EACH STATEMENT EXECUTE FUNCTION cluster.notify_live_access();
CREATE OR REPLACE TRIGGER registrations_live_access AFTER INSERT OR UPDATE
    ON forwarder.registrations
    FOR EACH STATEMENT EXECUTE FUNCTION cluster.notify_live_access();
