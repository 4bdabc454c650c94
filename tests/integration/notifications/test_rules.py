"""The rules as the engine runs them, seen through the notifications API."""

import asyncio
import secrets
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import aiocoap
import asyncpg
import msgspec
import psycopg
from prometheus_client import REGISTRY

from energy_platform.core.background import sleep_unless_stopped
from energy_platform.core.coap import JSON
from energy_platform.core.codec.format_v4 import HomebaseRecord
from energy_platform.core.db.locks import LockKey
from energy_platform.devices.simulator.homebase import (
    SimulatedHomebase,
    data_topic,
    homebase_client,
)
from energy_platform.seeding import processed_stream
from tests.support.admin import run_admin
from tests.support.forwarder import NO_CUSTOMER
from tests.support.platform import Platform, add_feed, paired_homebase
from tests.support.provisioning import add_homebase
from tests.support.scrape import scrape, value
from tests.support.services import eventually, periodic_rounds, rounds_later


async def notifications(platform: Platform, **params: Any) -> list[dict[str, Any]]:
    async with platform.client() as api:
        response = await api.get(f"/users/{platform.user_id}/notifications", params=params)
    assert response.status_code == 200
    body: list[dict[str, Any]] = response.json()
    return body


async def send(platform: Platform, homebase: SimulatedHomebase) -> None:
    prefix = platform.settings.mqtt.topic_prefix
    async with homebase_client(platform.settings.mqtt, homebase.sn, homebase.secret) as client:
        await client.publish(
            data_topic(homebase.sn, prefix), homebase.batch([int(time.time())]), qos=1
        )


class KeptAlive:
    """What :func:`kept_alive` saw: the longest silence between two acknowledged messages."""

    def __init__(self) -> None:
        self.longest_silence = 0.0


@asynccontextmanager
async def kept_alive(
    platform: Platform,
    homebase: SimulatedHomebase,
    records: Callable[[int], Sequence[HomebaseRecord]] | None = None,
) -> AsyncIterator[KeptAlive]:
    """Publish as ``homebase`` (its ``records`` of the current second; all of them by default)
    ten times per ``offline_after`` until the block ends: the rules see it alive however long
    the block takes, while a homebase sending once would rightly go offline again after
    ``offline_after`` seconds, which a loaded machine can spend on a few requests."""
    s = platform.settings
    every = s.notifications.offline_after / 10
    seen = KeptAlive()
    make = records or homebase.records
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    async def publish() -> None:
        async with homebase_client(s.mqtt, homebase.sn, homebase.secret, will=False) as client:
            last = None
            while not stop.is_set():
                payload = homebase.encrypt(make(int(time.time())))
                await client.publish(data_topic(homebase.sn, s.mqtt.topic_prefix), payload, qos=1)
                now = loop.time()
                if last is not None:
                    seen.longest_silence = max(seen.longest_silence, now - last)
                last = now
                await sleep_unless_stopped(stop, every)

    publisher = asyncio.create_task(publish())
    try:
        yield seen
    finally:
        # Stopped rather than cancelled: a publisher cancelled inside aiomqtt's client block
        # once waited for its disconnection for ever. One that failed meanwhile raises here.
        stop.set()
        async with asyncio.timeout(30):
            await publisher


async def own_user(platform: Platform, name: str) -> Platform:
    """The platform as a new user of its own sees it: the other tests count the notifications
    of the module's user."""
    user = await run_admin(platform.settings, "users", "add", f"{name}-{secrets.token_hex(3)}")
    return msgspec.structs.replace(platform, user_token=user["token"], user_id=user["id"])


def rules_rounds(platform: Platform, seconds: float) -> int:
    """The rounds of the rules that ``seconds`` of the platform's clock stand for."""
    return max(1, round(seconds / platform.settings.notifications.interval))


