"""Cost: consumption x the tariff valid at the bucket, in the feed's local time."""

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from tests.support.engine import NewFeed, process

# 04:30 UTC on the days around the daylight-saving changes of 2026 in Europe/Prague.
SPRING_BEFORE = 1_774_672_200  # 2026-03-28T04:30Z = 05:30 CET (UTC+1)
SPRING_AFTER = 1_774_758_600  # 2026-03-29T04:30Z = 06:30 CEST (UTC+2)
AUTUMN_BEFORE = 1_792_816_200  # 2026-10-24T04:30Z = 06:30 CEST
AUTUMN_AFTER = 1_792_902_600  # 2026-10-25T04:30Z = 05:30 CET


def at(ts: int) -> datetime:
    return datetime.fromtimestamp(ts, UTC)


def test_the_chosen_instants_are_what_the_comments_say() -> None:
    instants = (SPRING_BEFORE, SPRING_AFTER, AUTUMN_BEFORE, AUTUMN_AFTER)
    local = [
        at(t).astimezone(ZoneInfo("Europe/Prague")).strftime("%m-%d %H:%M %Z") for t in instants
    ]
    assert local == ["03-28 05:30 CET", "03-29 06:30 CEST", "10-24 06:30 CEST", "10-25 05:30 CET"]
    assert all(t % 90 == 0 for t in instants)


async def test_a_time_of_use_tariff_follows_local_time_across_daylight_saving_changes(
    new_feed: NewFeed,
) -> None:
    feed = await new_feed("Europe/Prague")
    clamp = await feed.raw_stream(channel=1, medium=1)
    # Low 0.10 per kWh from 22:00 to 06:00 local time, high 0.30 from 06:00 to 22:00.
    await feed.db.execute(
        "SELECT cluster.set_tariff($1, 'power', '2026-01-01T00:00:00Z',"
        " ARRAY['06:00', '22:00']::time[], ARRAY[0.30, 0.10])",
        feed.id,
    )
    for start in (SPRING_BEFORE, SPRING_AFTER, AUTUMN_BEFORE, AUTUMN_AFTER):
        await feed.ingest(clamp, [(start + s, 1000.0) for s in range(0, 91, 5)])

    await process(feed.db)

    # Each bucket: 25 Wh = 0.025 kWh; at 04:30 UTC it is before 06:00 in winter time (low)
    # and after 06:00 in summer time (high).
    assert await feed.points("Electricity cost, channel 1") == {
        SPRING_BEFORE: pytest.approx(0.025 * 0.10),
        SPRING_AFTER: pytest.approx(0.025 * 0.30),
        AUTUMN_BEFORE: pytest.approx(0.025 * 0.30),
        AUTUMN_AFTER: pytest.approx(0.025 * 0.10),
    }
    bands = await feed.db.fetch(
        "SELECT starts::text, ends::text, price FROM cluster.tariff_prices"
        " WHERE feed_id = $1 ORDER BY starts",
        feed.id,
    )
    assert [tuple(b) for b in bands] == [
        ("00:00:00", "06:00:00", 0.10),
        ("06:00:00", "22:00:00", 0.30),
        ("22:00:00", "24:00:00", 0.10),
    ]


