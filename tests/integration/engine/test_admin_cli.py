"""`energy-platform admin reprocess ...` (`admin tariffs`: tests/integration/billing/)."""

import pytest

from energy_platform.core.settings import Settings
from tests.support.admin import admin_refusal, run_admin
from tests.support.data import T0
from tests.support.engine import NewFeed, process


async def test_reprocess_recomputes_a_feed_over_a_range(
    new_feed: NewFeed, settings: Settings
) -> None:
    feed = await new_feed()
    clamp = await feed.raw_stream(channel=1, medium=1)
    await feed.ingest(clamp, [(T0 + s, 1000.0) for s in range(0, 91, 5)])
    await process(feed.db)
    # Someone overwrote a processed point by hand; reprocessing puts the computed one back.
    energy = await feed.stream_id("Electricity, channel 1")
    await feed.db.execute(
        "UPDATE cluster.processed_points SET value = 1 WHERE stream_id = $1", energy
    )

    result = await run_admin(
        settings,
        "reprocess",
        str(feed.id),
        "--from",
        "2026-01-01T00:00:00Z",
        "--to",
        "2026-01-02T00:00:00Z",
    )
    await process(feed.db)

    assert result["streams"] == 1
    assert await feed.points("Electricity, channel 1") == {T0: pytest.approx(25.0)}
    missing = await admin_refusal(
        settings, "reprocess", "999999999", "--from", "2026-01-01T00:00:00Z"
    )
    assert "no feed" in missing
