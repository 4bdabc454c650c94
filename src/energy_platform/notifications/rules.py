"""Notification rules, evaluated by the engine every few seconds in set-based SQL.

No rule speaks of a feed its owner does not see: the rules read feeds through
``cluster.visible_feeds`` (docs/notifications.md). State rules (homebase offline, channel silent,
subscription ending) hold at most one open notification per rule, subject and user, and close it
when the condition clears; event rules
(back online, power change, unusual consumption) create closed notifications. Content is HTML;
every inserted value passes through ``cluster.html_escape``.
"""

from __future__ import annotations

import asyncio

import asyncpg
import structlog
from asyncpg.pool import PoolConnectionProxy

from energy_platform.core.background import Periodic
from energy_platform.core.db.locks import LockKey
from energy_platform.core.settings import DatabaseSettings, RulesSettings

log = structlog.get_logger()
# One evaluation at a time across engine processes; a busy lock just skips a round.
LOCK = "SELECT pg_try_advisory_xact_lock($1)"

OFFLINE_OPEN = """
INSERT INTO cluster.notifications (user_id, feed_id, rule, subject, title, content, open)
SELECT a.owner_id, a.feed_id, 'homebase_offline', a.homebase_sn, 'Homebase offline',
       format('<p>Homebase <b>%s</b> of <b>%s</b> has sent nothing and not booted since %s.</p>',
              cluster.html_escape(a.homebase_sn), cluster.html_escape(coalesce(t.title, '')),
              cluster.html_escape(cluster.local_time(a.last_seen, t.timezone))),
       true
  FROM cluster.homebase_activity a
  LEFT JOIN cluster.current_feed_titles t ON t.feed_id = a.feed_id
 WHERE a.last_seen < now() - make_interval(secs => $1)
ON CONFLICT (rule, subject, user_id) WHERE open DO NOTHING"""

# Closing the offline notification and announcing the return are one statement.
BACK_ONLINE = """
WITH back AS (
    UPDATE cluster.notifications n SET open = false
      FROM cluster.homebase_activity a
     WHERE n.rule = 'homebase_offline' AND n.open AND a.feed_id = n.feed_id
       AND a.last_seen >= now() - make_interval(secs => $1)
    RETURNING n.user_id, n.feed_id, n.subject, a.last_seen)
INSERT INTO cluster.notifications (user_id, feed_id, rule, subject, title, content)
SELECT b.user_id, b.feed_id, 'homebase_online', b.subject, 'Homebase back online',
       format('<p>Homebase <b>%s</b> of <b>%s</b> is back online (%s).</p>',
              cluster.html_escape(b.subject), cluster.html_escape(coalesce(t.title, '')),
              cluster.html_escape(cluster.local_time(b.last_seen, t.timezone)))
  FROM back b
  LEFT JOIN cluster.current_feed_titles t ON t.feed_id = b.feed_id"""

# A channel is silent only while its homebase is otherwise alive (else "offline" says it all).
SILENT_OPEN = """
INSERT INTO cluster.notifications (user_id, feed_id, rule, subject, title, content, open)
SELECT a.owner_id, a.feed_id, 'channel_silent', a.feed_id || ':' || c.channel, 'Channel silent',
       format('<p>Channel <b>%s</b> of <b>%s</b> has sent nothing since %s.</p>',
              c.channel, cluster.html_escape(coalesce(t.title, '')),
              cluster.html_escape(cluster.local_time(c.last_ts, t.timezone))),
       true
  FROM cluster.channel_activity c
  JOIN cluster.homebase_activity a ON a.feed_id = c.feed_id
  LEFT JOIN cluster.current_feed_titles t ON t.feed_id = a.feed_id
 WHERE c.last_ts < now() - make_interval(secs => $1)
   AND a.last_seen >= now() - make_interval(secs => $2)
ON CONFLICT (rule, subject, user_id) WHERE open DO NOTHING"""

SILENT_CLOSE = """
UPDATE cluster.notifications n SET open = false
  FROM cluster.channel_activity c
 WHERE n.rule = 'channel_silent' AND n.open AND n.subject = c.feed_id || ':' || c.channel
   AND c.last_ts >= now() - make_interval(secs => $1)"""

