"""Retention: each kind of data goes after its age, nothing younger, and never a forwarder point
that a customer is still owed. Runs on a database of its own: dropping old chunks of the shared
test database would take other tests' points with them."""

import time

import asyncpg

from energy_platform import seeding
from energy_platform.core.settings import RetentionSettings
from energy_platform.engine.retention import enforce

SN_DELIVERED = "A0000000000000D1"  # registered to a customer whose cursor covers its points
SN_OWED = "A0000000000000D2"  # registered to a customer that has delivered nothing yet
SN_NOBODYS = "A0000000000000D3"  # registered to nobody: its points were never deliverable


async def test_points_older_than_their_age_go_and_younger_ones_stay(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        owner = await seeding.add_user(conn, "retention")
        feed = await seeding.add_feed(conn, owner.id, "A0000000000000F1")
        stream = await seeding.raw_stream(conn, feed, 1, 1)
    now = int(time.time())
    for age in (40 * 86_400, 20 * 86_400, 9 * 86_400, 3600):  # 40, 20 and 9 days, an hour
        await seeding.write_points(pool, stream, [(now - age, 1)])

    await enforce(pool, RetentionSettings(raw_days=10))

    left = await pool.fetch(
        "SELECT round(extract(epoch FROM now() - ts) / 86400) AS days FROM cluster.raw_points"
        " WHERE stream_id = $1 ORDER BY ts",
        stream,
    )
    # The 40- and 20-day-old points lay in chunks (a day each) wholly older than 10 days.
    assert [r["days"] for r in left] == [9, 0]
    # With the default (0: keep), nothing more goes.
    await enforce(pool, RetentionSettings(raw_days=0))
    assert await pool.fetchval("SELECT count(*) FROM cluster.raw_points") == 2


async def test_forwarder_points_go_once_delivered_and_old_never_while_owed(
    pool: asyncpg.Pool,
) -> None:
    delivered, owed = [
        await pool.fetchval(
            "INSERT INTO forwarder.customers (name, token_sha256)"
            " VALUES ($1::text, sha256(convert_to($1::text, 'UTF8')))"
            " RETURNING id",
            name,
        )
        for name in ("retention-delivered", "retention-owed")
    ]
    for sn, customer in ((SN_DELIVERED, delivered), (SN_OWED, owed)):
        await pool.execute(
            "INSERT INTO forwarder.registrations (homebase_sn, customer_id, registered_at)"
            " VALUES ($1, $2, now() - interval '90 days')",
            sn,
            customer,
        )
    streams = {}
    for sn in (SN_DELIVERED, SN_OWED, SN_NOBODYS):
        streams[sn] = await pool.fetchval(
            "INSERT INTO forwarder.streams (homebase_sn, channel, device, medium)"
            " VALUES ($1, 1, 1, 1) RETURNING id",
            sn,
        )
        for age in ("40 days", "1 day"):
            await pool.execute(
                "INSERT INTO forwarder.points (stream_id, ts, value, received_at)"
                " VALUES ($1, now() - $2::text::interval, 1, now() - $2::text::interval)",
                streams[sn],
                age,
            )
    # The first customer's cursor, taken now, covers every point stored above; the second's
    # has never moved.
    await pool.execute(
        "INSERT INTO forwarder.delivery_state (customer_id, delivered_to, seen)"
        " VALUES ($1, now(), pg_current_snapshot()), ($2, now(), NULL)",
        delivered,
        owed,
    )
    await pool.execute(
        "INSERT INTO forwarder.delivery_log (customer_id, batch_id, batch_from, batch_to, attempt,"
        " outcome, points, attempted_at, duration_ms) SELECT $1, gen_random_uuid(), now(), now(),"
        " 1, 'delivered', 0, now() - a, 1 FROM unnest('{40 days,29 days}'::interval[]) a",
        delivered,
    )

    removed = await enforce(pool, RetentionSettings(batch=1))

    left = await pool.fetch(
        "SELECT s.homebase_sn, round(extract(epoch FROM now() - p.ts) / 86400) AS days"
        " FROM forwarder.points p JOIN forwarder.streams s ON s.id = p.stream_id"
        " ORDER BY 1, 2"
    )
    # Delivered and 40 days old: gone. Owed: both kept, however old. Nobody's: old one gone.
    assert [(r["homebase_sn"], r["days"]) for r in left] == [
        (SN_DELIVERED, 1),
        (SN_OWED, 1),
        (SN_OWED, 40),
        (SN_NOBODYS, 1),
    ]
    assert removed["forwarder_points"] == 2
    # The delivery log keeps its last 30 days.
    ages = await pool.fetch(
        "SELECT round(extract(epoch FROM now() - attempted_at) / 86400) AS days"
        " FROM forwarder.delivery_log"
    )
    assert [r["days"] for r in ages] == [29]
