"""Notification rules, evaluated by the engine every few seconds in set-based SQL.

No rule speaks of a feed its owner does not see: the rules read feeds through
``cluster.visible_feeds`` (docs/notifications.md). State rules (homebase offline, channel silent,
subscription ending) hold at most one open notification per rule, subject and user, and close it
when the condition clears; event rules (back online, power change, unusual consumption, prices
published) create closed notifications. Content is HTML;
every inserted value passes through ``cluster.html_escape``.

One feed's data never stops the rules for the others (docs/notifications.md#parked-rules): each
statement runs in a savepoint, and one that fails on data is narrowed down to the feeds it
fails on, which are parked for that rule (``cluster.parked_notification_rules``) until
``admin notifications retry``; the statement then runs without them, and so does the round.
Every statement runs under ``EP_ENGINE_STATEMENT_TIMEOUT``; one that fails on its own work (a
timeout, 54001, 53200: ``core/faults.py::blames_the_work``) is narrowed down and parked the
same way, since a rule's next round runs the same statement over the same rows again.
"""

from __future__ import annotations

import asyncio
from typing import NamedTuple

import asyncpg
import structlog
from asyncpg.pool import PoolConnectionProxy

from energy_platform.core.background import Periodic
from energy_platform.core.db.live_log import LIVE_PUBLISH
from energy_platform.core.db.locks import LockKey
from energy_platform.core.faults import blames_the_data, blames_the_work
from energy_platform.core.settings import DatabaseSettings, EngineSettings, NotificationsSettings

log = structlog.get_logger()
RULES = (
    "homebase_offline",
    "channel_silent",
    "subscription_ending",
    "power_change",
    "unusual_consumption",
    "prices_published",
)
"""The rules a feed can be parked for (homebase_offline covers its back-online notice too)."""
# One evaluation at a time across engine processes; a busy lock just skips a round.
LOCK = "SELECT pg_try_advisory_xact_lock($1)"
# EP_ENGINE_STATEMENT_TIMEOUT (milliseconds) for the round's transaction, and no JIT: the
# planner's estimates for prices_published (its functions' default row counts) pass JIT's
# threshold, and it was compiled at every round, for longer than it runs: 230 ms a round of JIT
# on a database of a few test feeds, 14 of its 12.9 s (61 rounds, tests/integration/notifications).
TUNE = "SELECT set_config('statement_timeout', $1, true), set_config('jit', 'off', true)"

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
   AND NOT EXISTS (SELECT 1 FROM cluster.parked_notification_rules k
                    WHERE k.rule = 'homebase_offline' AND k.feed_id = a.feed_id)
   AND ($2::bigint[] IS NULL OR a.feed_id = ANY ($2))
