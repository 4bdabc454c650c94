-- Notifications for users, the rules' bookkeeping, and what the rules read.

CREATE TABLE cluster.notifications (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id    bigint NOT NULL REFERENCES cluster.users (id) ON DELETE CASCADE,
    feed_id    bigint REFERENCES cluster.feeds (id) ON DELETE CASCADE,
    rule       text NOT NULL CHECK (rule IN ('homebase_offline', 'homebase_online',
                   'channel_silent', 'power_change', 'subscription_ending', 'unusual_consumption')),
    subject    text NOT NULL,
    title      text NOT NULL,
    content    text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    open       boolean NOT NULL DEFAULT false,
    read       boolean NOT NULL DEFAULT false,
    archived   boolean NOT NULL DEFAULT false
);
COMMENT ON TABLE cluster.notifications IS 'What the rules told each user; read and archived are the user''s flags.';
COMMENT ON COLUMN cluster.notifications.id IS 'Notification id, as in /users/{user_id}/notifications/{id}.';
COMMENT ON COLUMN cluster.notifications.user_id IS 'The user it is for (the feed''s owner).';
COMMENT ON COLUMN cluster.notifications.feed_id IS 'The feed it is about; its current title is the notification''s feed_title.';
COMMENT ON COLUMN cluster.notifications.rule IS 'The rule that created it.';
COMMENT ON COLUMN cluster.notifications.subject IS 'What it is about within its rule: a homebase SN, a feed and channel, a device, a day.';
COMMENT ON COLUMN cluster.notifications.title IS 'Short title.';
COMMENT ON COLUMN cluster.notifications.content IS 'HTML; every inserted value is escaped.';
COMMENT ON COLUMN cluster.notifications.created_at IS 'When the rule created it.';
COMMENT ON COLUMN cluster.notifications.open IS 'For state rules: the condition still holds. At most one open notification per rule, subject and user.';
COMMENT ON COLUMN cluster.notifications.read IS 'Whether the user read it.';
COMMENT ON COLUMN cluster.notifications.archived IS 'Whether the user archived it.';
CREATE UNIQUE INDEX notifications_one_open ON cluster.notifications (rule, subject, user_id) WHERE open;
CREATE INDEX notifications_user ON cluster.notifications (user_id, created_at);

CREATE TABLE cluster.rule_positions (
    rule     text PRIMARY KEY,
    position bigint NOT NULL
);
COMMENT ON TABLE cluster.rule_positions IS 'How far event-driven rules have read their input (e.g. the last device event id).';
COMMENT ON COLUMN cluster.rule_positions.rule IS 'The rule.';
COMMENT ON COLUMN cluster.rule_positions.position IS 'Last input row id the rule has handled.';

CREATE TABLE cluster.channel_activity (
    feed_id  bigint NOT NULL REFERENCES cluster.feeds (id) ON DELETE CASCADE,
    channel  integer NOT NULL,
    last_ts  timestamptz NOT NULL,
    PRIMARY KEY (feed_id, channel)
);
COMMENT ON TABLE cluster.channel_activity IS 'The newest point time per feed and channel, kept by ingest; the channel-silent rule reads it.';
COMMENT ON COLUMN cluster.channel_activity.feed_id IS 'The feed.';
COMMENT ON COLUMN cluster.channel_activity.channel IS 'Homebase channel.';
COMMENT ON COLUMN cluster.channel_activity.last_ts IS 'Time of the newest point stored for the channel.';

CREATE FUNCTION cluster.html_escape(value text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT replace(replace(replace(replace(replace(value, '&', '&amp;'), '<', '&lt;'), '>', '&gt;'),
                   '"', '&quot;'), '''', '&#39;')
$$;
COMMENT ON FUNCTION cluster.html_escape(text) IS 'Text made safe to put into HTML content and attributes.';

-- When a homebase (or CoAP device) last showed life: data, a boot, a configuration request.
-- Heartbeats are provisioning's; in the default one-database deployment the rules read them here.
CREATE VIEW cluster.homebase_activity AS
SELECT f.id AS feed_id, f.owner_id, f.homebase_sn,
       greatest(p.last_data_at, h.last_boot, c.last_config) AS last_seen
  FROM cluster.feeds f
  LEFT JOIN cluster.homebase_presence p ON p.homebase_sn = f.homebase_sn
  LEFT JOIN provisioning.homebases h ON h.sn = f.homebase_sn
  LEFT JOIN provisioning.coap_devices c ON c.sn = f.homebase_sn
 WHERE NOT EXISTS (SELECT 1 FROM forwarder.registrations r WHERE r.homebase_sn = f.homebase_sn);
COMMENT ON VIEW cluster.homebase_activity IS 'Per feed (not forwarded): the last sign of life of its homebase or device.';

CREATE VIEW cluster.current_feed_titles AS
SELECT feed_id, title, timezone FROM cluster.feed_configs WHERE upper_inf(validity);
COMMENT ON VIEW cluster.current_feed_titles IS 'Each feed''s current title and time zone.';

CREATE FUNCTION cluster.local_time(ts timestamptz, zone text) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT to_char(ts AT TIME ZONE coalesce(zone, 'UTC'), 'YYYY-MM-DD HH24:MI') || ' '
           || coalesce(zone, 'UTC')
$$;
COMMENT ON FUNCTION cluster.local_time(timestamptz, text) IS 'A time as a feed''s owner reads it, in the feed''s time zone.';

CREATE TABLE cluster.daily_consumption (
    feed_id   bigint NOT NULL REFERENCES cluster.feeds (id) ON DELETE CASCADE,
    day       date NOT NULL,
    energy_wh double precision,
    PRIMARY KEY (feed_id, day)
);
COMMENT ON TABLE cluster.daily_consumption IS 'Electricity consumed per feed and local day, taken once the day is over; the unusual-consumption rule compares each day with the median of the 28 before it.';
COMMENT ON COLUMN cluster.daily_consumption.feed_id IS 'The feed.';
COMMENT ON COLUMN cluster.daily_consumption.day IS 'The day in the feed''s time zone.';
COMMENT ON COLUMN cluster.daily_consumption.energy_wh IS 'Wh from the feed''s power consumption streams (one per channel); null when there was no data.';

-- The engine queues configuration changes in its own work table: only raw streams come here.
COMMENT ON COLUMN cluster.dirty_ranges.stream_id IS 'The raw stream whose points were written.';
