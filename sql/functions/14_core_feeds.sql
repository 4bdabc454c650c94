-- Who sees a feed, and a feed's current title: below every domain that reads them (the data
-- API, the notification rules, the engine's parked feeds, the views of 90_core_views.sql), so
-- that no definition reads one that a later file makes (tests/unit/test_layers.py).
-- Re-applied by every `migrate`, after the numbered migrations: the one current definition.
-- CREATE OR REPLACE VIEW keeps their columns; changing one needs a DROP VIEW ... CASCADE in a
-- new numbered migration (90_core_views.sql makes the views that read them again).

-- Who sees a feed, written once: the data API, the notification rules and the views that
-- serve a feed's owner read feeds through these two, never cluster.feeds itself (a second copy
-- that drifts is a tenant leak; tests/unit/test_feed_visibility.py fails on such a query).
-- While its homebase is registered with the forwarder a feed is hidden from everyone, admins
-- included: its data goes to the forwarder's customer then (docs/forwarder.md).
-- Both are plain SQL that PostgreSQL inlines (the function is STABLE and not STRICT), so a
-- query through them is planned as the anti-join written into it would be: the data
-- endpoint's statement kept its scans and estimated cost (docs/api.md#queries). The
-- function comes after the view its body reads: a body is checked when it is created.
CREATE OR REPLACE VIEW cluster.visible_feeds AS
SELECT f.id, f.owner_id, f.homebase_sn, f.subscription_from, f.subscription_to, f.created_at
  FROM cluster.feeds f
 WHERE NOT EXISTS (SELECT FROM forwarder.registrations r WHERE r.homebase_sn = f.homebase_sn);
COMMENT ON VIEW cluster.visible_feeds IS 'The feeds their owners see: every feed but those whose homebase is registered with the forwarder (hidden from owners and admins alike meanwhile). The data API and the notification rules read feeds only through it; join it on feed_id to keep what users see. One user''s: cluster.user_feeds(user_id, is_admin).';

CREATE OR REPLACE FUNCTION cluster.user_feeds(user_id bigint, is_admin boolean)
RETURNS TABLE (id bigint, owner_id bigint, homebase_sn text, subscription_from timestamptz,
               subscription_to timestamptz, created_at timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT v.id, v.owner_id, v.homebase_sn, v.subscription_from, v.subscription_to, v.created_at
      FROM cluster.visible_feeds v
     WHERE v.owner_id = user_feeds.user_id OR user_feeds.is_admin
$$;
COMMENT ON FUNCTION cluster.user_feeds(bigint, boolean) IS 'The feeds a user sees through the data API: their own visible feeds (cluster.visible_feeds), or every visible feed when is_admin.';

CREATE OR REPLACE VIEW cluster.current_feed_titles AS
SELECT feed_id, title, timezone FROM cluster.feed_configs WHERE upper_inf(validity);
COMMENT ON VIEW cluster.current_feed_titles IS 'Each feed''s current title and time zone.';