SUBSCRIPTION_OPEN = """
INSERT INTO cluster.notifications (user_id, feed_id, rule, subject, title, content, open)
SELECT f.owner_id, f.id, 'subscription_ending',
       f.id || ':' || extract(epoch FROM f.subscription_to)::bigint, 'Subscription ending',
       format('<p>The subscription of <b>%s</b> ends on %s.</p>',
              cluster.html_escape(coalesce(t.title, '')),
              cluster.html_escape(cluster.local_time(f.subscription_to, t.timezone))),
       true
  FROM cluster.visible_feeds f
  LEFT JOIN cluster.current_feed_titles t ON t.feed_id = f.id
 WHERE f.subscription_to > now() AND f.subscription_to <= now() + make_interval(days => $1)
ON CONFLICT (rule, subject, user_id) WHERE open DO NOTHING"""

# Closed when the subscription has ended or was extended (its subject names the old end).
# Every feed's, hidden ones too: `open` is not shown to users, so closing tells no one anything.
SUBSCRIPTION_CLOSE = """
UPDATE cluster.notifications n SET open = false
  FROM cluster.feeds f
 WHERE n.rule = 'subscription_ending' AND n.open AND n.feed_id = f.id
   AND (f.subscription_to <= now()
        OR n.subject <> f.id || ':' || extract(epoch FROM f.subscription_to)::bigint)"""

# Events in id order after the rule's position. Events younger than a moment are left for the
# next round: an id taken by a transaction that commits later must not be skipped.
POWER_CHANGE = """
WITH start AS (
    SELECT coalesce((SELECT position FROM cluster.rule_positions WHERE rule = 'power_change'), 0)
           AS position),
fresh AS (
    SELECT e.id FROM cluster.device_events e, start
     WHERE e.id > start.position AND e.event = 'POWER_CHANGE'
       AND e.received_at < now() - interval '1 second'),
compared AS (
    SELECT e.id, e.device_sn, e.ts, e.phases,
           lag(e.phases) OVER (PARTITION BY e.device_sn ORDER BY e.ts, e.id) AS before
      FROM cluster.device_events e
     WHERE e.event = 'POWER_CHANGE'
       AND e.device_sn IN (SELECT d.device_sn FROM cluster.device_events d
                            WHERE d.id IN (SELECT id FROM fresh))),
changes AS (
    SELECT c.id, c.device_sn, c.ts,
           ARRAY(SELECT 'L' || i FROM generate_series(1, 3) i
                  WHERE coalesce(c.before[i], true) AND NOT c.phases[i]) AS lost,
           ARRAY(SELECT 'L' || i FROM generate_series(1, 3) i
                  WHERE c.before[i] = false AND c.phases[i]) AS restored
      FROM compared c WHERE c.id IN (SELECT id FROM fresh)),
created AS (
    INSERT INTO cluster.notifications (user_id, feed_id, rule, subject, title, content)
    SELECT f.owner_id, f.id, 'power_change', c.device_sn || ':' || c.id,
           CASE WHEN cardinality(c.lost) > 0 AND cardinality(c.restored) > 0
                THEN 'Power lost on ' || array_to_string(c.lost, ', ')
                     || ', restored on ' || array_to_string(c.restored, ', ')
                WHEN cardinality(c.lost) > 0 THEN 'Power lost on ' || array_to_string(c.lost, ', ')
                ELSE 'Power restored on ' || array_to_string(c.restored, ', ') END,
           format('<p>Device <b>%s</b> of <b>%s</b> reported at %s: %s%s.</p>',
                  cluster.html_escape(c.device_sn), cluster.html_escape(coalesce(t.title, '')),
                  cluster.html_escape(cluster.local_time(c.ts, t.timezone)),
                  CASE WHEN cardinality(c.lost) > 0
                       THEN 'power lost on ' || array_to_string(c.lost, ', ') ELSE '' END,
                  CASE WHEN cardinality(c.restored) > 0
                       THEN CASE WHEN cardinality(c.lost) > 0 THEN '; ' ELSE '' END
                            || 'power restored on ' || array_to_string(c.restored, ', ')
                       ELSE '' END)
      FROM changes c
      JOIN cluster.visible_feeds f ON f.homebase_sn = c.device_sn
      LEFT JOIN cluster.current_feed_titles t ON t.feed_id = f.id
     WHERE cardinality(c.lost) + cardinality(c.restored) > 0
    RETURNING 1)
INSERT INTO cluster.rule_positions (rule, position)
SELECT 'power_change', coalesce(max(fresh.id), (SELECT position FROM start)) FROM fresh
ON CONFLICT (rule) DO UPDATE SET position = EXCLUDED.position"""