async def test_an_offline_homebase_is_told_once_and_again_when_it_is_back(
    platform: Platform,
) -> None:
    sn, secret, _ = await paired_homebase(platform)
    homebase = SimulatedHomebase(sn, secret)
    offline_after = platform.settings.notifications.offline_after
    await send(platform, homebase)

    async def about_it(title: str) -> list[dict[str, Any]]:
        return [
            n for n in await notifications(platform) if n["title"] == title and sn in n["content"]
        ]

    async def offline_once() -> bool:
        return len(await about_it("Homebase offline")) == 1

    await eventually(offline_once)
    # As long again, counted in rounds of the rules (ten at 0.2 s a round): still one.
    await rounds_later(lambda: periodic_rounds("rules"), rules_rounds(platform, offline_after))
    assert len(await about_it("Homebase offline")) == 1

    async def back() -> bool:
        return len(await about_it("Homebase back online")) == 1

    async with kept_alive(platform, homebase) as alive:
        await eventually(back)
        # As many rounds again, alive all along: one notice of each, however long they took.
        await rounds_later(lambda: periodic_rounds("rules"), rules_rounds(platform, offline_after))
        online, offline = await about_it("Homebase back online"), await about_it("Homebase offline")
    silence = f"longest silence {alive.longest_silence:.1f} s, offline after {offline_after} s"
    assert len(online) == 1, silence
    assert len(offline) == 1, silence
    assert offline[0]["feed_title"] == "Test home"
    assert offline[0]["read"] is False
    assert offline[0]["archived"] is False


async def test_a_power_change_over_coap_names_the_phases(platform: Platform) -> None:
    sn = secrets.token_hex(8).upper()
    s = platform.settings
    await run_admin(
        s, "coap-devices", "add", sn, "--data-server", f"127.0.0.1:{s.devices.coap_port}"
    )
    await add_feed(platform.settings, platform.user_id, sn, title="Meter <b>&</b>", pair=False)
    context = await aiocoap.Context.create_client_context()
    try:
        now = int(time.time())
        for offset, phases in (
            (0, [True, True, True]),
            (1, [True, False, True]),
            (2, [True, True, False]),
        ):
            event = {"timestamp": now + offset, "event": "POWER_CHANGE", "phases": phases}
            request = aiocoap.Message(
                code=aiocoap.POST,
                uri=f"coap://127.0.0.1:{s.devices.coap_port}/events/{sn}",
                payload=msgspec.json.encode(event),
                content_format=JSON,
            )
            assert (await context.request(request).response).code == aiocoap.CHANGED
    finally:
        await context.shutdown()

    async def power() -> list[dict[str, Any]]:
        return [n for n in await notifications(platform) if sn in n["content"]]

    async def two() -> bool:
        return len(await power()) == 2

    await eventually(two)
    titles = sorted(n["title"] for n in await power())
    assert titles == ["Power lost on L2", "Power lost on L3, restored on L2"]
    content = (await power())[0]["content"]
    assert "Meter &lt;b&gt;&amp;&lt;/b&gt;" in content
    assert "<b>&</b>" not in content
    assert {n["feed_title"] for n in await power()} == {"Meter <b>&</b>"}


async def test_a_silent_channel_of_a_live_homebase_is_told(platform: Platform) -> None:
    sn, secret, _ = await paired_homebase(platform)
    homebase = SimulatedHomebase(sn, secret)
    await send(platform, homebase)  # channels 1..4

    async def silent() -> bool:
        found = [n for n in await notifications(platform) if n["title"] == "Channel silent"]
        return {c for n in found for c in "234" if f"Channel <b>{c}</b>" in n["content"]} == {
            "2",
            "3",
            "4",
        }

    # Only channel 1 goes on, until the rules have told of the other three.
    async with kept_alive(platform, homebase, lambda t: homebase.records(t)[:1]):
        await eventually(silent)


async def test_a_subscription_ending_within_seven_days_is_told(platform: Platform) -> None:
    sn, _, feed = await paired_homebase(platform)
    ends = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(time.time() + 3 * 86_400))
    # The feed of this homebase was added with a year's subscription: give it a short one.
    other = await add_homebase(platform.settings)
    await add_feed(
        platform.settings, platform.user_id, other, title="Short", timezone="UTC",
        subscription_to=ends,
    )  # fmt: skip

    async def told() -> bool:
        return any(
            n["title"] == "Subscription ending" and "Short" in n["content"]
            for n in await notifications(platform)
        )

    await eventually(told)
    assert not any(
        n["title"] == "Subscription ending"
        and n["feed_title"] == "Test home"
        and sn in n["content"]
        for n in await notifications(platform)
    )
    assert feed


