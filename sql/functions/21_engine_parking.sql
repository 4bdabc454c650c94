-- Parked feeds: the engine's processing or rollups failed on one feed's data (SQLSTATE class 22
-- or 23), or failed alone the same other way EP_ENGINE_PARK_AFTER times in a row (a program
-- limit, out of memory, a statement timeout: cluster.work_failed), the engine narrowed the
-- failing batch down to that feed (engine/parking.py) and sets its work aside here, so that
-- every other feed goes on (docs/engine.md#parked-feeds).
-- Re-applied by every `migrate`, after the numbered migrations: the one current definition.
-- They read cluster.visible_feeds and cluster.current_feed_titles (14_core_feeds.sql).

-- Tells the feed's owner, once while it is parked: at most one open notification per rule,
-- subject (the feed) and user. A feed hidden from its owner (its homebase is registered with
-- the forwarder) tells no one, as every rule does (docs/notifications.md).
CREATE OR REPLACE FUNCTION cluster.parked_notify(
    p_feed_id bigint, p_stage text, p_span tstzrange, p_error text
) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO cluster.notifications (user_id, feed_id, rule, subject, title, content, open)
    SELECT f.owner_id, f.id, 'processing_parked', f.id::text, 'Processing paused',
           format('<p>The %s of <b>%s</b> stopped at data the platform cannot compute, between'
                  || ' %s and %s: <code>%s</code>. The rest of the feed''s data waits; the'
                  || ' operators have been alerted and will resume it once the data is'
                  || ' repaired.</p>',
                  CASE p_stage WHEN 'processing' THEN 'processing' ELSE 'hourly totals' END,
                  cluster.html_escape(coalesce(t.title, '')),
                  coalesce(cluster.html_escape(cluster.local_time(lower(p_span), t.timezone)),
                           'its first point'),
                  coalesce(cluster.html_escape(cluster.local_time(upper(p_span), t.timezone)),
                           'its last point'),
                  cluster.html_escape(p_error)),
           true
      FROM cluster.visible_feeds f
      LEFT JOIN cluster.current_feed_titles t ON t.feed_id = f.id
     WHERE f.id = p_feed_id
    ON CONFLICT (rule, subject, user_id) WHERE open DO NOTHING;
END $$;
COMMENT ON FUNCTION cluster.parked_notify(bigint, text, tstzrange, text) IS
    'Open the processing_parked notification of a feed''s owner (at most one open per feed).';

-- Claimed work of one feed put back into its stage's queue: processing's channels and buckets,
-- or the rollups' streams and point times.
CREATE OR REPLACE FUNCTION cluster.requeue(
    p_stage text, p_feed_id bigint, p_keys bigint[], p_spans tstzrange[]
) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF p_stage = 'processing' THEN
        INSERT INTO cluster.engine_work (feed_id, channel, buckets)
        SELECT p_feed_id, u.key::integer, u.span FROM unnest(p_keys, p_spans) AS u (key, span);
    ELSE
        INSERT INTO cluster.rollup_work (stream_id, span)
        SELECT u.key, u.span FROM unnest(p_keys, p_spans) AS u (key, span);
    END IF;
END $$;
COMMENT ON FUNCTION cluster.requeue(text, bigint, bigint[], tstzrange[]) IS
    'Put a feed''s claimed work of a stage (processing: channels and buckets; rollups: streams and point times) back into the stage''s queue.';

-- The claimed periods of one feed whose work of a stage failed: processing's (p_keys are its
-- channels, the spans their buckets) or the rollups' (p_keys are its streams, the spans their
-- point times). Recorded, put back into the stage's queue (where they wait with the feed's
-- later work), the owner notified. Earlier rows of the stage that a retry released and that
-- failed again are replaced.
CREATE OR REPLACE FUNCTION cluster.park(
    p_stage text, p_feed_id bigint, p_keys bigint[], p_spans tstzrange[], p_sqlstate text,
    p_error text
) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    v_count integer;
BEGIN
    DELETE FROM cluster.parked_work
     WHERE feed_id = p_feed_id AND stage = p_stage AND retried_at IS NOT NULL;
    INSERT INTO cluster.parked_work (feed_id, stage, channel, stream_id, span, sqlstate, error)
    SELECT p_feed_id, p_stage,
           CASE p_stage WHEN 'processing' THEN u.key::integer ELSE s.channel END,
           CASE p_stage WHEN 'rollups' THEN u.key END, u.span, p_sqlstate, p_error
      FROM unnest(p_keys, p_spans) AS u (key, span)
      LEFT JOIN cluster.streams s ON p_stage = 'rollups' AND s.id = u.key;
    GET DIAGNOSTICS v_count = ROW_COUNT;
    PERFORM cluster.requeue(p_stage, p_feed_id, p_keys, p_spans);
    PERFORM cluster.parked_notify(
        p_feed_id, p_stage, (SELECT range_merge(range_agg(s)) FROM unnest(p_spans) s), p_error);
    RETURN v_count;
