"""A feed live (issue 40): points published by a homebase over MQTT, stored by the real ingest,
and the engine's buckets, pushed to ``GET /feeds/{id}/live`` clients as Server-Sent Events;
resumed with ``Last-Event-ID`` without a gap or a repeat; a slow client dropped while a fast
one keeps receiving; a stream ended when its token is revoked or its homebase registered with
the forwarder (docs/api.md#live)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable

import asyncpg
import msgspec
import pytest

from energy_platform.core.codec.format_v4 import HomebaseRecord
from energy_platform.core.settings import LiveSettings, Settings
from energy_platform.devices.simulator.homebase import data_topic, homebase_client
from energy_platform.live.hub import APPLICATION_NAME
from tests.support.admin import run_admin
from tests.support.engine import process
from tests.support.forwarder import NO_CUSTOMER
from tests.support.http import http_client
from tests.support.live import Home, SlowClient, SseEvent, live, points_of, stored
from tests.support.platform import (
    Platform,
    paired_homebase,
    platform_in_loop,
    platform_settings,
    with_cluster,
)
from tests.support.services import eventually

BUFFER = 262_144
"""A client's buffer here: a slow client is dropped after this many bytes of events."""


@pytest.fixture(scope="module")
async def platform(settings: Settings, mqtt_url: str) -> AsyncIterator[Platform]:
    """The platform with small live buffers and a keepalive every half second."""
    s = platform_settings(settings, mqtt_url)
    s = msgspec.structs.replace(s, live=LiveSettings(keepalive_s=0.5, client_buffer_bytes=BUFFER))
    async with platform_in_loop(await with_cluster(s)) as served:
        yield served


@pytest.fixture
async def home(platform: Platform) -> Home:
    sn, secret, feed = await paired_homebase(platform)
    assert feed is not None
    return Home(platform, sn, secret, feed)


async def raw_streams(platform: Platform, feed: str) -> set[str]:
    async with platform.client() as http:
        answer = await http.get(f"/feeds/{feed}/streams", params={"type": "raw"})
    assert answer.status_code == 200, answer.text
    return {s["id"] for s in answer.json()}


def covers(times: set[int], streams: int = 3) -> Callable[[list[SseEvent]], bool]:
    """Done once the points events hold every time of ``times`` on each of ``streams``
    streams."""

    def done(events: list[SseEvent]) -> bool:
        seen = {(s, t) for s, t, _ in points_of(events)}
        names = {s for s, _ in seen}
        return len(names) == streams and all((s, t) in seen for s in names for t in times)

    return done


async def test_a_point_published_by_a_homebase_arrives(platform: Platform, home: Home) -> None:
    t = int(time.time()) - 5
    async with live(platform.api, home.feed, platform.user_token) as stream:
        # Nothing yet: the stream stays open and says so every keepalive.
        with pytest.raises(TimeoutError):
            await stream.next(within=1.5)
        assert stream.comments >= 2
        assert stream.last_id is not None
        assert stream.last_id.isdigit()

        await home.publish(t, (230.5, 2.0, 3.0))
        events = await stream.until(covers({t}))
    assert {e.event for e in events} == {"points"}
    assert sorted(v for _, _, v in points_of(events)) == [2.0, 3.0, 230.5]
    assert {s for s, _, _ in points_of(events)} == await raw_streams(platform, home.feed)
    # Every event has an id, in commit order.
    ids = [int(e.id or 0) for e in events]
    assert ids == sorted(ids)


async def test_a_resent_message_adds_no_event(platform: Platform, home: Home) -> None:
    t = int(time.time()) - 20
    async with live(platform.api, home.feed, platform.user_token) as stream:
        await home.publish(t, (5.0, 2.0, 3.0))
        first = await stream.until(covers({t}))
        # The homebase sends it again (no acknowledgement reached it), then a new point: by the
        # time the new one arrives, the resent one was stored, and added nothing to send.
        await home.publish(t, (5.0, 2.0, 3.0))
        await home.publish(t + 1, (6.0, 2.0, 3.0))
        then = await stream.until(covers({t + 1}))
    assert [p for p in points_of(first + then) if p[1] == t] == points_of(first)
    assert {p[1] for p in points_of(then)} == {t + 1}


