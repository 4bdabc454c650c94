"""Energy registers (media 22 and 23) become consumption and export; a register and power of one
stream count each Wh once; tariff registers get streams of their own and the channel's total.
docs/engine.md#registers states the rules these tests hold the engine to."""

from __future__ import annotations

import random

import httpx
import pytest

from tests.support.data import T0
from tests.support.engine import Feed, NewFeed, api_buckets, process

IMPORT_POWER, EXPORT_POWER, IMPORT_REGISTER, EXPORT_REGISTER = 12, 13, 22, 23
METER = 7  # the homebase's meter reader


async def register(feed: Feed, medium: int = IMPORT_REGISTER, idx: int | None = None) -> int:
    return await feed.raw_stream(channel=0, medium=medium, idx=idx, device=METER)


async def streams(feed: Feed) -> dict[str, tuple[str, int | None, int | None, bool]]:
    """Processed streams by title: (quantity, idx, register, combined)."""
    rows = await feed.db.fetch(
        "SELECT c.title, s.quantity, s.idx, s.register, s.combined FROM cluster.streams s"
        " JOIN cluster.stream_configs c ON c.stream_id = s.id"
        " WHERE s.feed_id = $1 AND s.type = 'processed'",
        feed.id,
    )
    return {r["title"]: (r["quantity"], r["idx"], r["register"], r["combined"]) for r in rows}


async def test_a_register_rises_along_a_line_between_readings_close_together(
    new_feed: NewFeed,
) -> None:
    feed = await new_feed()
    meter = await register(feed)
    await feed.ingest(meter, [(T0, 1000.0), (T0 + 60, 1010.0), (T0 + 120, 1030.0)])

    await process(feed.db)

    # 10 Wh over [0, 60], then 20 Wh over [60, 120]: half of those 20 Wh lies in each bucket.
    assert await feed.points("Electricity, channel 0") == {
        T0: pytest.approx(20.0),
        T0 + 90: pytest.approx(10.0),
    }
    # A register's consumption is priced like any other: a cost stream stands beside it.
    assert (await streams(feed))["Electricity cost, channel 0"] == ("cost", None, None, False)


async def test_a_register_reset_adds_nothing_and_counting_goes_on_from_the_new_reading(
    new_feed: NewFeed,
) -> None:
    feed = await new_feed()
    meter = await register(feed)
    # The meter is replaced at T0 + 60: its count starts again from 5 Wh.
    await feed.ingest(
        meter, [(T0, 1000.0), (T0 + 30, 1010.0), (T0 + 60, 5.0), (T0 + 120, 15.0), (T0 + 180, 21.0)]
    )

    await process(feed.db)

    # Bucket 0: 10 Wh, then the reset (0, never -1005), then half of the next 10 Wh; bucket 1:
    # the other 5 Wh and the 6 Wh of [120, 180].
    assert await feed.points("Electricity, channel 0") == {
        T0: pytest.approx(15.0),
        T0 + 90: pytest.approx(11.0),
    }


async def test_a_rise_over_a_20_minute_gap_is_spread_evenly_over_its_buckets(
    new_feed: NewFeed,
) -> None:
    feed = await new_feed()
    meter = await register(feed)
    before = [(T0 + 10 * i, 500.0 + i) for i in range(19)]  # T0 .. T0 + 180: 1 Wh each 10 s
    after = [(T0 + 1380 + 10 * i, 700.0 + i) for i in range(10)]  # from T0 + 1380 (23 min)
    await feed.ingest(meter, before + after)

    await process(feed.db)

    points = await feed.points("Electricity, channel 0")
    # Up to T0 + 180 the line: 9 Wh in each of the first two buckets. The 182 Wh the meter
    # counted while silent (T0 + 180 to T0 + 1380) are spread over those 1200 s: 13.65 Wh a
    # bucket, 4.55 Wh of it in the bucket of T0 + 1350 beside the line after it (6 Wh up to
    # that bucket's end at T0 + 1440, then 3 Wh).
    assert points == {
        T0: pytest.approx(9.0),
        T0 + 90: pytest.approx(9.0),
        **{T0 + 90 * k: pytest.approx(182.0 * 90 / 1200) for k in range(2, 15)},
        T0 + 1350: pytest.approx(182.0 * 30 / 1200 + 6.0),
        T0 + 1440: pytest.approx(3.0),
    }
    assert sum(points.values()) == pytest.approx(after[-1][1] - before[0][1], rel=1e-12)