END $$;
COMMENT ON FUNCTION cluster.park(text, bigint, bigint[], tstzrange[], text, text) IS
    'Park a feed''s failed work of a stage (processing: channels and buckets; rollups: streams and point times): recorded in cluster.parked_work, queued again, the owner notified; returns the rows parked.';

-- After a repair: the feed's parked rows are released (the claims take its work again) and the
-- raw and system streams of the parked processing periods get their rollups recomputed, so that
-- rows repaired by hand (ingest queues nothing for an UPDATE or DELETE of an analyst) reach
-- their hours too; the engine is woken. The rows stay, retried, until the work succeeds
-- (cluster.parked_cleared) or fails again (parked anew). Returns the rows released.
CREATE OR REPLACE FUNCTION cluster.engine_retry(p_feed_id bigint) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_count integer;
BEGIN
    WITH released AS (
        UPDATE cluster.parked_work SET retried_at = now()
         WHERE feed_id = p_feed_id AND retried_at IS NULL
        RETURNING stage, channel, span
    ), rolled AS (
        INSERT INTO cluster.rollup_work (stream_id, span)
        SELECT s.id, r.span
          FROM released r
          JOIN cluster.streams s
            ON s.feed_id = p_feed_id AND s.channel = r.channel AND s.type IN ('raw', 'system')
         WHERE r.stage = 'processing'
    )
    SELECT count(*) INTO v_count FROM released;
    IF v_count > 0 THEN
        PERFORM pg_notify('ep_engine_work', '');
    END IF;
    RETURN v_count;
END $$;
COMMENT ON FUNCTION cluster.engine_retry(bigint) IS
    'Release a parked feed''s work after a repair (admin engine retry): the engine claims it again; returns the rows released (0: nothing parked).';

-- The engine's work of a stage succeeded for these feeds: their retried rows of that stage go,
-- and a feed left with no parked row has its notification closed.
CREATE OR REPLACE FUNCTION cluster.parked_cleared(p_stage text, p_feeds bigint[])
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    v_count integer;
BEGIN
    DELETE FROM cluster.parked_work
     WHERE stage = p_stage AND feed_id = ANY (p_feeds) AND retried_at IS NOT NULL;
    GET DIAGNOSTICS v_count = ROW_COUNT;
    UPDATE cluster.notifications n SET open = false
     WHERE n.rule = 'processing_parked' AND n.open AND n.feed_id = ANY (p_feeds)
       AND NOT EXISTS (SELECT FROM cluster.parked_work p
                        WHERE p.feed_id = n.feed_id AND p.stage IN ('processing', 'rollups'));
    RETURN v_count;
END $$;
COMMENT ON FUNCTION cluster.parked_cleared(text, bigint[]) IS
    'Forget the retried parked rows of a stage for feeds whose work of that stage succeeded; close the notification of a feed with none left. Returns the rows removed.';

