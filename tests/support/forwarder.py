"""The forwarder's tests: real HTTP receivers that answer from a script, customers, their
configuration and registrations, and points seeded in the past (fixtures in the forwarder
tests' conftest)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import asyncpg
import httpx
import msgspec

from energy_platform.core.settings import ForwarderSettings, Settings
from tests.support.http import http_client
from tests.support.provisioning import new_sn
from tests.support.services import eventually

MINUTE = 60
NO_CUSTOMER = 0
"""A customer id for registrations that hide a homebase from its owner: no test's customer has
it (ids start at 1), so what such a homebase sends never reaches a forwarder test's customer
that happens to be the session's first."""


def aligned_past(minutes_ago: int = 10) -> int:
    """An interval start (1-minute intervals) ``minutes_ago`` minutes before now."""
    return (int(time.time()) // MINUTE - minutes_ago) * MINUTE


def at(t: int) -> datetime:
    return datetime.fromtimestamp(t, UTC)


# --- A real HTTP receiver --------------------------------------------------------------------


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> dict[str, object]:
        value = msgspec.json.decode(self.body)
        assert isinstance(value, dict)
        return value

    @property
    def batch_id(self) -> str:
        return str(self.json()["id"])


Action = int | str
"""An HTTP status to answer, or "hang" (never answer) or "close" (drop the connection)."""


@dataclass
class Receiver:
    """An HTTP/1.1 endpoint that records every request and answers from a script.

    When the script is used up, ``then`` answers every further request."""

    script: list[Action] = field(default_factory=list)
    then: Action = 200
    requests: list[Received] = field(default_factory=list)
    port: int = 0
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                _, path, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        name, _, value = line.partition(":")
                        headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                self.requests.append(Received(path, headers, body))
                self.arrived.set()
                action = self.script.pop(0) if self.script else self.then
                if action == "hang":
                    await asyncio.sleep(3600)
                if action == "close":
                    writer.close()
                    return
                reason = b"Moved" if action == 301 else b"X"
                extra = b"Location: http://127.0.0.1:1/elsewhere\r\n" if action == 301 else b""
                writer.write(
                    b"HTTP/1.1 %d %s\r\nContent-Length: 0\r\n%s\r\n" % (int(action), reason, extra)
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    def ids(self) -> list[str]:
        return [r.batch_id for r in self.requests]


NewReceiver = Callable[..., Awaitable[Receiver]]
"""The ``receiver_factory`` fixture: a started receiver, from a script."""


# --- Customers, their configuration and registrations -----------------------------------------


@dataclass
class Customer:
    id: int
    token: str

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


NewCustomer = Callable[[], Awaitable[Customer]]
"""The ``new_customer`` fixture: a customer with a token, nothing due yet."""

# The receivers listen on loopback, which is not a public address: opened as an operator would.
LOOPBACK = "127.0.0.0/8,::1/128"


def loopback_allowed(settings: Settings) -> Settings:
    return msgspec.structs.replace(
        settings,
        forwarder=msgspec.structs.replace(settings.forwarder, allowed_networks=LOOPBACK),
    )


FAST = ForwarderSettings(
    # Not short: a receiver in the test's own loop answers in milliseconds, but a loaded
    # machine can hold its answer past half a second, and an attempt timed out while it was
    # being answered is sent again (a test that counts requests then sees one twice). Only
    # the tests of a receiver that never answers wait this long.
    delivery_timeout=5.0,
    backoff_base=0.1,
    settle_seconds=0.0,
    poll_interval=0.05,
    allowed_networks=LOOPBACK,
)


async def configure(
    api: str, customer: Customer, url: str, mode: str = "all", **extra: object
) -> httpx.Response:
    body = {"interval": 1, "url": url, "format": "json", "mode": mode, **extra}
    async with http_client(base_url=api, headers=customer.headers()) as client:
        return await client.post("/config", json=body)


async def grant(db: asyncpg.Connection, customer: Customer, *serials: str) -> None:
    """What ``admin customers grant`` does (tested in test_grants.py)."""
    await db.executemany(
        "INSERT INTO forwarder.grants (customer_id, homebase_sn) VALUES ($1, $2)"
        " ON CONFLICT DO NOTHING",
        [(customer.id, sn) for sn in serials],
    )


async def register(api: str, customer: Customer, sn: str, db: asyncpg.Connection) -> None:
    """Granted by the administrator, then registered by the customer."""
    await grant(db, customer, sn)
    async with http_client(base_url=api, headers=customer.headers()) as client:
        answer = await client.post(f"/register/{sn}")
    assert answer.status_code == 201, answer.text


# --- Data in the past ------------------------------------------------------------------------


Stream = tuple[int, int, int | None, int | None, str | None]
"""(channel, device, medium, index, obis)."""


async def backdate(
    db: asyncpg.Connection, customer: Customer, sn: str, since: int, cursor: int
) -> None:
    """Make ``sn``'s registration start at ``since`` and the customer's cursor ``cursor``:
    as if both had happened long ago, so that past intervals are delivered at once. Call it
    after the points are in: a batch only holds points stored before it was made."""
    await db.execute(
        "UPDATE forwarder.registration_periods SET period = tstzrange($2, upper(period), '[)')"
        " WHERE homebase_sn = $1 AND upper_inf(period)",
        sn,
        at(since),
    )
    await rewind(db, customer, cursor)


async def rewind(db: asyncpg.Connection, customer: Customer, cursor: int) -> None:
    """Put the customer's interval cursor at ``cursor`` (an interval start), as if the forwarder
    were behind: the intervals since then are due at once. Done while none of its batches is
    pending, so that no batch is left behind."""

    async def moved() -> bool:
        status = await db.execute(
            "UPDATE forwarder.delivery_state SET delivered_to = $2"
            " WHERE customer_id = $1 AND batch_id IS NULL",
            customer.id,
            at(cursor),
        )
        return bool(status == "UPDATE 1")

    await eventually(moved)


async def add_points(
    db: asyncpg.Connection, sn: str, stream: Stream, points: list[tuple[int, float]]
) -> int:
    channel, device, medium, idx, obis = stream
    await db.execute(
        "INSERT INTO forwarder.streams (homebase_sn, channel, device, medium, idx, obis)"
        " VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
        sn,
        channel,
        device,
        medium,
        idx,
        obis,
    )
    stream_id: int = await db.fetchval(
        "SELECT id FROM forwarder.streams WHERE homebase_sn = $1 AND channel = $2 AND device = $3"
        " AND medium IS NOT DISTINCT FROM $4 AND idx IS NOT DISTINCT FROM $5"
        " AND obis IS NOT DISTINCT FROM $6",
        sn,
        channel,
        device,
        medium,
        idx,
        obis,
    )
    await db.executemany(
        "INSERT INTO forwarder.points (stream_id, ts, value) VALUES ($1, $2, $3)",
        [(stream_id, at(t), v) for t, v in points],
    )
    return stream_id


async def seeded_customer(
    api: str,
    db: asyncpg.Connection,
    new_customer: NewCustomer,
    receiver: Receiver,
    points: dict[Stream, list[tuple[int, float]]],
    b: int,
    mode: str = "aggregated",
    **config: Any,
) -> tuple[Customer, str]:
    """A new customer configured to deliver to ``receiver`` (aggregated by default), one new
    homebase of it with ``points``, its registration and cursor backdated to interval ``b``."""
    customer = await new_customer()
    answer = await configure(api, customer, receiver.url, mode, **config)
    assert answer.status_code == 200, answer.text
    sn = new_sn()
    await register(api, customer, sn, db)
    for stream, values in points.items():
        await add_points(db, sn, stream, values)
    await backdate(db, customer, sn, since=b - 3600, cursor=b)
    return customer, sn