async def test_a_changed_subscription_end_re_arms_its_notice(
    platform: Platform, database_url: str
) -> None:
    s = platform.settings

    def in_days(days: int) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(time.time() + days * 86_400))

    sn = await add_homebase(s)
    feed = await add_feed(
        s, platform.user_id, sn, title="Renewed", timezone="UTC", subscription_to=in_days(3)
    )

    async def notices() -> list[dict[str, Any]]:
        return [
            n
            for n in await notifications(platform)
            if n["title"] == "Subscription ending" and "Renewed" in n["content"]
        ]

    async def count(n: int) -> bool:
        return len(await notices()) == n

    def still_open() -> bool:
        with psycopg.connect(database_url) as conn:
            row = conn.execute(
                "SELECT bool_or(open) FROM cluster.notifications"
                " WHERE rule = 'subscription_ending' AND feed_id = %s",
                (int(feed["id"]),),
            ).fetchone()
        return bool(row and row[0])

    await eventually(lambda: count(1))
    # Extended by two months: the notice is closed, and no new one comes yet.
    extended = await run_admin(s, "feeds", "subscription", feed["id"], "--to", in_days(60))
    assert extended["subscription"]["to"].startswith(in_days(60)[:10])

    async def closed() -> bool:
        return not await asyncio.to_thread(still_open)

    await eventually(closed)
    assert await count(1)
    # Shortened to two days: told again, about the new end.
    await run_admin(s, "feeds", "subscription", feed["id"], "--to", in_days(2))
    await eventually(lambda: count(2))
    assert in_days(2)[:10] in (await notices())[0]["content"]