-- One feed's work of a stage failed alone outside the data's classes (core/faults.py,
-- blames_the_work: a program limit, out of memory, a statement timeout): counted in
-- cluster.work_failures. At p_park_after failures in a row with one SQLSTATE it is parked as a
-- data error is (cluster.park: recorded, queued, the owner told); before, it is only queued
-- again for the next round. True when parked.
CREATE OR REPLACE FUNCTION cluster.work_failed(
    p_stage text, p_feed_id bigint, p_keys bigint[], p_spans tstzrange[], p_sqlstate text,
    p_error text, p_park_after integer
) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    v_failures integer;
BEGIN
    INSERT INTO cluster.work_failures AS f (feed_id, stage, sqlstate, failures, error)
    VALUES (p_feed_id, p_stage, p_sqlstate, 1, p_error)
    ON CONFLICT (feed_id, stage) DO UPDATE
       SET failures = CASE WHEN f.sqlstate = EXCLUDED.sqlstate THEN f.failures + 1 ELSE 1 END,
           sqlstate = EXCLUDED.sqlstate, error = EXCLUDED.error, failed_at = now()
    RETURNING failures INTO v_failures;
    IF v_failures < p_park_after THEN
        PERFORM cluster.requeue(p_stage, p_feed_id, p_keys, p_spans);
        RETURN false;
    END IF;
    DELETE FROM cluster.work_failures WHERE feed_id = p_feed_id AND stage = p_stage;
    PERFORM cluster.park(p_stage, p_feed_id, p_keys, p_spans, p_sqlstate, p_error);
    RETURN true;
END $$;
COMMENT ON FUNCTION cluster.work_failed(text, bigint, bigint[], tstzrange[], text, text, integer) IS
    'Count a failure of a feed''s work of a stage outside the data''s classes: queued again, or parked (cluster.park) at p_park_after failures in a row with one SQLSTATE; true when parked.';

-- The work of a stage succeeded for these feeds: their failures in a row are forgotten. One
-- index probe per feed of a table that is empty while every feed computes.
CREATE OR REPLACE FUNCTION cluster.work_succeeded(p_stage text, p_feeds bigint[])
RETURNS void LANGUAGE sql AS $$
    DELETE FROM cluster.work_failures WHERE stage = p_stage AND feed_id = ANY (p_feeds)
$$;
COMMENT ON FUNCTION cluster.work_succeeded(text, bigint[]) IS
    'Forget the failures in a row (cluster.work_failures) of the feeds whose work of a stage succeeded.';

-- Compaction or retention (p_stage) failed on one stream's days, whatever the SQLSTATE short of
-- the server's state (engine/parking.py, skip_stream): the stream is parked for that stage, the
-- rounds skip it until `admin engine retry` releases it, and the gauge of parked feeds counts it.
-- Nothing is queued (a round finds its days again) and nobody is told: the stream's points
-- stay readable where they are; this is the operators' work (docs/operations.md#epfeedparked).
CREATE OR REPLACE FUNCTION cluster.park_stream(
    p_stage text, p_stream_id bigint, p_span tstzrange, p_sqlstate text, p_error text
) RETURNS void LANGUAGE sql AS $$
    DELETE FROM cluster.parked_work
     WHERE stage = p_stage AND stream_id = p_stream_id AND retried_at IS NOT NULL;
    INSERT INTO cluster.parked_work (feed_id, stage, channel, stream_id, span, sqlstate, error)
    SELECT s.feed_id, p_stage, s.channel, s.id, p_span, p_sqlstate, p_error
      FROM cluster.streams s WHERE s.id = p_stream_id;
$$;
COMMENT ON FUNCTION cluster.park_stream(text, bigint, tstzrange, text, text) IS
    'Park a stream whose compaction or retention failed: the rounds of that stage skip it until admin engine retry.';

-- A round of compaction or retention is over: the retried rows of its stage go, but for the
-- streams that failed again in it (p_failed).
CREATE OR REPLACE FUNCTION cluster.parked_streams_cleared(p_stage text, p_failed bigint[])
RETURNS void LANGUAGE sql AS $$
    DELETE FROM cluster.parked_work
     WHERE stage = p_stage AND retried_at IS NOT NULL AND NOT (stream_id = ANY (p_failed));
$$;
COMMENT ON FUNCTION cluster.parked_streams_cleared(text, bigint[]) IS
    'After a round of compaction or retention: forget its retried parked rows, but for the streams that failed again.';