# Once a feed's local day is over (and processing has settled), its consumption is taken from
# the processed power streams (one per channel: the combined one, or the only one) and judged
# against the median of the 28 days before; at least 7 of them must have data.
UNUSUAL_CONSUMPTION = """
WITH due AS (
    SELECT f.id AS feed_id, f.owner_id, t.timezone, t.title,
           (now() AT TIME ZONE t.timezone)::date - 1 AS day
      FROM cluster.visible_feeds f
      JOIN cluster.current_feed_titles t ON t.feed_id = f.id
     WHERE (now() AT TIME ZONE t.timezone)::time >= make_interval(secs => $2::int)::time
       AND NOT EXISTS (
           SELECT 1 FROM cluster.daily_consumption d
            WHERE d.feed_id = f.id AND d.day = (now() AT TIME ZONE t.timezone)::date - 1)
     ORDER BY f.id
     LIMIT $3),
totals AS (
    SELECT d.feed_id, d.day,
           (SELECT sum(p.value)
              FROM cluster.channel_totals s
             CROSS JOIN LATERAL cluster.stream_points(
                       s.stream_id, d.day::timestamp AT TIME ZONE d.timezone,
                       (d.day + 1)::timestamp AT TIME ZONE d.timezone) p
              JOIN cluster.stream_configs c ON c.stream_id = s.stream_id AND c.validity @> p.ts
             WHERE s.feed_id = d.feed_id AND s.quantity = 'consumption'
               AND c.medium = 'power') AS wh
      FROM due d),
stored AS (
    INSERT INTO cluster.daily_consumption (feed_id, day, energy_wh)
    SELECT feed_id, day, wh FROM totals
    ON CONFLICT DO NOTHING
    RETURNING feed_id, day, energy_wh),
judged AS (
    SELECT s.feed_id, s.day, s.energy_wh, h.median, h.days
      FROM stored s
      CROSS JOIN LATERAL (
          SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY energy_wh) AS median, count(*) AS days
            FROM cluster.daily_consumption
           WHERE feed_id = s.feed_id AND energy_wh IS NOT NULL
             AND day >= s.day - 28 AND day < s.day) h)
INSERT INTO cluster.notifications (user_id, feed_id, rule, subject, title, content)
SELECT d.owner_id, j.feed_id, 'unusual_consumption', j.feed_id || ':' || j.day,
       'Unusual consumption',
       format('<p><b>%s</b> used %s kWh on %s, over %s times its usual %s kWh a day.</p>',
              cluster.html_escape(coalesce(d.title, '')), round((j.energy_wh / 1000)::numeric, 1),
              j.day, $1::float8, round((j.median / 1000)::numeric, 1))
  FROM judged j
  JOIN due d ON d.feed_id = j.feed_id
 WHERE j.days >= 7 AND j.median > 0 AND j.energy_wh > $1::float8 * j.median"""


async def evaluate(conn: PoolConnectionProxy, settings: RulesSettings) -> bool:
    """One round of every rule in one transaction; False when another process holds the round."""
    async with conn.transaction():
        if not await conn.fetchval(LOCK, LockKey.NOTIFICATION_RULES):
            return False
        await conn.execute(BACK_ONLINE, settings.offline_after)
        await conn.execute(OFFLINE_OPEN, settings.offline_after)
        await conn.execute(SILENT_CLOSE, settings.silent_after)
        await conn.execute(SILENT_OPEN, settings.silent_after, settings.offline_after)
        await conn.execute(SUBSCRIPTION_CLOSE)
        await conn.execute(SUBSCRIPTION_OPEN, settings.subscription_days)
        await conn.execute(POWER_CHANGE)
        await conn.execute(
            UNUSUAL_CONSUMPTION,
            settings.unusual_factor,
            settings.unusual_settle,
            settings.unusual_batch,
        )
    return True


def notification_rules(database: DatabaseSettings, settings: RulesSettings) -> Periodic:
    """The engine's notification rules: :func:`evaluate` every ``settings.interval`` seconds."""

    async def work(pool: asyncpg.Pool, _: asyncio.Event) -> dict[str, int]:
        async with pool.acquire() as conn:
            await evaluate(conn, settings)
        return {}

    return Periodic("rules", database, settings.interval, work)
