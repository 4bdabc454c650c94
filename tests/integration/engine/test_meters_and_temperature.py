"""Gas and water: consumption from meter readings. Temperature: the time-weighted mean."""

import pytest

from tests.support.data import T0
from tests.support.engine import NewFeed, process


async def test_a_gas_meter_reset_is_never_negative_consumption(new_feed: NewFeed) -> None:
    feed = await new_feed()
    meter = await feed.raw_stream(channel=2, medium=7, device=5)
    # Readings in m³ (at most 3 m³/h: a gas meter's pace); the counter restarts from 0 at
    # t = 100 (a reset or a rollover) and stays there.
    await feed.ingest(
        meter, [(T0 + 0, 100.0), (T0 + 30, 100.025), (T0 + 60, 100.05), (T0 + 100, 0.0)]
    )
    await feed.ingest(meter, [(T0 + 130, 0.025), (T0 + 200, 0.075)])

    await process(feed.db)

    # Each step counts in the bucket of its later reading: bucket 0: +0.025 +0.025 = 0.05;
    # bucket 90: the reset (100.05 -> 0) counts 0, then +0.025; bucket 180: +0.05.
    assert await feed.points("Gas, channel 2") == {
        T0: pytest.approx(0.05),
        T0 + 90: pytest.approx(0.025),
        T0 + 180: pytest.approx(0.05),
    }
    config = await feed.db.fetchrow(
        "SELECT medium, unit FROM cluster.stream_configs WHERE stream_id = $1",
        await feed.stream_id("Gas, channel 2"),
    )
    assert (config["medium"], config["unit"]) == ("gas", "m³")


async def test_water_readings_far_apart_count_at_the_later_reading(new_feed: NewFeed) -> None:
    feed = await new_feed()
    meter = await feed.raw_stream(channel=4, medium=8, device=6)
    await feed.ingest(meter, [(T0 + 100, 12.0), (T0 + 3700, 12.5)])

    await process(feed.db)

    # No bridging limit for meters: the 0.5 m³ used during the hour shows at its end, the
    # bucket holding T0 + 3700 (from T0 + 3690): a reading off the whole hours is a step.
    assert await feed.points("Water, channel 4") == {T0 + 3690: pytest.approx(0.5)}


async def test_water_read_at_whole_hours_counts_in_the_hour_it_measured(
    new_feed: NewFeed,
) -> None:
    # Issue 58: a reading at a whole hour (DSMR 4's hourly capture) is spread over the time
    # before it, like a register's rise, so that 23:00-24:00 stays on its day.
    feed = await new_feed()
    meter = await feed.raw_stream(channel=4, medium=8, device=6)
    await feed.ingest(meter, [(T0, 12.0), (T0 + 3600, 12.5)])

    await process(feed.db)

    # 0.5 m³ over the hour's 40 buckets: 0.0125 m³ each.
    assert await feed.points("Water, channel 4") == {
        T0 + 90 * n: pytest.approx(0.5 / 40) for n in range(40)
    }


async def test_temperature_is_the_time_weighted_mean(new_feed: NewFeed) -> None:
    feed = await new_feed()
    thermometer = await feed.raw_stream(channel=5, medium=5, device=8)
    # 20 °C for 80 s, a ramp to 30 °C over 5 s, 30 °C for the last 5 s.
    await feed.ingest(thermometer, [(T0, 20.0), (T0 + 80, 20.0), (T0 + 85, 30.0), (T0 + 90, 30.0)])

    await process(feed.db)

    # (80·20 + 5·25 + 5·30) / 90 = 1875 / 90 °C, where the mean of the samples would be 25.
    assert await feed.points("Temperature, channel 5") == {T0: pytest.approx(1875 / 90)}
    # Temperature is a mean and has no cost stream.
    quantities = await feed.db.fetch(
        "SELECT quantity FROM cluster.streams WHERE feed_id = $1 AND type = 'processed'", feed.id
    )
    assert [q["quantity"] for q in quantities] == ["mean"]