async def test_a_new_tariff_from_an_instant_reprices_from_then_and_may_be_negative(
    new_feed: NewFeed,
) -> None:
    feed = await new_feed("UTC")
    meter = await feed.raw_stream(channel=2, medium=7, device=5)
    clamp = await feed.raw_stream(channel=1, medium=1)
    t = SPRING_BEFORE
    await feed.ingest(meter, [(t, 10.0), (t + 60, 10.05), (t + 150, 10.15)])  # 3, 4 m³/h
    await feed.ingest(clamp, [(t + s, 1000.0) for s in range(0, 181, 5)])
    await feed.db.execute(
        "SELECT cluster.set_tariff($1, 'gas', '-infinity', ARRAY['00:00'::time], ARRAY[2.0])",
        feed.id,
    )
    await feed.db.execute(
        "SELECT cluster.set_tariff($1, 'power', '-infinity', ARRAY['00:00'::time], ARRAY[0.2])",
        feed.id,
    )
    await process(feed.db)
    assert await feed.points("Gas cost, channel 2") == {
        t: pytest.approx(0.05 * 2.0),
        t + 90: pytest.approx(0.1 * 2.0),
    }

    # From the second bucket on, electricity is paid for feeding it (a negative price).
    await feed.db.execute(
        "SELECT cluster.set_tariff($1, 'power', $2, ARRAY['00:00'::time], ARRAY[-0.04])",
        feed.id,
        at(t + 90),
    )
    await process(feed.db)

    assert await feed.points("Electricity cost, channel 1") == {
        t: pytest.approx(0.025 * 0.2),
        t + 90: pytest.approx(0.025 * -0.04),
    }
    # Gas is priced by its own tariff, untouched.
    assert await feed.points("Gas cost, channel 2") == {
        t: pytest.approx(0.1),
        t + 90: pytest.approx(0.2),
    }
    unit = await feed.db.fetchval(
        "SELECT unit FROM cluster.stream_configs WHERE stream_id = $1",
        await feed.stream_id("Gas cost, channel 2"),
    )
    assert unit == "CZK"

    # No tariff from the second bucket: no cost there.
    await feed.db.execute(
        "SELECT cluster.set_tariff($1, 'power', $2, NULL, NULL)", feed.id, at(t + 90)
    )
    await process(feed.db)
    assert await feed.points("Electricity cost, channel 1") == {t: pytest.approx(0.025 * 0.2)}


async def test_a_time_zone_change_reprices_time_of_use_cost(new_feed: NewFeed) -> None:
    feed = await new_feed("UTC")
    clamp = await feed.raw_stream(channel=1, medium=1)
    await feed.db.execute(
        "SELECT cluster.set_tariff($1, 'power', '-infinity',"
        " ARRAY['06:00', '22:00']::time[], ARRAY[0.30, 0.10])",
        feed.id,
    )
    await feed.ingest(clamp, [(SPRING_AFTER + s, 1000.0) for s in range(0, 91, 5)])
    await process(feed.db)
    # 04:30 UTC is low in UTC.
    assert await feed.points("Electricity cost, channel 1") == {SPRING_AFTER: pytest.approx(0.0025)}

    await feed.db.execute(
        "SELECT cluster.set_feed_config($1, '-infinity', 'Home', 'Europe/Prague')", feed.id
    )
    await process(feed.db)

    # ... and high (06:30) in Prague.
    assert await feed.points("Electricity cost, channel 1") == {SPRING_AFTER: pytest.approx(0.0075)}


async def test_a_cost_streams_own_configuration_picks_its_tariff_from_an_instant(
    new_feed: NewFeed,
) -> None:
    # A cost stream is priced by the tariff of its own configured medium, period by period:
    # switched off from the second bucket, then priced as gas from the third (a sub-meter
    # billed by the gas supplier); its consumption stream stays as it is.
    feed = await new_feed("UTC")
    clamp = await feed.raw_stream(channel=1, medium=1)
    t = SPRING_BEFORE
    await feed.ingest(clamp, [(t + s, 1000.0) for s in range(0, 271, 5)])
    for medium, price in (("power", 0.2), ("gas", 3.0)):
        await feed.db.execute(
            "SELECT cluster.set_tariff($1, $2, '-infinity', ARRAY['00:00'::time],"
            " ARRAY[$3::float8])",
            feed.id,
            medium,
            price,
        )
    await process(feed.db)
    cost = await feed.stream_id("Electricity cost, channel 1")
    # 1000 W for 90 s is 25 Wh = 0.025 kWh a bucket, at 0.2.
    assert await feed.points("Electricity cost, channel 1") == {
        t + k * 90: pytest.approx(0.025 * 0.2) for k in range(3)
    }

    for medium, since in ((None, t + 90), ("gas", t + 180)):
        await feed.db.execute(
            "SELECT cluster.set_stream_config($1, $2, 'Electricity cost, channel 1', $3, 'CZK')",
            cost,
            at(since),
            medium,
        )
    await process(feed.db)

    # Bucket 1: no medium, no cost. Bucket 2: the gas price times the consumption in the
    # consumption stream's unit of account (kWh for power): 0.025 x 3.0.
    assert await feed.points("Electricity cost, channel 1") == {
        t: pytest.approx(0.025 * 0.2),
        t + 180: pytest.approx(0.025 * 3.0),
    }
    assert await feed.points("Electricity, channel 1") == {
        t + k * 90: pytest.approx(25.0) for k in range(3)
    }