@asynccontextmanager
async def between_rounds(conn: asyncpg.Connection) -> AsyncIterator[None]:
    """A transaction of ``conn`` that no round of the rules overlaps: every round sees all of
    what it writes or none of it.

    In a plain transaction, a round under way or starting meanwhile judges a new feed's
    yesterday empty and commits that verdict after the transaction's DELETE has looked: the
    verdict stays, and the day is never judged again. Likewise a round that sees a later power
    change committed moves the rule's position past one the transaction has not committed yet.
    The rules' own lock waits for a round under way to commit, and rounds skip while it is
    held, as they do while another engine holds it."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", LockKey.NOTIFICATION_RULES)
        yield


async def used_yesterday(
    conn: asyncpg.Connection, feed_id: int, wh: float, *, combined_too: bool = False
) -> None:
    """A UTC feed's power stream: ``wh`` over yesterday's 960 buckets, 20 kWh on each of the 28
    days before. With ``combined_too`` the channel also has a combined stream of the same energy
    (a meter's total register beside its tariff registers): the channel's total, counted once.
    Any verdict already taken on its yesterday is deleted (in the caller's
    :func:`between_rounds`, so that the rules see all of it or none of it)."""
    await conn.execute("DELETE FROM cluster.daily_consumption WHERE feed_id = $1", feed_id)
    streams = [await processed_stream(conn, feed_id, 1, title="Power", unit="kWh")]
    if combined_too:
        streams.append(
            await processed_stream(
                conn, feed_id, 1, title="Power, total", unit="kWh", combined=True
            )
        )
    # Straight into processed points, on purpose: the rules judge the engine's streams by
    # their days' energy, and these days are the test's own numbers.
    for stream in streams:
        await conn.execute(
            "INSERT INTO cluster.processed_points (stream_id, ts, value)"
            " SELECT $1, date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'"
            "            - interval '1 day' + i * interval '90 seconds', $2::float8 / 960.0"
            "   FROM generate_series(0, 959) i",
            stream,
            wh,
        )
    await conn.execute(
        "INSERT INTO cluster.daily_consumption (feed_id, day, energy_wh)"
        " SELECT $1, (now() AT TIME ZONE 'UTC')::date - 1 - d, 20000"
        " FROM generate_series(1, 28) d",
        feed_id,
    )


async def test_no_rule_speaks_of_a_feed_while_it_is_registered_with_the_forwarder(
    platform: Platform, database_url: str, db: asyncpg.Connection
) -> None:
    # Two feeds alike, each with something to tell through every way the rules read feeds
    # (cluster.visible_feeds itself and cluster.homebase_activity over it): silent for an hour,
    # ending within the week, a lost phase, yesterday thrice its usual. One of them is
    # registered with the forwarder, so its owner does not see it meanwhile.
    ends = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(time.time() + 3 * 86_400))
    s = platform.settings
    # An owner of their own: the other tests count the module's user's notifications.
    owner = await own_user(platform, "forwarding")
    homebases = {}
    for title in ("Forwarded one", "Shown one"):
        sn = await add_homebase(platform.settings)
        if title == "Forwarded one":  # registered before its feed exists: no round sees it shown
            with psycopg.connect(database_url, autocommit=True) as conn:
                conn.execute(
                    "INSERT INTO forwarder.registrations (homebase_sn, customer_id)"
                    " VALUES (%s, %s)",
                    (sn, NO_CUSTOMER),
                )
        feed = await add_feed(
            s, owner.user_id, sn, title=title, timezone="UTC", subscription_to=ends
        )
        homebases[title] = (sn, int(feed["id"]))
    # Between rounds, so that every round of the rules sees all of it or none of it (a verdict
    # on yesterday's consumption taken before it is taken back with it).
    async with between_rounds(db):
        for sn, feed_id in homebases.values():
            await db.execute(
                "INSERT INTO cluster.homebase_presence (homebase_sn, online, last_data_at)"
                " VALUES ($1, true, now() - interval '1 hour')",
                sn,
            )
            await db.execute(
                "INSERT INTO cluster.device_events (device_sn, ts, event, phases, received_at)"
                " VALUES ($1, now(), 'POWER_CHANGE', '{true,false,true}', now() - interval '2 s')",
                sn,
            )
            await used_yesterday(db, feed_id, 60_000.0)

    def about(title: str, found: list[dict[str, Any]]) -> set[str]:
        return {n["title"] for n in found if title in n["content"]}

    async def shown_told() -> bool:
        return about("Shown one", await notifications(owner)) == {
            "Homebase offline",
            "Subscription ending",
            "Power lost on L2",
            "Unusual consumption",
        }

    await eventually(shown_told)
    # The same rounds saw the forwarded feed and said nothing of it.
    assert about("Forwarded one", await notifications(owner)) == set()
    with psycopg.connect(database_url) as conn:
        judged = conn.execute(
            "SELECT count(*) FROM cluster.daily_consumption WHERE feed_id = %s"
            " AND day = (now() AT TIME ZONE 'UTC')::date - 1",
            (homebases["Forwarded one"][1],),
        ).fetchone()
    assert judged == (0,)


async def test_a_day_over_twice_its_28_day_median_is_unusual(
    platform: Platform, db: asyncpg.Connection
) -> None:
    """Yesterday used 60 kWh; the 28 days before, 20 kWh each (median 20): told once. Usual
    used 30 kWh through a channel with a combined stream beside its unindexed one: counted
    twice it would be 60 kWh, and unusual."""
    feeds = {}
    for label, yesterday_wh in (("Greedy", 60_000.0), ("Usual", 30_000.0)):
        sn = await add_homebase(platform.settings)
        feed = await add_feed(platform.settings, platform.user_id, sn, title=label, timezone="UTC")
        feeds[label] = (int(feed["id"]), yesterday_wh)
    # Between rounds: the rules see the whole history or none of it; a verdict they already took
    # on the new feeds' empty yesterday is taken back with it.
    async with between_rounds(db):
        for label, (feed_id, yesterday_wh) in feeds.items():
            await used_yesterday(db, feed_id, yesterday_wh, combined_too=label == "Usual")

    async def told() -> bool:
        return any(n["title"] == "Unusual consumption" for n in await notifications(platform))

    await eventually(told)
    # The round that judged Greedy's day judged Usual's too (one transaction holds both
    # histories); a few rounds more would tell of Usual, were it judged unusual later.
    await rounds_later(lambda: periodic_rounds("rules"), 5)
    unusual = [n for n in await notifications(platform) if n["title"] == "Unusual consumption"]
    assert [n["feed_title"] for n in unusual] == ["Greedy"]
    assert "60.0 kWh" in unusual[0]["content"]
    assert "20.0 kWh" in unusual[0]["content"]


async def test_a_feed_whose_data_fails_a_rule_is_parked_while_the_others_are_told(
    platform: Platform, db: asyncpg.Connection
) -> None:
    """Poisoned's yesterday holds two processed points of 1e308 Wh: their sum overflows float8
    (SQLSTATE 22003) in the unusual-consumption rule. Greedy used 60 kWh against a median of
    20 and is told in the same round; the rule is parked for Poisoned alone, the rules go on
    without failing a round, and a retry after the repair tells of Poisoned's day too."""
    s = platform.settings
    # An owner of their own: the other tests count the module's user's unusual days.
    owner = await own_user(platform, "parked")
    feeds = {}
    for label in ("Poisoned", "Greedy beside it"):
        sn = await add_homebase(platform.settings)
        feeds[label] = int(
            (await add_feed(owner.settings, owner.user_id, sn, title=label, timezone="UTC"))["id"]
        )
    poisoned, greedy = feeds["Poisoned"], feeds["Greedy beside it"]
    failed = {"loop": "rules", "outcome": "failed"}
    failed_before = REGISTRY.get_sample_value("ep_housekeeping_rounds_total", failed) or 0
    async with between_rounds(db):
        for feed_id in feeds.values():
            await used_yesterday(db, feed_id, 60_000.0)
        await db.execute(
            "UPDATE cluster.processed_points SET value = 1e308 WHERE (stream_id, ts) IN ("
            " SELECT p.stream_id, p.ts FROM cluster.processed_points p"
            "   JOIN cluster.streams t ON t.id = p.stream_id"
            "  WHERE t.feed_id = $1 ORDER BY p.ts LIMIT 2)",
            poisoned,
        )

    async def unusual_days() -> set[str]:
        return {
            n["feed_title"]
            for n in await notifications(owner)
            if n["title"] == "Unusual consumption"
        }

    async def told(*titles: str) -> bool:
        return await unusual_days() == set(titles)

    async def parked() -> list[dict[str, Any]]:
        listed = await run_admin(s, "notifications", "parked")
        return [p for p in listed if p["feed"] in {str(poisoned), str(greedy)}]

    await eventually(lambda: told("Greedy beside it"))
    [pair] = await parked()
    assert (pair["rule"], pair["feed"], pair["sqlstate"]) == (
        "unusual_consumption",
        str(poisoned),
        "22003",
    )
    # One round judged both: the notice and the parking share its transaction's now().
    told_at = await db.fetchval(
        "SELECT created_at FROM cluster.notifications WHERE feed_id = $1", greedy
    )
    assert pair["since"] == told_at.isoformat()
    samples = await scrape(platform.api)
    gauge = value(samples, "ep_notifications_parked_feeds", rule="unusual_consumption")
    assert gauge is not None
    assert gauge >= 1
    # The rules go on round after round, none of them failed, and Poisoned stays parked.
    await rounds_later(lambda: periodic_rounds("rules"), 3)
    assert (REGISTRY.get_sample_value("ep_housekeeping_rounds_total", failed) or 0) == failed_before
    assert await unusual_days() == {"Greedy beside it"}
    assert [p["feed"] for p in await parked()] == [str(poisoned)]

    # Repaired (60 kWh again, 3 times its median), then retried: told like the others.
    async with between_rounds(db):
        await db.execute(
            "UPDATE cluster.processed_points p SET value = 60000.0 / 960 FROM cluster.streams t"
            " WHERE t.id = p.stream_id AND t.feed_id = $1 AND p.value = 1e308",
            poisoned,
        )
    retried = await run_admin(s, "notifications", "retry", str(poisoned))
    assert retried == {"feed": str(poisoned), "retried": ["unusual_consumption"]}
    await eventually(lambda: told("Greedy beside it", "Poisoned"))
    assert await parked() == []
