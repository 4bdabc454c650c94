"""Processed streams as a user of the data API sees them."""

from energy_platform.api import app as data
from energy_platform.core.http.server import HttpService
from energy_platform.core.settings import Settings
from tests.support.data import T0
from tests.support.engine import NewFeed, process
from tests.support.http import http_client
from tests.support.services import free_port, running


async def test_the_api_shows_phases_their_combined_stream_and_cost(
    new_feed: NewFeed, settings: Settings
) -> None:
    feed = await new_feed()
    for idx, watts in ((1, 1000.0), (2, 2000.0), (3, 3000.0)):
        phase = await feed.raw_stream(channel=1, medium=1, idx=idx, device=3)
        await feed.ingest(phase, [(T0 + s, watts) for s in range(0, 91, 5)])
    await feed.db.execute(
        "SELECT cluster.set_tariff($1, 'power', '-infinity', ARRAY['00:00'::time], ARRAY[0.2])",
        feed.id,
    )
    await process(feed.db)

    port = free_port()
    api = HttpService("api", data.create_app(settings), "127.0.0.1", port)
    url = f"http://127.0.0.1:{port}"
    async with running(api, ready_urls=(url + "/healthz",)):
        headers = {"Authorization": f"Bearer {feed.owner_token}"}
        async with http_client(base_url=url, headers=headers) as client:
            streams = (
                await client.get(f"/feeds/{feed.id}/streams", params={"type": "processed"})
            ).json()
            shown = {
                s["configs"][-1]["title"]: (s.get("index"), s["combined"], s["configs"][-1]["unit"])
                for s in streams
            }
            total = next(s for s in streams if s["configs"][-1]["title"].endswith("1, total"))
            cost = next(
                s for s in streams if s["configs"][-1]["title"].endswith("cost, channel 1, total")
            )
            total_points = (await client.get(f"/feeds/{feed.id}/streams/{total['id']}/data")).json()
            cost_points = (await client.get(f"/feeds/{feed.id}/streams/{cost['id']}/data")).json()
            raw = (await client.get(f"/feeds/{feed.id}/streams", params={"type": "raw"})).json()

    # The three raw phases share channel, device and medium: index alone tells L1 from L3.
    assert sorted((s["channel"], s["device"], s["medium"], s["index"]) for s in raw) == [
        (1, 3, 1, 1),
        (1, 3, 1, 2),
        (1, 3, 1, 3),
    ]

    assert shown == {
        "Electricity, channel 1, L1": (1, False, "Wh"),
        "Electricity, channel 1, L2": (2, False, "Wh"),
        "Electricity, channel 1, L3": (3, False, "Wh"),
        "Electricity, channel 1, total": (None, True, "Wh"),
        "Electricity cost, channel 1, L1": (1, False, "CZK"),
        "Electricity cost, channel 1, L2": (2, False, "CZK"),
        "Electricity cost, channel 1, L3": (3, False, "CZK"),
        "Electricity cost, channel 1, total": (None, True, "CZK"),
    }
    assert total["configs"][-1]["medium"] == "power"
    # 25 + 50 + 75 Wh; 0.15 kWh at 0.2 per kWh.
    assert total_points == [[T0, 150.0]]
    assert cost_points == [[T0, 0.03]]
