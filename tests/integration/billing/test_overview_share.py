"""The overview within a share (issue 59, core/http/shares.py): one user looping year overviews
on a feed of a thousand channels gets 429 past their slots while another user's data requests
answer; a feed of more channels than the overview reads is refused with 413."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import UTC, datetime

import asyncpg
import httpx
import pytest

from energy_platform.core.codec.format_v4 import Series
from energy_platform.devices.ingest.routes import Route
from energy_platform.devices.ingest.store import Accepted, PointStore, cluster_streams
from tests.support.engine import Feed, NewFeed, process

CHANNELS = 1000  # EP_API_OVERVIEW_MAX_CHANNELS: the most an overview reads
FLOOD = 40
# Three points of 1000 W a minute apart on each channel, early this year (the feeds'
# subscription is 2026; a bucket start).
T = int(datetime(2026, 1, 5, tzinfo=UTC).timestamp())


def owner(feed: Feed) -> dict[str, str]:
    return {"Authorization": f"Bearer {feed.owner_token}"}


async def clamps(database_url: str, feed: Feed, channels: int) -> None:
    """A clamp with three points on each of ``channels`` channels, in one batch of ingest's."""
    series = [
        Series(c, 1, 1, None, None, None, [T, T + 60, T + 120], [1000.0] * 3)
        for c in range(1, channels + 1)
    ]
    async with asyncpg.create_pool(database_url, min_size=1, max_size=1) as pool:
        await PointStore(pool).write([Accepted(Route(feed.sn, feed.id), series)])


async def test_one_users_flood_of_year_overviews_gets_429_while_another_users_data_answers(
    new_feed: NewFeed, api: httpx.AsyncClient, database_url: str
) -> None:
    flooder, other = await new_feed(), await new_feed()
    await clamps(database_url, flooder, CHANNELS)
    await clamps(database_url, other, 1)
    await process(flooder.db)
    (raw,) = await other.db.fetch(
        "SELECT id FROM cluster.streams WHERE feed_id = $1 AND type = 'raw'", other.id
    )

    refused = asyncio.Event()

    async def overview() -> httpx.Response:
        answer = await api.get(
            f"/feeds/{flooder.id}/overview",
            params={"period": "year", "date": "2026-06-01", "compare": "last_year"},
            headers=owner(flooder),
            timeout=300,
        )
        if answer.status_code == 429:
            refused.set()
        return answer

    flood = asyncio.gather(*(overview() for _ in range(FLOOD)))
    # Once the flood is refused its first 429, the other user reads their data.
    waiting = asyncio.create_task(refused.wait())
    await asyncio.wait([flood, waiting], return_when=asyncio.FIRST_COMPLETED)
    waiting.cancel()
    assert refused.is_set(), "no overview of the flood was refused"
    data = await asyncio.gather(
        *(
            api.get(
                f"/feeds/{other.id}/streams/{raw['id']}/data",
                params={"time_from": T, "time_to": T + 120},
                headers=owner(other),
                timeout=300,
            )
            for _ in range(20)
        )
    )
    answers = await flood

    assert [(d.status_code, d.json()) for d in data] == [
        (200, [[T, 1000.0], [T + 60, 1000.0], [T + 120, 1000.0]])
    ] * 20
    statuses = Counter(a.status_code for a in answers)
    # Some overviews were let in (200; on a machine loaded past the statement timeout, 503 and
    # a retry: a CI run at a load of 7 had both of its admitted overviews told so), the rest
    # refused.
    assert statuses[429], statuses
    assert statuses[200] + statuses[503], statuses
    assert set(statuses) <= {200, 429, 503}, statuses
    for answer in answers:
        if answer.status_code == 503:
            assert answer.headers["Retry-After"] == "5"
        elif answer.status_code == 429:
            assert answer.headers["Retry-After"] == "10"
            assert "this user already runs 2 overviews" in answer.json()["detail"]
        else:
            # The overviews computed read every channel: 1000 W for 120 s = 33.3 Wh each, 33.3
            # kWh for the thousand.
            (line,) = answer.json()["so_far"]["lines"]
            assert (line["quantity"], line["unit"]) == (
                pytest.approx(CHANNELS * 1000 * 120 / 3600 / 1000),
                "kWh",
            )


async def test_a_feed_of_more_channels_than_the_overview_reads_is_413(
    new_feed: NewFeed, api: httpx.AsyncClient, db: asyncpg.Connection
) -> None:
    feed = await new_feed()
    await cluster_streams(
        db, [(feed.id, "raw", c, 1, 1, None, None) for c in range(1, CHANNELS + 2)]
    )
    answer = await api.get(
        f"/feeds/{feed.id}/overview", params={"period": "year"}, headers=owner(feed)
    )
    assert answer.status_code == 413
    assert "1,001 channels" in answer.json()["detail"]
    assert "EP_API_OVERVIEW_MAX_CHANNELS" in answer.json()["detail"]
