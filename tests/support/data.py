"""The data API's world: three users, feeds (one forwarded), streams of every type and points
at known times (served by the ``world`` fixture of the data tests' conftest)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

import asyncpg
import httpx

from energy_platform import seeding
from energy_platform.api import app as data
from energy_platform.core.http.server import HttpService
from energy_platform.core.settings import Settings
from tests.support.forwarder import NO_CUSTOMER
from tests.support.http import http_client
from tests.support.services import free_port, running

T0 = 1_767_225_600
"""2026-01-01T00:00:00Z: the data tests' points are placed from here (a 90 s bucket start)."""
YEAR = (datetime(2026, 1, 1, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC))
"""2026, the subscription of the data and engine tests' feeds (T0 is its start)."""


@dataclass
class World:
    url: str
    tokens: dict[str, str]
    users: dict[str, str]
    feeds: dict[str, str]
    streams: dict[str, str]

    def client(self, who: str | None) -> httpx.AsyncClient:
        headers = {} if who is None else {"Authorization": f"Bearer {self.tokens[who]}"}
        return http_client(base_url=self.url, headers=headers)


async def seed(conn: asyncpg.Connection) -> World:
    """Users with tokens, feeds (one forwarded), streams of every type and points at known
    times; the world's ``url`` is filled in when its API is served."""
    tokens = {"alice": "alice-token", "bob": "bob-token", "root": "root-token"}
    users = {}
    for name, token in tokens.items():
        user = await seeding.add_user(conn, f"{name}-data-api", token=token, admin=name == "root")
        users[name] = user.id
    feeds = {}
    for key, owner, sn in (
        ("home", "alice", "D000000000000001"),
        ("bobs", "bob", "D000000000000002"),
        ("forwarded", "alice", "D000000000000003"),
    ):
        feeds[key] = await seeding.add_feed(
            conn, users[owner], sn, title=f"{key} feed", start=YEAR[0], end=YEAR[1]
        )
    await conn.execute(
        "SELECT cluster.set_feed_config($1, '2026-06-01T00:00:00Z', 'Home (renamed)',"
        " 'Europe/Prague')",
        feeds["home"],
    )
    await conn.execute(
        "INSERT INTO forwarder.registrations (homebase_sn, customer_id) VALUES ($1, $2)",
        "D000000000000003",
        NO_CUSTOMER,
    )
    home = feeds["home"]
    streams = {
        "phase1": await seeding.raw_stream(conn, home, 1, 1, device=3, idx=1),
        "phase2": await seeding.raw_stream(conn, home, 1, 1, device=3, idx=2),
        "gas": await seeding.raw_stream(conn, home, 2, 7, device=5),
        "energy1": await seeding.processed_stream(conn, home, 1, title="Energy", idx=1, unit="kWh"),
        "energy": await seeding.processed_stream(
            conn, home, 1, title="Energy", combined=True, unit="kWh"
        ),
        # A meter's tariff register and its export, on a channel of their own (no points).
        "tariff2": await seeding.processed_stream(
            conn, home, 3, title="Electricity, channel 3, tariff 2", register=2
        ),
        "export": await seeding.processed_stream(
            conn, home, 3, title="Electricity export, channel 3", quantity="export"
        ),
        "signal": await seeding.system_stream(conn, home, 0, "medium:40", device=3),
        "bobs_power": await seeding.raw_stream(conn, feeds["bobs"], 1, 1, device=3),
        "forwarded_power": await seeding.raw_stream(conn, feeds["forwarded"], 1, 1, device=3),
    }
    await conn.execute(
        "SELECT cluster.set_stream_config($1, '2026-03-01T00:00:00Z', 'Off', NULL, 'kWh')",
        streams["energy1"],
    )
    # phase1: 300 points, 5 s apart from T0, value = index; gas: one point at T0 + 1000;
    # energy1: one point per 90 s bucket for an hour; signal: one point at T0 + 86400.
    await seeding.write_points(conn, streams["phase1"], [(T0 + 5 * i, i) for i in range(300)])
    await seeding.write_points(conn, streams["gas"], [(T0 + 1000, 1234.5)])
    await seeding.write_points(conn, streams["signal"], [(T0 + 86_400, -71)])
    # Straight into processed points, on purpose: the data tests read energy1 (its
    # configuration 'Off' from March) at exactly these values, which phase1's readings would
    # not make.
    await conn.execute(
        "INSERT INTO cluster.processed_points SELECT $1, to_timestamp($2::bigint + 90 * i), 0.025"
        " FROM generate_series(0, 39) i",
        streams["energy1"],
        T0,
    )
    await seeding.write_points(conn, streams["bobs_power"], [(T0, 50)])
    return World(
        "",
        tokens,
        {k: str(v) for k, v in users.items()},
        {k: str(v) for k, v in feeds.items()},
        {k: str(v) for k, v in streams.items()},
    )


@asynccontextmanager
async def data_api(settings: Settings) -> AsyncIterator[str]:
    """The data API of ``settings``, served by a real uvicorn on a free port: its base URL."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    service = HttpService("api", data.create_app(settings), "127.0.0.1", port)
    async with running(service, ready_urls=(url + "/healthz",)):
        yield url
