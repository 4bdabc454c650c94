"""Energy in Wh per 90 s bucket from power samples in W: trapezoids, clipped, gaps not bridged."""

import pytest

from tests.support.data import T0
from tests.support.engine import NewFeed, process


async def test_1000_w_held_for_90_s_gives_25_wh(new_feed: NewFeed) -> None:
    feed = await new_feed()
    clamp = await feed.raw_stream(channel=1, medium=1)
    await feed.ingest(clamp, [(T0 + s, 1000.0) for s in range(0, 91, 5)])

    await process(feed.db)

    # 1000 W x 90 s = 90,000 Ws = 25 Wh, at the bucket's start.
    assert await feed.points("Electricity, channel 1") == {T0: pytest.approx(25.0)}


async def test_a_ramp_is_integrated_as_trapezoids_cut_at_the_bucket_edges(
    new_feed: NewFeed,
) -> None:
    feed = await new_feed()
    clamp = await feed.raw_stream(channel=1, medium=1)
    # P(t) = 400 + 10·t W, sampled every 40 s from t = -20 to 220: never on a bucket edge.
    await feed.ingest(clamp, [(T0 + t, 400.0 + 10 * t) for t in range(-20, 221, 40)])

    await process(feed.db)

    # ∫ P dt over [a, b] = 400 (b - a) + 5 (b² - a²) Ws; linear, so the trapezoids are exact.
    # [-20, 0]: 8000 - 2000 = 6000 Ws; [0, 90]: 36000 + 40500 = 76500 Ws;
    # [90, 180]: 36000 + 121500 = 157500 Ws; [180, 220]: 16000 + 80000 = 96000 Ws.
    assert await feed.points("Electricity, channel 1") == {
        T0 - 90: pytest.approx(6000 / 3600),
        T0: pytest.approx(21.25),
        T0 + 90: pytest.approx(43.75),
        T0 + 180: pytest.approx(96000 / 3600),
    }


async def test_a_gap_over_5_minutes_is_not_bridged_and_one_of_5_minutes_is(
    new_feed: NewFeed,
) -> None:
    feed = await new_feed()
    gappy = await feed.raw_stream(channel=1, medium=1)
    steady = await feed.raw_stream(channel=2, medium=1)
    # 1000 W from 0 to 30 s, silence for 370 s, 1000 W again from 400 s to 450 s.
    await feed.ingest(gappy, [(T0 + s, 1000.0) for s in range(0, 31, 5)])
    await feed.ingest(gappy, [(T0 + s, 1000.0) for s in range(400, 451, 5)])
    # Two samples exactly 300 s apart: bridged.
    await feed.ingest(steady, [(T0, 1000.0), (T0 + 300, 1000.0)])

    await process(feed.db)

    # [0, 30]: 30,000 Ws; buckets 90..359 lie in the gap: no points; [400, 450]: 50,000 Ws
    # in the bucket starting at 360; the bucket at 450 holds one sample and no segment.
    assert await feed.points("Electricity, channel 1") == {
        T0: pytest.approx(30000 / 3600),
        T0 + 360: pytest.approx(50000 / 3600),
    }
    # 1000 W over [0, 300]: three full buckets of 25 Wh and 30 s (8.33 Wh) in the fourth.
    assert await feed.points("Electricity, channel 2") == {
        T0: pytest.approx(25.0),
        T0 + 90: pytest.approx(25.0),
        T0 + 180: pytest.approx(25.0),
        T0 + 270: pytest.approx(30000 / 3600),
    }


async def test_three_phases_get_a_stream_each_and_a_combined_stream(new_feed: NewFeed) -> None:
    feed = await new_feed()
    phases = [await feed.raw_stream(channel=3, medium=1, idx=i, device=3) for i in (1, 2, 3)]
    for phase, watts in zip(phases, (1000.0, 2000.0, 3000.0), strict=True):
        await feed.ingest(phase, [(T0 + s, watts) for s in range(0, 91, 5)])

    await process(feed.db)

    assert await feed.points("Electricity, channel 3, L1") == {T0: pytest.approx(25.0)}
    assert await feed.points("Electricity, channel 3, L2") == {T0: pytest.approx(50.0)}
    assert await feed.points("Electricity, channel 3, L3") == {T0: pytest.approx(75.0)}
    assert await feed.points("Electricity, channel 3, total") == {T0: pytest.approx(150.0)}
    streams = await feed.db.fetch(
        "SELECT s.idx, s.combined, s.quantity, c.title, c.medium, c.unit, c.validity"
        " FROM cluster.streams s JOIN cluster.stream_configs c ON c.stream_id = s.id"
        " WHERE s.feed_id = $1 AND s.type = 'processed' AND s.quantity <> 'cost'"
        " ORDER BY s.idx",
        feed.id,
    )
    assert [(s["idx"], s["combined"], s["quantity"], s["medium"], s["unit"]) for s in streams] == [
        (1, False, "consumption", "power", "Wh"),
        (2, False, "consumption", "power", "Wh"),
        (3, False, "consumption", "power", "Wh"),
        (None, True, "consumption", "power", "Wh"),
    ]
    assert all(s["validity"].lower_inf and s["validity"].upper_inf for s in streams)