async def test_a_month_of_10_s_readings_sums_to_the_register_difference_exactly(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("UTC")
    meter = await register(feed)
    rng = random.Random(37)  # noqa: S311 - a fixed sample, not a secret
    step, days = 10, 30
    value, readings = 4_321_987.6, []
    for i in range(days * 86_400 // step + 1):
        readings.append((T0 + step * i, value))
        value += rng.uniform(0.0, 30.0)  # 0 .. 10.8 kW
    for start in range(0, len(readings), 20_000):
        await feed.ingest(meter, readings[start : start + 20_000])

    await process(feed.db)

    energy = await feed.stream_id("Electricity, channel 0")
    points = await feed.points("Electricity, channel 0")
    assert len(points) == days * 960
    assert sum(points.values()) == pytest.approx(readings[-1][1] - readings[0][1], rel=1e-9)
    # Between any two readings on bucket edges, the buckets between them hold their difference.
    by_time = dict(readings)
    for _ in range(20):
        a, b = sorted(rng.sample(range(days * 960 + 1), 2))
        span = sum(v for t, v in points.items() if T0 + 90 * a <= t < T0 + 90 * b)
        difference = by_time[T0 + 90 * b] - by_time[T0 + 90 * a]
        assert span == pytest.approx(difference, rel=1e-9)
    # Read back per day and per month through the data API: the same total.
    month = await api_buckets(api, feed, energy, "month")
    days_read = await api_buckets(api, feed, energy, "day")
    assert month == [[T0, pytest.approx(readings[-1][1] - readings[0][1], rel=1e-9)]]
    assert len(days_read) == days
    for (day_start, total), t in zip(days_read, range(T0, T0 + days * 86_400, 86_400), strict=True):
        assert day_start == t
        assert total == pytest.approx(by_time[t + 86_400] - by_time[t], rel=1e-9)


async def test_the_register_counts_over_its_span_and_power_outside_each_wh_once(
    new_feed: NewFeed,
) -> None:
    feed = await new_feed()
    power = await feed.raw_stream(channel=0, medium=IMPORT_POWER, device=METER)
    meter = await register(feed)
    # Power: 1000 W for an hour. The register reads from T0 + 900 to T0 + 2700 only, and says
    # 1200 W (it is what the bill counts; the power samples are a little off).
    await feed.ingest(power, [(T0 + 10 * i, 1000.0) for i in range(361)])
    await feed.ingest(meter, [(T0 + 900 + 10 * i, 10_000.0 + 10 * i / 3) for i in range(181)])

    await process(feed.db)

    # The register from the bucket of its first reading to the last one its line reaches
    # into (buckets 10 to 29): 1200 W, 30 Wh a bucket. Power before and after: 25 Wh.
    assert await feed.points("Electricity, channel 0") == {
        T0 + 90 * k: pytest.approx(30.0 if 10 <= k < 30 else 25.0) for k in range(40)
    }
    # Each Wh once: the register's difference (600 Wh) and 20 buckets of power.
    total = sum((await feed.points("Electricity, channel 0")).values())
    assert total == pytest.approx(600.0 + 20 * 25.0)


async def test_a_total_register_beside_tariff_registers_agrees_with_their_sum(
    new_feed: NewFeed,
) -> None:
    feed = await new_feed()
    total = await register(feed)
    low, normal = await register(feed, idx=1), await register(feed, idx=2)
    times = [T0 + 10 * i for i in range(181)]
    # Low tariff for the first quarter hour, normal after: 1800 W = 5 Wh each 10 s.
    low_counts = [2000.0 + 5 * min(i, 90) for i in range(181)]
    normal_counts = [3000.0 + 5 * max(i - 90, 0) for i in range(181)]
    await feed.ingest(low, list(zip(times, low_counts, strict=True)))
    await feed.ingest(normal, list(zip(times, normal_counts, strict=True)))
    await feed.ingest(
        total, [(t, a + b) for t, a, b in zip(times, low_counts, normal_counts, strict=True)]
    )

    await process(feed.db)

    assert await streams(feed) == {
        "Electricity, channel 0": ("consumption", None, None, False),
        "Electricity, channel 0, tariff 1": ("consumption", None, 1, False),
        "Electricity, channel 0, tariff 2": ("consumption", None, 2, False),
        "Electricity, channel 0, total": ("consumption", None, None, True),
        "Electricity cost, channel 0": ("cost", None, None, False),
        "Electricity cost, channel 0, tariff 1": ("cost", None, 1, False),
        "Electricity cost, channel 0, tariff 2": ("cost", None, 2, False),
        "Electricity cost, channel 0, total": ("cost", None, None, True),
    }
    unindexed = await feed.points("Electricity, channel 0")
    combined = await feed.points("Electricity, channel 0, total")
    assert unindexed.keys() == combined.keys()
    for t in unindexed:
        assert unindexed[t] == pytest.approx(combined[t], rel=1e-12), t
    assert sum(combined.values()) == pytest.approx(900.0)
    assert sum((await feed.points("Electricity, channel 0, tariff 1")).values()) == (
        pytest.approx(450.0)
    )
    # The channel's total is the combined stream, once.
    totals = await feed.db.fetch(
        "SELECT t.stream_id FROM cluster.channel_totals t WHERE t.feed_id = $1"
        " AND t.quantity = 'consumption'",
        feed.id,
    )
    assert [r["stream_id"] for r in totals] == [
        await feed.stream_id("Electricity, channel 0, total")
    ]


async def test_phases_and_tariffs_of_one_meter_never_share_a_stream(new_feed: NewFeed) -> None:
    feed = await new_feed()
    phases = [
        await feed.raw_stream(channel=0, medium=IMPORT_POWER, idx=n, device=METER)
        for n in (1, 2, 3)
    ]
    low, normal = await register(feed, idx=1), await register(feed, idx=2)
    times = [T0 + 10 * i for i in range(19)]  # two buckets
    for n, phase in enumerate(phases, start=1):
        await feed.ingest(phase, [(t, 400.0 * n) for t in times])  # 400, 800, 1200 W
    await feed.ingest(low, [(t, 100.0 + 6 * i) for i, t in enumerate(times)])  # 2160 W
    await feed.ingest(normal, [(t, 700.0) for t in times])

    await process(feed.db)

    assert await feed.points("Electricity, channel 0, L1") == {
        T0: pytest.approx(10.0),
        T0 + 90: pytest.approx(10.0),
    }
    assert await feed.points("Electricity, channel 0, tariff 1") == {
        T0: pytest.approx(54.0),
        T0 + 90: pytest.approx(54.0),
    }
    # The total is the tariff registers' where they read, never the phases' as well.
    assert await feed.points("Electricity, channel 0, total") == {
        T0: pytest.approx(54.0),
        T0 + 90: pytest.approx(54.0),
    }


async def test_export_power_and_register_make_export_streams_never_consumption(
    new_feed: NewFeed,
) -> None:
    feed = await new_feed()
    taken = await feed.raw_stream(channel=0, medium=IMPORT_POWER, device=METER)
    fed_in = await feed.raw_stream(channel=0, medium=EXPORT_POWER, device=METER)
    fed_in_phase = await feed.raw_stream(channel=0, medium=EXPORT_POWER, idx=2, device=METER)
    export_register = await register(feed, EXPORT_REGISTER)
    times = [T0 + 10 * i for i in range(10)]  # one bucket
    await feed.ingest(taken, [(t, 200.0) for t in times])
    await feed.ingest(fed_in, [(t, 3600.0) for t in times])
    await feed.ingest(fed_in_phase, [(t, 1200.0) for t in times])
    await feed.ingest(export_register, [(t + 90, 50.0 + 10.0 * i) for i, t in enumerate(times)])

    await process(feed.db)

    assert await streams(feed) == {
        "Electricity, channel 0": ("consumption", None, None, False),
        "Electricity cost, channel 0": ("cost", None, None, False),
        "Electricity export, channel 0": ("export", None, None, False),
        "Electricity export, channel 0, L2": ("export", 2, None, False),
        "Electricity export credit, channel 0": ("credit", None, None, False),
        "Electricity export credit, channel 0, L2": ("credit", 2, None, False),
    }
    # 200 W over the 90 s: 5 Wh taken; 3600 W fed in: 90 Wh, until the export register reads
    # (from the next bucket on: 10 Wh each 10 s, 90 Wh a bucket).
    assert await feed.points("Electricity, channel 0") == {T0: pytest.approx(5.0)}
    assert await feed.points("Electricity export, channel 0") == {
        T0: pytest.approx(90.0),
        T0 + 90: pytest.approx(90.0),
    }
    assert await feed.points("Electricity export, channel 0, L2") == {T0: pytest.approx(30.0)}
    config = await feed.db.fetchrow(
        "SELECT medium, unit FROM cluster.stream_configs WHERE stream_id = $1",
        await feed.stream_id("Electricity export, channel 0"),
    )
    assert (config["medium"], config["unit"]) == ("power", "Wh")


async def from_scratch(feed: Feed) -> None:
    """Recompute every processed point of the feed, as ``admin reprocess`` does."""
    await feed.db.execute("SELECT cluster.engine_reprocess($1, '-infinity', 'infinity')", feed.id)
    await process(feed.db)


async def test_a_register_silent_for_20_minutes_while_power_goes_on_counts_each_wh_once(
    new_feed: NewFeed,
) -> None:
    feed = await new_feed()
    power = await feed.raw_stream(channel=0, medium=IMPORT_POWER, device=METER)
    meter = await register(feed)

    def counts(start: int, end: int) -> list[tuple[int, float]]:
        return [(t, 50_000.0 + (t - T0) / 3) for t in range(start, end + 1, 10)]  # 1200 W

    # As it arrives live, batch by batch, each processed before the next comes: the meter
    # reader's register falls silent from T0 + 600 to T0 + 1800 while the power goes on.
    for start, end in ((0, 590), (600, 1790), (1800, 2400)):
        await feed.ingest(power, [(T0 + t, 1000.0) for t in range(start, end + 1, 10)])
        if start != 600:
            await feed.ingest(meter, counts(T0 + start, T0 + end))
        await process(feed.db)

    live = await feed.points("Electricity, channel 0")
    # The register's span is all of it, and the 403 Wh it counted while silent (1200 W for the
    # 1210 s from T0 + 590 to T0 + 1800) are spread over that time: 1200 W, 30 Wh a bucket,
    # throughout (the power's 25 Wh are not counted there), up to its last reading at T0 + 2400.
    assert live == {
        **{T0 + 90 * k: pytest.approx(30.0) for k in range(26)},
        T0 + 2340: pytest.approx(1200 * 60 / 3600),
    }
    assert sum(live.values()) == pytest.approx(2400 / 3)  # the register's difference
    # Computed live, the points are what a recomputation from scratch gives.
    await from_scratch(feed)
    assert await feed.points("Electricity, channel 0") == live


async def test_a_backfilled_register_history_takes_over_the_buckets_it_spans(
    new_feed: NewFeed,
) -> None:
    feed = await new_feed()
    power = await feed.raw_stream(channel=0, medium=IMPORT_POWER, device=METER)
    meter = await register(feed)
    await feed.ingest(power, [(T0 + t, 1000.0) for t in range(0, 3600, 10)])
    await feed.ingest(meter, [(T0 + t, 9_000.0 + (t - 2700) / 3) for t in range(2700, 3600, 10)])
    await process(feed.db)
    before = await feed.points("Electricity, channel 0")
    assert before[T0] == pytest.approx(25.0)  # power: nothing older from the register yet

    # The register's first ten minutes come late (a meter reader's buffer, an import).
    await feed.ingest(meter, [(T0 + t, 8_000.0 + t / 3) for t in range(0, 601, 10)])
    await process(feed.db)

    after = await feed.points("Electricity, channel 0")
    # From T0 on the register's span: its line (30 Wh a bucket) up to T0 + 600, the 800 Wh it
    # counted while silent spread over the 2100 s to T0 + 2700 (34.29 Wh a bucket; the power's
    # 25 Wh buckets are gone), its line again; up to T0 + 3510 its difference, 9270 - 8000 Wh,
    # and no more.
    assert after[T0] == pytest.approx(30.0)
    assert after[T0 + 540] == pytest.approx(20.0 + 800.0 * 30 / 2100)
    assert {t: after[t] for t in range(T0 + 630, T0 + 2700, 90)} == {
        t: pytest.approx(800.0 * 90 / 2100) for t in range(T0 + 630, T0 + 2700, 90)
    }
    assert after[T0 + 2700] == pytest.approx(30.0)
    assert sum(v for t, v in after.items() if t < T0 + 3510) == pytest.approx(
        9_000.0 + (3510 - 2700) / 3 - 8_000.0
    )
    await from_scratch(feed)
    assert await feed.points("Electricity, channel 0") == after
