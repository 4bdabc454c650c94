-- Text the cluster's messages share (the notification rules' and the parked feeds' HTML):
-- escaped HTML, local times. Before 21_engine_parking.sql and every other file that calls them.
-- Re-applied by every `migrate`, after the numbered migrations: the one current definition.

CREATE OR REPLACE FUNCTION cluster.html_escape(value text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT replace(replace(replace(replace(replace(value, '&', '&amp;'), '<', '&lt;'), '>', '&gt;'),
                   '"', '&quot;'), '''', '&#39;')
$$;
COMMENT ON FUNCTION cluster.html_escape(text) IS 'Text made safe to put into HTML content and attributes.';

CREATE OR REPLACE FUNCTION cluster.local_time(ts timestamptz, zone text) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT to_char(ts AT TIME ZONE coalesce(zone, 'UTC'), 'YYYY-MM-DD HH24:MI') || ' '
           || coalesce(zone, 'UTC')
$$;
COMMENT ON FUNCTION cluster.local_time(timestamptz, text) IS 'A time as a feed''s owner reads it, in the feed''s time zone.';