ON CONFLICT (rule, subject, user_id) WHERE open DO NOTHING"""

# Closing the offline notification and announcing the return are one statement.
BACK_ONLINE = """
WITH back AS (
    UPDATE cluster.notifications n SET open = false
      FROM cluster.homebase_activity a
     WHERE n.rule = 'homebase_offline' AND n.open AND a.feed_id = n.feed_id
       AND a.last_seen >= now() - make_interval(secs => $1)
       AND NOT EXISTS (SELECT 1 FROM cluster.parked_notification_rules k
                        WHERE k.rule = 'homebase_offline' AND k.feed_id = n.feed_id)
       AND ($2::bigint[] IS NULL OR n.feed_id = ANY ($2))
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
   AND NOT EXISTS (SELECT 1 FROM cluster.parked_notification_rules k
                    WHERE k.rule = 'channel_silent' AND k.feed_id = a.feed_id)
   AND ($3::bigint[] IS NULL OR a.feed_id = ANY ($3))
ON CONFLICT (rule, subject, user_id) WHERE open DO NOTHING"""

SILENT_CLOSE = """
UPDATE cluster.notifications n SET open = false
  FROM cluster.channel_activity c
 WHERE n.rule = 'channel_silent' AND n.open AND n.subject = c.feed_id || ':' || c.channel
   AND c.last_ts >= now() - make_interval(secs => $1)
   AND NOT EXISTS (SELECT 1 FROM cluster.parked_notification_rules k
                    WHERE k.rule = 'channel_silent' AND k.feed_id = c.feed_id)
   AND ($2::bigint[] IS NULL OR c.feed_id = ANY ($2))"""

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
   AND NOT EXISTS (SELECT 1 FROM cluster.parked_notification_rules k
                    WHERE k.rule = 'subscription_ending' AND k.feed_id = f.id)
   AND ($2::bigint[] IS NULL OR f.id = ANY ($2))
ON CONFLICT (rule, subject, user_id) WHERE open DO NOTHING"""

# Closed when the subscription has ended or was extended (its subject names the old end).
# Every feed's, hidden ones too: `open` is not shown to users, so closing tells no one anything.
SUBSCRIPTION_CLOSE = """
UPDATE cluster.notifications n SET open = false
  FROM cluster.feeds f
 WHERE n.rule = 'subscription_ending' AND n.open AND n.feed_id = f.id
   AND (f.subscription_to <= now()
        OR n.subject <> f.id || ':' || extract(epoch FROM f.subscription_to)::bigint)
   AND NOT EXISTS (SELECT 1 FROM cluster.parked_notification_rules k
                    WHERE k.rule = 'subscription_ending' AND k.feed_id = f.id)
   AND ($1::bigint[] IS NULL OR f.id = ANY ($1))"""

# Events in id order after the rule's position. Events younger than a moment are left for the
# next round: an id taken by a transaction that commits later must not be skipped.
# The rule reads the events since its last round plus the one before each, however long the
# log (tests/integration/engine/test_event_log.py: 6 rows for 3 new events after 100,000, where
# lag() over each device's whole history read 100,019, every round, in the one cluster-wide
# rules transaction). The fresh events are an id range of the primary key (the position as a
# scalar subquery, an index condition; joined as a row it was a filter over the whole log), at
# most 10,000 a round, the rest the next round's. Each is compared with the event before it in
# its device's time order: one backward probe of the (device_sn, ts, event) key, which also
# makes the times of one device's POWER_CHANGE events unique, as lag()'s order was.
POWER_CHANGE = """
WITH start AS (
    SELECT coalesce((SELECT position FROM cluster.rule_positions WHERE rule = 'power_change'), 0)
           AS position),
fresh AS (
    SELECT e.id, e.device_sn, e.ts, e.phases FROM cluster.device_events e
     WHERE e.id > (SELECT position FROM start) AND e.event = 'POWER_CHANGE'
       AND e.received_at < now() - interval '1 second'
     ORDER BY e.id LIMIT 10000),
compared AS (
    SELECT f.id, f.device_sn, f.ts, f.phases, b.phases AS before
      FROM fresh f
      LEFT JOIN LATERAL (
          SELECT p.phases FROM cluster.device_events p
           WHERE p.device_sn = f.device_sn AND p.event = 'POWER_CHANGE' AND p.ts < f.ts
           ORDER BY p.ts DESC LIMIT 1) b ON true),
changes AS (
    SELECT c.id, c.device_sn, c.ts,
           ARRAY(SELECT 'L' || i FROM generate_series(1, 3) i
                  WHERE coalesce(c.before[i], true) AND NOT c.phases[i]) AS lost,
           ARRAY(SELECT 'L' || i FROM generate_series(1, 3) i
                  WHERE c.before[i] = false AND c.phases[i]) AS restored
      FROM compared c),
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
       AND NOT EXISTS (SELECT 1 FROM cluster.parked_notification_rules k
                        WHERE k.rule = 'power_change' AND k.feed_id = f.id)
       AND ($1::bigint[] IS NULL OR f.id = ANY ($1))
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
       AND NOT EXISTS (SELECT 1 FROM cluster.parked_notification_rules k
                        WHERE k.rule = 'unusual_consumption' AND k.feed_id = f.id)
       AND ($4::bigint[] IS NULL OR f.id = ANY ($4))
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


# Once a day per feed on a market tariff: when its area's prices cover the whole of the feed's
# next local day, its owner is told that day's cheapest 3 hours and any runs of negative
# prices, all in (cluster.cheapest_window and cluster.negative_windows, the plan's quarters).
# The subject is the feed and that day: told once, read or not, whichever import completed
# the day. Each feed told gets its live event `prices` in the same statement (staged, numbered
# by LIVE_PUBLISH at the round's end): an open page redraws once, when the notice is written,
# and a statement rolled back for a failing feed takes its events with it.
PRICES_PUBLISHED = """
WITH due AS (
    SELECT f.id AS feed_id, f.owner_id, t.title, t.timezone, x.area,
           (now() AT TIME ZONE t.timezone)::date + 1 AS day
      FROM cluster.visible_feeds f
      JOIN cluster.current_feed_titles t ON t.feed_id = f.id
      JOIN cluster.tariffs x
        ON x.feed_id = f.id AND x.medium = 'power' AND x.area IS NOT NULL
       AND x.validity @> now()
     WHERE NOT EXISTS (SELECT 1 FROM cluster.parked_notification_rules k
                        WHERE k.rule = 'prices_published' AND k.feed_id = f.id)
       AND ($1::bigint[] IS NULL OR f.id = ANY ($1))
), untold AS MATERIALIZED (
    SELECT d.* FROM due d
     WHERE NOT EXISTS (SELECT 1 FROM cluster.notifications n
                        WHERE n.rule = 'prices_published' AND n.user_id = d.owner_id
                          AND n.subject = d.feed_id || ':' || d.day)
), covered AS (
    -- Once per area and local day (a round runs every few seconds; an area's feeds share
    -- their days), not once per feed.
    SELECT a.area, a.day, a.timezone
      FROM (SELECT DISTINCT area, day, timezone FROM untold) a
     WHERE cluster.area_covers(a.area, a.day::timestamp AT TIME ZONE a.timezone,
                               (a.day + 1)::timestamp AT TIME ZONE a.timezone)
), ready AS (
    SELECT u.* FROM untold u
      JOIN covered c ON c.area = u.area AND c.day = u.day AND c.timezone = u.timezone
)
, told AS (
INSERT INTO cluster.notifications (user_id, feed_id, rule, subject, title, content)
SELECT r.owner_id, r.feed_id, 'prices_published', r.feed_id || ':' || r.day,
       'Tomorrow''s prices are in',
       format('<p>The prices of %s for <b>%s</b> are in.</p>%s%s',
              r.day, cluster.html_escape(coalesce(r.title, '')),
              (SELECT format('<p>The cheapest 3 hours: %s to %s, at %s a kWh on average.</p>',
                             to_char(w.start AT TIME ZONE r.timezone, 'HH24:MI'),
                             to_char(w.finish AT TIME ZONE r.timezone, 'HH24:MI'),
                             round(w.price::numeric, 4))
                 FROM cluster.cheapest_window(r.feed_id, r.day, 12) w),
              (SELECT '<p>Prices below zero: '
                      || string_agg(format('%s to %s (down to %s)',
                                           to_char(n.start AT TIME ZONE r.timezone, 'HH24:MI'),
                                           to_char(n.finish AT TIME ZONE r.timezone, 'HH24:MI'),
                                           round(n.lowest::numeric, 4)), ', ' ORDER BY n.start)
                      || '.</p>'
                 FROM cluster.negative_windows(r.feed_id, r.day) n))
  FROM ready r
RETURNING feed_id
)
SELECT cluster.live_stage_prices(array_agg(r.feed_id), array_agg(r.day))
  FROM ready r
 WHERE r.feed_id IN (SELECT feed_id FROM told)"""


# The feeds a failing statement is narrowed down among: every feed not yet parked for its rule
# (hidden ones too: SUBSCRIPTION_CLOSE reads them). Read only on a data error; it tells no one
# anything.
NARROWED_FEEDS = """
SELECT coalesce(array_agg(f.id ORDER BY f.id), '{}')
  FROM cluster.feeds f
 WHERE NOT EXISTS (SELECT 1 FROM cluster.parked_notification_rules k
                    WHERE k.rule = $1 AND k.feed_id = f.id)"""

PARK = """
INSERT INTO cluster.parked_notification_rules (rule, feed_id, sqlstate, error)
SELECT $1, d.feed_id, d.sqlstate, d.error
  FROM unnest($2::bigint[], $3::text[], $4::text[]) AS d(feed_id, sqlstate, error)
ON CONFLICT (rule, feed_id) DO NOTHING"""


class Statement(NamedTuple):
    """One set-based statement of a rule, over every feed; its last parameter narrows it down to
    some feeds (null: all of them), and it skips the feeds parked for ``rule``."""

    rule: str
    sql: str
    args: tuple[object, ...]


def statements(settings: NotificationsSettings) -> list[Statement]:
    """The rules' statements in the order of a round (a homebase back online is told before it
    can be found offline again; a notice is closed before a new one may open)."""
    return [
        Statement("homebase_offline", BACK_ONLINE, (settings.offline_after,)),
        Statement("homebase_offline", OFFLINE_OPEN, (settings.offline_after,)),
        Statement("channel_silent", SILENT_CLOSE, (settings.silent_after,)),
        Statement("channel_silent", SILENT_OPEN, (settings.silent_after, settings.offline_after)),
        Statement("subscription_ending", SUBSCRIPTION_CLOSE, ()),
        Statement("subscription_ending", SUBSCRIPTION_OPEN, (settings.subscription_days,)),
        Statement("power_change", POWER_CHANGE, ()),
        Statement(
            "unusual_consumption",
            UNUSUAL_CONSUMPTION,
            (settings.unusual_factor, settings.unusual_settle, settings.unusual_batch),
        ),
        Statement("prices_published", PRICES_PUBLISHED, ()),
    ]


async def evaluate(
    conn: PoolConnectionProxy, settings: NotificationsSettings, timeout_ms: str = "0"
) -> int | None:
    """One round of every rule in one transaction, each statement cancelled after
    ``timeout_ms`` milliseconds (0: never): the (rule, feed) pairs it parked, or None when
    another process holds the round."""
    parked = 0
    async with conn.transaction():
        if not await conn.fetchval(LOCK, LockKey.NOTIFICATION_RULES):
            return None
        await conn.execute(TUNE, timeout_ms)
        for statement in statements(settings):
            parked += await _isolated(conn, statement)
        # Last: the live events staged (prices_published's) are numbered under a lock held
        # from here to the commit; none staged, nothing locked.
        await conn.execute(LIVE_PUBLISH)
    return parked


async def _isolated(conn: PoolConnectionProxy, statement: Statement) -> int:
    """Run ``statement`` in a savepoint. A data error in it (core/faults.py) costs only the feeds
    it arises from: they are found by halving, parked for the rule, and the statement runs again
    without them; the round goes on. How many feeds it parked."""
    error = await _trial(conn, statement, None, keep=True)
    if error is None:
        return 0
    feeds: list[int] = await conn.fetchval(NARROWED_FEEDS, statement.rule)
    failing = await _failing(conn, statement, feeds)
    if not failing:
        raise error  # no one feed's: a fault of the rule itself, for the lifecycle
    for feed, cause in failing:
        log.warning(
            "notification rule parked for a feed",
            rule=statement.rule,
            feed=feed,
            error=f"{type(cause).__name__}: {cause}",
        )
    await conn.execute(
        PARK,
        statement.rule,
        [feed for feed, _ in failing],
        [str(cause.sqlstate) for _, cause in failing],
        [str(cause) for _, cause in failing],
    )
    error = await _trial(conn, statement, None, keep=True)
    if error is not None:
        raise error  # a feed that began to fail since the narrowing: the next round parks it
    return len(failing)


async def _failing(
    conn: PoolConnectionProxy, statement: Statement, feeds: list[int]
) -> list[tuple[int, asyncpg.PostgresError]]:
    """The feeds among ``feeds`` on which ``statement`` fails on data, each with its error. Every
    trial is rolled back (a rule's position must move once, in the real run); one over a half
    that passes clears the whole half, so k bad feeds among n cost about 2k·log2(n) trials."""
    if not feeds:
        return []
    error = await _trial(conn, statement, feeds, keep=False)
    if error is None:
        return []
    if len(feeds) == 1:
        return [(feeds[0], error)]
    half = len(feeds) // 2
    return [
        *await _failing(conn, statement, feeds[:half]),
        *await _failing(conn, statement, feeds[half:]),
    ]


async def _trial(
    conn: PoolConnectionProxy, statement: Statement, feeds: list[int] | None, *, keep: bool
) -> asyncpg.PostgresError | None:
    """Run ``statement`` over ``feeds`` (None: every feed) in a savepoint, released when it
    passes and ``keep`` is set, else rolled back; the data error or error of its own work it
    failed on, if any (any other error, the server's state, propagates)."""
    savepoint = conn.transaction()
    await savepoint.start()
    passed = False
    try:
        await conn.execute(statement.sql, *statement.args, feeds)
        passed = True
    except asyncpg.PostgresError as e:
        if not (blames_the_data(e) or blames_the_work(e)):
            raise
        return e
    finally:
        if passed and keep:
            await savepoint.commit()
        else:
            await savepoint.rollback()
    return None


def notification_rules(
    database: DatabaseSettings, settings: NotificationsSettings, engine: EngineSettings
) -> Periodic:
    """The engine's notification rules: :func:`evaluate` every ``settings.interval`` seconds,
    under the engine's statement timeout."""

    async def work(pool: asyncpg.Pool, _: asyncio.Event) -> dict[str, int]:
        async with pool.acquire() as conn:
            parked = await evaluate(conn, settings, engine.timeout_ms())
        return {"parked": parked or 0}

    return Periodic("rules", database, settings.interval, work)
