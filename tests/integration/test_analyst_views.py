"""The analysts' views say what each processed stream is (quantity, register), and a feed's sum
over its channels' totals (cluster.channel_totals) counts each watt-hour once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from functools import partial

import asyncpg
import msgspec
import pytest

from energy_platform import seeding

POINT = datetime(2026, 3, 2, 10, 1, 30, tzinfo=UTC)  # a 90 s bucket at 11:01:30 in Prague
RANGE = (datetime(2026, 3, 2, tzinfo=UTC), datetime(2026, 3, 3, tzinfo=UTC))
# stream: (quantity, register, index), as every view of points and rollups shows them.
WHAT = {
    "tariff1": ("consumption", 1, None),
    "tariff2": ("consumption", 2, None),
    "combined": ("consumption", None, None),
    "register": ("consumption", None, None),
    "export": ("export", None, None),
    "cost": ("cost", None, None),
    "raw": (None, None, 1),
}
RAW = {"raw"}


class Meter(msgspec.Struct, frozen=True):
    feed: int
    streams: dict[str, int]


@pytest.fixture
async def meter(db: asyncpg.Connection) -> AsyncIterator[Meter]:
    """A smart meter's channel as the engine makes it: tariff registers 1 and 2, their combined
    stream, the total register beside it, export and cost, one 90 s point each, rolled up; and
    a raw stream. Made in a transaction that is rolled back afterwards."""
    transaction = db.transaction()
    await transaction.start()
    try:
        owner = await seeding.add_user(db, "analyst-views")
        feed = await seeding.add_feed(db, owner.id, "A0000000000000A7")
        add = partial(seeding.processed_stream, db, feed, 0)
        s = {
            "tariff1": await add(title="Electricity, channel 0, tariff 1", register=1),
            "tariff2": await add(title="Electricity, channel 0, tariff 2", register=2),
            "combined": await add(title="Electricity, channel 0, total", combined=True),
            "register": await add(title="Electricity, channel 0"),
            "export": await add(title="Electricity export, channel 0", quantity="export"),
            "cost": await add(
                title="Electricity cost, channel 0, total",
                unit="CZK",
                combined=True,
                quantity="cost",
            ),
            "raw": await seeding.raw_stream(db, feed, 0, 22, device=7, idx=1),
        }
        # 100 Wh on tariff 1 and 50 Wh on tariff 2: 150 Wh, which the total register counts
        # too; 40 Wh fed in; the 150 Wh at 5.2 CZK/kWh cost 0.78 CZK.
        values = {
            "tariff1": 100.0, "tariff2": 50.0, "combined": 150.0, "register": 150.0,
            "export": 40.0, "cost": 0.78,
        }  # fmt: skip
        # Straight into the points tables, on purpose: the views are checked against values
        # of the test's own, one per stream of every kind, which no engine's run would give.
        await db.executemany(
            "INSERT INTO cluster.processed_points VALUES ($1, $2, $3)",
            [(s[k], POINT, v) for k, v in values.items()],
        )
        # The analysts' views read the tables: their rows are put there as they are, in this
        # fixture's transaction (rolled back), bypassing every entry.
        await db.execute("INSERT INTO cluster.raw_points VALUES ($1, $2, 1234567)", s["raw"], POINT)
        # Written directly, not by the engine: rolled up as the engine would.
        await db.execute(
            "SELECT cluster.rollup_streams(array_agg(id), array_agg(NULL::timestamptz),"
            " array_agg(NULL::timestamptz)) FROM cluster.streams WHERE feed_id = $1",
            feed,
        )
        yield Meter(feed, s)
    finally:
        await transaction.rollback()


@pytest.mark.parametrize(
    ("source", "shows_raw"),
    [
        ("cluster.processed_readings($2, $3)", False),
        ("cluster.processed_readings", False),
        ("cluster.readings($2, $3)", True),
        ("cluster.readings", True),
        ("cluster.hourly_readings", True),
        ("cluster.daily_readings", True),
    ],
)
async def test_every_view_says_what_each_stream_is(
    db: asyncpg.Connection, meter: Meter, source: str, shows_raw: bool
) -> None:
    arguments = RANGE if "$2" in source else ()
    rows = await db.fetch(
        f"SELECT DISTINCT stream_id, quantity, register, index FROM {source}"  # noqa: S608
        " WHERE feed_id = $1",
        meter.feed,
        *arguments,
    )
    names = {stream: name for name, stream in meter.streams.items()}
    shown = {names[r["stream_id"]]: (r["quantity"], r["register"], r["index"]) for r in rows}
    assert shown == {k: v for k, v in WHAT.items() if shows_raw or k not in RAW}


async def test_a_feeds_day_sums_its_channels_totals_once(
    db: asyncpg.Connection, meter: Meter
) -> None:
    per_quantity = await db.fetch(
        "SELECT d.quantity, sum(d.value) AS value FROM cluster.daily_readings d"
        " JOIN cluster.channel_totals t ON t.stream_id = d.stream_id"
        " WHERE d.feed_id = $1 GROUP BY 1 ORDER BY 1",
        meter.feed,
    )
    # The combined 150 Wh, not also the total register's 150 Wh and the tariffs' 100 + 50.
    assert [tuple(r) for r in per_quantity] == [
        ("consumption", 150),
        ("cost", 0.78),
        ("export", 40),
    ]
    every_stream = await db.fetchval(
        "SELECT sum(value) FROM cluster.daily_readings"
        " WHERE feed_id = $1 AND quantity = 'consumption'",
        meter.feed,
    )
    assert every_stream == 100 + 50 + 150 + 150  # what summing every stream would claim