async def test_a_processed_bucket_arrives_and_again_when_late_points_revise_it(
    platform: Platform, home: Home, db: asyncpg.Connection
) -> None:
    t0 = (int(time.time()) // 90 - 4) * 90

    def bucket(value: float) -> Callable[[list[SseEvent]], bool]:
        return lambda got: any([t0, value] in e.data["points"] for e in got)

    async with live(platform.api, home.feed, platform.user_token, type="buckets") as stream:
        # 1000 W on phase 1 for the bucket's first minute: 16.7 Wh so far.
        await home.publish_many([t0, t0 + 30, t0 + 60], lambda _: 1000.0)
        await stored(db, home, t0 + 60)
        await process(db)
        first = await stream.until(bucket(1000 * 60 / 3600))
        # The point at its end completes it: 1000 W for 90 s is 25 Wh.
        await home.publish_many([t0 + 90], lambda _: 1000.0)
        await stored(db, home, t0 + 90)
        await process(db)
        revised = await stream.until(bucket(25.0))
    assert {e.event for e in first + revised} == {"buckets"}
    (partial,) = [e for e in first if [t0, 1000 * 60 / 3600] in e.data["points"]]
    (event,) = [e for e in revised if [t0, 25.0] in e.data["points"]]
    assert event.data["stream"] == partial.data["stream"]
    assert int(event.id or 0) > int(partial.id or 0)
    async with platform.client() as http:
        answer = await http.get(f"/feeds/{home.feed}/streams/{event.data['stream']}")
        assert answer.json()["type"] == "processed"
        data = await http.get(
            f"/feeds/{home.feed}/streams/{event.data['stream']}/data",
            params={"time_from": t0, "time_to": t0},
        )
    assert data.json() == [[t0, 25.0]]


async def test_a_reconnect_with_last_event_id_gets_each_point_exactly_once(
    platform: Platform, home: Home
) -> None:
    start = int(time.time()) - 600
    times = [start + n for n in range(50)]
    first: list[SseEvent] = []
    async with live(platform.api, home.feed, platform.user_token) as stream:
        # Ten batches, each committed before the next is sent.
        for t in times[:10]:
            await home.publish(t, (float(t), 2.0, 3.0))
            first += await stream.until(covers({t}))
        last_id = stream.last_id
    assert last_id is not None
    # Forty batches while nobody listens, each committed before the next.
    async with platform.client() as http:
        for n, t in enumerate(times[10:], start=11):
            await home.publish(t, (float(t), 2.0, 3.0))

            async def stored(n: int = n) -> bool:
                answer = await http.get(
                    f"/feeds/{home.feed}/streams",
                    params={"type": "raw", "data_time_from": times[n - 1]},
                )
                return len(answer.json()) == 3

            await eventually(stored, within=30, every=0.05)
    async with live(platform.api, home.feed, platform.user_token, last_id=last_id) as stream:
        replayed = await stream.until(covers(set(times[10:])))
        # Then it goes on live.
        later = start + 100
        await home.publish(later, (1.0, 2.0, 3.0))
        replayed += await stream.until(covers({later}))
    seen = [(s, t) for s, t, _ in points_of(first + replayed)]
    assert len(seen) == len(set(seen)) == 3 * 51
    assert {t for _, t in seen} == {*times, later}
    assert {v for _, t, v in points_of(first + replayed) if v not in (2.0, 3.0)} == {
        float(t) for t in times
    } | {1.0}


async def test_an_id_older_than_the_log_keeps_gets_reload(
    platform: Platform, home: Home, db: asyncpg.Connection
) -> None:
    t = int(time.time()) - 30
    async with live(platform.api, home.feed, platform.user_token) as stream:
        await home.publish(t, (1.0, 2.0, 3.0))
        await stream.until(covers({t}))
        old_id = stream.last_id
    assert old_id is not None
    # A point committed while nobody listens, then the engine's pruning as if the window had
    # passed: the log no longer holds what came after the id.
    await home.publish(t + 1, (1.0, 2.0, 3.0))
    await stored(db, home, t + 1)
    assert await db.fetchval("SELECT cluster.live_prune('0 s')") > 0
    async with live(platform.api, home.feed, platform.user_token, last_id=old_id) as stream:
        reload = await stream.next()
        assert reload is not None
        assert reload.event == "reload"
        assert reload.data == {"reason": "expired"}
        assert int(reload.id or 0) > int(old_id)
        # And then live from there.
        await home.publish(t + 2, (1.0, 2.0, 3.0))
        await stream.until(covers({t + 2}))
    # An id this platform never gave (ahead of its log) is read again too.
    async with live(platform.api, home.feed, platform.user_token, last_id=str(2**62)) as stream:
        event = await stream.next()
        assert event is not None
        assert event.event == "reload"


async def test_a_lost_database_connection_loses_no_event(
    platform: Platform, home: Home, db: asyncpg.Connection
) -> None:
    t = int(time.time()) - 60
    async with live(platform.api, home.feed, platform.user_token) as stream:
        # The follower's connection is killed; a point is committed while it comes back.
        killed = await db.fetchval(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE application_name = $1 AND datname = current_database()",
            APPLICATION_NAME,
        )
        assert killed >= 1
        await home.publish(t, (7.0, 2.0, 3.0))
        events = await stream.until(covers({t}))
    assert sorted(v for _, _, v in points_of(events)) == [2.0, 3.0, 7.0]


async def test_a_slow_client_is_dropped_while_a_fast_one_keeps_receiving(
    platform: Platform, home: Home
) -> None:
    # 30 batches of 6,000 points, 4.5 MB of events: more than the kernel's and the server's
    # socket buffers hold for a client that reads nothing (2.8 MB on loopback here), and far
    # more than its 256 KiB. Each batch goes once the fast client has the one before: its
    # buffer never holds more than one batch (150 KB).
    start = int(time.time()) - 86_400
    batches = [list(range(start + n * 2000, start + n * 2000 + 2000)) for n in range(30)]
    # Both are following before anything is published (their answers have begun).
    slow = await SlowClient.open(platform.settings.http.api_port, home.feed, platform.user_token)
    got: list[SseEvent] = []
    async with live(platform.api, home.feed, platform.user_token) as fast:
        mqtt = platform.settings.mqtt
        async with homebase_client(mqtt, home.sn, home.secret, will=False) as client:
            for times in batches:
                records = [HomebaseRecord(4, t, 3, 1, 1, {"1": [t, 2.0, 3.0]}) for t in times]
                message = home.device.encrypt(records)
                await client.publish(data_topic(home.sn, mqtt.topic_prefix), message, qos=1)
                got += await fast.until(covers(set(times)))
    everything = 3 * 2000 * len(batches)
    assert len(points_of(got)) == everything
    # A batch's 2,000 points of a stream come as events of at most 1,000.
    assert max(len(e.data["points"]) for e in got) == 1000
    # The slow one was ended: what reached it stops short, and its stream is closed.
    body = await slow.read_to_close()
    ids = [int(line[4:]) for line in body.split(b"\n") if line.startswith(b"id: ")]
    assert 0 < _points_in(body) < everything
    # It resumes from its last id and gets the rest, each point once. (What it is owed is
    # counted once: the check below runs after every event, and the slow body is megabytes.)
    owed = everything - _points_in(body)
    async with live(platform.api, home.feed, platform.user_token, last_id=str(ids[-1])) as again:
        rest = await again.until(lambda events: _counted(events) >= owed)
    assert len(points_of(rest)) == owed


def _counted(events: list[SseEvent]) -> int:
    """The points of the ``points`` events, as ``len(points_of(events))`` without listing them."""
    return sum(len(e.data["points"]) for e in events if e.event == "points")


def _points_in(body: bytes) -> int:
    return sum(
        len(msgspec.json.decode(line[6:])["points"])
        for line in body.split(b"\n")
        if line.startswith(b"data: ")
    )


async def test_a_revoked_token_ends_the_stream(platform: Platform, home: Home) -> None:
    async with platform.client() as http:
        made = await http.post(
            f"/users/{platform.user_id}/tokens", json={"name": "wall-display", "scope": "read"}
        )
        assert made.status_code == 201, made.text
        wall = made.json()["token"]
        async with live(platform.api, home.feed, wall) as stream:
            revoked = await http.delete(f"/users/{platform.user_id}/tokens/wall-display")
            assert revoked.status_code == 204
            await stream.ended(within=30)
        with pytest.raises(AssertionError, match="401"):
            async with live(platform.api, home.feed, wall):
                pass


async def test_a_forwarder_registration_ends_the_stream(
    platform: Platform, home: Home, db: asyncpg.Connection
) -> None:
    async with live(platform.api, home.feed, platform.user_token) as stream:
        await db.execute(
            "INSERT INTO forwarder.registrations (homebase_sn, customer_id) VALUES ($1, $2)",
            home.sn,
            NO_CUSTOMER,
        )
        try:
            await stream.ended(within=30)
            with pytest.raises(AssertionError, match="404"):
                async with live(platform.api, home.feed, platform.user_token):
                    pass
        finally:
            await db.execute("DELETE FROM forwarder.registrations WHERE homebase_sn = $1", home.sn)


async def test_another_users_feed_and_bad_requests_are_refused(
    platform: Platform, home: Home
) -> None:
    other = await run_admin(platform.settings, "users", "add", f"neighbour-{home.sn[-6:]}")
    async with http_client(base_url=platform.api, timeout=10) as http:

        async def status(path: str, token: str = platform.user_token, **headers: str) -> int:
            answer = await http.get(path, headers={"Authorization": f"Bearer {token}", **headers})
            if answer.status_code != 200:
                assert answer.headers["content-type"] == "application/problem+json"
            return answer.status_code

        assert await status(f"/feeds/{home.feed}/live", other["token"]) == 404
        assert await status(f"/feeds/{home.feed}/live", "not-a-token") == 401
        assert await status(f"/feeds/{home.feed}/live?stream=1") == 404
        assert await status(f"/feeds/{home.feed}/live?type=bills") == 400
        assert await status(f"/feeds/{home.feed}/live", **{"Last-Event-ID": "12x"}) == 400
        assert await status("/feeds/0/live") == 404
