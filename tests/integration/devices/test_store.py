from collections.abc import AsyncIterator

import asyncpg
import pytest_asyncio

from energy_platform import seeding
from energy_platform.core.codec.format_v4 import Series
from energy_platform.devices.ingest.drops import Drops
from energy_platform.devices.ingest.pipeline import store_until_done
from energy_platform.devices.ingest.routes import Route, RouteTable
from energy_platform.devices.ingest.store import Accepted, PointStore
from tests.support.forwarder import NO_CUSTOMER

T = 1_790_000_000
SN_FEED = "5700000000000001"
SN_FORWARDED = "5700000000000002"


@pytest_asyncio.fixture(scope="module")
async def feed_id(database_url: str) -> int:
    conn = await asyncpg.connect(database_url)
    try:
        owner = await seeding.add_user(conn, "store-test")
        feed = await seeding.add_feed(conn, owner.id, SN_FEED)
        await conn.execute(
            "INSERT INTO forwarder.registrations (homebase_sn, customer_id) VALUES ($1, $2)",
            SN_FORWARDED,
            NO_CUSTOMER,
        )
        return feed
    finally:
        await conn.close()


@pytest_asyncio.fixture
async def pool(database_url: str) -> AsyncIterator[asyncpg.Pool]:
    async with asyncpg.create_pool(database_url, min_size=1, max_size=2) as p:
        yield p


def phases(times: list[int], *watts: list[float]) -> list[Series]:
    return [Series(1, 3, 1, i, None, None, times, w) for i, w in enumerate(watts, start=1)]


async def test_points_land_in_their_streams_with_a_dirty_range_per_stream(
    pool: asyncpg.Pool, feed_id: int
) -> None:
    store = PointStore(pool)
    signal = Series(1, 3, None, None, "medium:40", None, [T], [-70])
    batch = [*phases([T, T + 5], [100, 110], [200, 210]), signal]
    written = await store.write([Accepted(Route(SN_FEED, feed_id), batch)])
    rows = await pool.fetch(
        "SELECT s.type, s.idx, s.source, extract(epoch FROM p.ts)::int AS t, p.value"
        " FROM cluster.raw_points p JOIN cluster.streams s ON s.id = p.stream_id"
        " WHERE s.feed_id = $1"
        " UNION ALL SELECT s.type, s.idx, s.source, extract(epoch FROM p.ts)::int, p.value"
        " FROM cluster.system_points p JOIN cluster.streams s ON s.id = p.stream_id"
        " WHERE s.feed_id = $1 ORDER BY 1, 2, 4",
        feed_id,
    )
    dirty = await pool.fetch(
        "SELECT s.idx, extract(epoch FROM d.ts_from)::int AS a,"
        " extract(epoch FROM d.ts_to)::int AS b"
        " FROM cluster.dirty_ranges d JOIN cluster.streams s ON s.id = d.stream_id"
        " WHERE s.feed_id = $1 ORDER BY 1",
        feed_id,
    )
    assert written == 5
    assert [tuple(r) for r in rows] == [
        ("raw", 1, None, T, 100.0),
        ("raw", 1, None, T + 5, 110.0),
        ("raw", 2, None, T, 200.0),
        ("raw", 2, None, T + 5, 210.0),
        ("system", None, "medium:40", T, -70.0),
    ]
    assert [tuple(r) for r in dirty] == [(1, T, T + 5), (2, T, T + 5)]


async def test_a_resent_batch_changes_nothing_and_dirties_nothing(
    pool: asyncpg.Pool, feed_id: int
) -> None:
    batch = [Accepted(Route(SN_FEED, feed_id), phases([T + 100], [1], [2]))]
    await PointStore(pool).write(batch)
    counts = (
        "SELECT (SELECT count(*) FROM cluster.raw_points),"
        " (SELECT count(*) FROM cluster.dirty_ranges)"
    )
    before = tuple(await pool.fetchrow(counts))
    # A new store (a restarted worker) sees the same streams, not new ones.
    await PointStore(pool).write(batch)
    after = tuple(await pool.fetchrow(counts))
    streams = await pool.fetchval(
        "SELECT count(*) FROM cluster.streams WHERE feed_id = $1 AND type = 'raw'", feed_id
    )
    assert after == before
    assert streams == 2


async def test_a_registered_homebase_is_routed_to_the_forwarder_points(
    pool: asyncpg.Pool, feed_id: int
) -> None:
    routes = RouteTable(pool, ttl=0, size=100)
    forwarded = await routes.resolve(SN_FORWARDED)
    assert forwarded == Route(SN_FORWARDED, None)
    assert await routes.resolve(SN_FEED) == Route(SN_FEED, feed_id)
    assert await routes.resolve("57000000000000FF") is None

    meter = Series(2, 7, 22, None, None, "1-0:1.8.0", [T], [5000])
    unknown = Series(2, 7, None, None, "obis:1-0:99.9.9", "1-0:99.9.9", [T], [1])
    await PointStore(pool).write([Accepted(forwarded, [meter, unknown, *phases([T], [42])])])
    rows = await pool.fetch(
        "SELECT s.channel, s.device, s.medium, s.idx, s.obis, p.value"
        " FROM forwarder.points p JOIN forwarder.streams s ON s.id = p.stream_id"
        " WHERE s.homebase_sn = $1 ORDER BY p.value",
        SN_FORWARDED,
    )
    in_cluster = await pool.fetchval(
        "SELECT count(*) FROM cluster.streams s JOIN cluster.feeds f ON f.id = s.feed_id"
        " WHERE f.homebase_sn = $1",
        SN_FORWARDED,
    )
    assert [tuple(r) for r in rows] == [
        (2, 7, None, None, "1-0:99.9.9", 1.0),
        (1, 3, 1, 1, None, 42.0),
        (2, 7, 22, None, "1-0:1.8.0", 5000.0),
    ]
    assert in_cluster == 0


async def test_a_batch_the_database_refuses_is_split_and_only_the_guilty_message_dead_lettered(
    pool: asyncpg.Pool, feed_id: int
) -> None:
    store = PointStore(pool)
    route = Route(SN_FEED, feed_id)
    # A channel past int4 slips by no decoder here, so the database itself refuses it.
    guilty = Accepted(route, [Series(2**40, 3, 1, None, None, None, [T + 60], [1.0])], "t", b"[x]")
    good = [Accepted(route, phases([T + 60 + i], [float(i)]), "t", b"[]") for i in range(5)]
    before = await pool.fetchval("SELECT count(*) FROM cluster.dead_letters WHERE sn = $1", SN_FEED)

    written = await store_until_done(store, [*good[:2], guilty, *good[2:]], Drops())

    letters = await pool.fetch(
        "SELECT cause, payload, sealed FROM cluster.dead_letters WHERE sn = $1 ORDER BY id",
        SN_FEED,
    )
    stored = await pool.fetchval(
        "SELECT count(*) FROM cluster.raw_points p JOIN cluster.streams s ON s.id = p.stream_id"
        " WHERE s.feed_id = $1 AND p.ts >= to_timestamp($2) AND p.ts < to_timestamp($2 + 5)",
        feed_id,
        T + 60,
    )
    assert written == 5
    assert stored == 5
    assert len(letters) == before + 1
    assert (letters[-1]["cause"], letters[-1]["payload"], letters[-1]["sealed"]) == (
        "rejected_by_database",
        b"[x]",
        False,
    )
