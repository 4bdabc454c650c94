"""Destinations: refused at POST /config unless public or inside EP_FORWARDER_ALLOWED_NETWORKS,
checked again at every connection, and only the status line of an answer is read.

Every refusal here is checked on the answer to POST /config: the forwarder never connects to
anything but loopback in these tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import msgspec
import pytest

from energy_platform.core.http.server import HttpService
from energy_platform.core.settings import ForwarderSettings, Settings
from energy_platform.forwarder.delivery import DeliveryService
from energy_platform.forwarder.http import app as forwarder
from tests.support.forwarder import (
    FAST,
    NewCustomer,
    NewReceiver,
    add_points,
    aligned_past,
    backdate,
    configure,
    register,
    rewind,
)
from tests.support.http import http_client
from tests.support.provisioning import new_sn
from tests.support.services import eventually, free_port, running

NOT_PUBLIC = [
    "http://127.0.0.1:8001/x",
    "http://[::1]:8000/",
    "http://2130706433/",  # 127.0.0.1 as an integer
    "http://0x7f.1/",
    "http://127.1/",
    "http://017700000001/",
    "http://localhost:8002/",
    "http://10.0.0.1/",
    "http://172.16.5.4/",
    "http://192.168.1.1/",
    "http://169.254.169.254/latest/meta-data",
    "http://100.64.0.1/",
    "http://224.0.0.1/",
    "http://240.0.0.1/",
    "http://0.0.0.0/",
    "http://255.255.255.255/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:10.0.0.1]/",
    "http://[64:ff9b::a00:1]/",  # NAT64 of 10.0.0.1
    "http://[2002:a00:1::]/",  # 6to4 of 10.0.0.1
    "http://[fe80::1]/",
    "http://[fc00::1]/",
    "http://[ff02::1]/",
    "http://[::]/",
    "https://user:pw@192.168.0.10:8443/hook",
]


@pytest.fixture(scope="module")
async def strict_api(settings: Settings) -> AsyncIterator[str]:
    """The forwarder API with no network opened: only public destinations."""
    port = free_port()
    strict = msgspec.structs.replace(settings, forwarder=ForwarderSettings())
    service = HttpService("forwarder", forwarder.create_app(strict), "127.0.0.1", port)
    async with running(service, ready_urls=(f"http://127.0.0.1:{port}/healthz",)):
        yield f"http://127.0.0.1:{port}"


@pytest.mark.parametrize("url", NOT_PUBLIC)
async def test_a_destination_that_is_not_public_is_400_and_changes_nothing(
    strict_api: str, new_customer: NewCustomer, url: str
) -> None:
    customer = await new_customer()
    answer = await configure(strict_api, customer, url)
    assert answer.status_code == 400, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["field"] == "url"
    async with http_client(base_url=strict_api, headers=customer.headers()) as client:
        assert (await client.get("/config")).status_code == 404


@pytest.mark.parametrize(
    ("url", "status"),
    [
        ("http://127.0.0.1:9/hook", 200),
        ("http://[::1]:9/hook", 200),
        ("http://localhost:9/hook", 200),
        ("http://2130706433:9/hook", 200),
        ("http://10.0.0.1/hook", 400),
        ("http://192.168.1.1/hook", 400),
        ("http://[fe80::1]/hook", 400),
    ],
)
async def test_allowed_networks_open_only_themselves(
    api: str, new_customer: NewCustomer, url: str, status: int
) -> None:
    """The test API allows 127.0.0.0/8 and ::1/128, nothing else; a refused destination is
    never stored, so no delivery can ever aim at it."""
    customer = await new_customer()
    answer = await configure(api, customer, url)
    assert answer.status_code == status, answer.text
    async with http_client(base_url=api, headers=customer.headers()) as client:
        assert (await client.get("/config")).status_code == (200 if status == 200 else 404)


async def test_a_destination_is_checked_again_at_every_connection(
    api: str,
    settings: Settings,
    db: asyncpg.Connection,
    new_customer: NewCustomer,
    receiver_factory: NewReceiver,
) -> None:
    """Accepted by an API that allows loopback; a delivery process that does not refuses it."""
    receiver = await receiver_factory()
    customer = await new_customer()
    assert (await configure(api, customer, receiver.url)).status_code == 200
    sn = new_sn()
    await register(api, customer, sn, db)
    b = aligned_past(3)
    await add_points(db, sn, (1, 5, 7, None, None), [(b + 5, 1.0)])
    await backdate(db, customer, sn, since=b - 60, cursor=b)
    strict = msgspec.structs.replace(FAST, allowed_networks="")
    async with running(DeliveryService(settings.database, strict)):

        async def refused() -> bool:
            errors = await db.fetch(
                "SELECT error FROM forwarder.delivery_log WHERE customer_id = $1", customer.id
            )
            return len(errors) >= 2 and {e["error"] for e in errors} == {"refused_destination"}

        await eventually(refused)
    assert receiver.requests == []
    # Allowed again: the same batch goes out.
    async with running(DeliveryService(settings.database, FAST)):
        await eventually(lambda: len(receiver.requests) >= 1)
    assert [p["t"] for p in receiver.requests[0].json()["data"]] == [b + 5]


async def test_only_the_status_line_is_read(
    api: str,
    settings: Settings,
    db: asyncpg.Connection,
    new_customer: NewCustomer,
    deliveries: None,
) -> None:
    """An endpoint that answers 200 with a gzip body announced at 1 GB and sent forever: the
    delivery counts as delivered at once, nothing of the body is read."""
    sent = 0
    requests: list[bytes] = []

    async def endless(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal sent
        requests.append(await reader.readuntil(b"\r\n\r\n"))
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 1000000000\r\n\r\n"
        )
        try:
            while True:
                writer.write(b"\x1f\x8b" + b"\0" * 65536)
                await writer.drain()
                sent += 65538
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(endless, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        customer = await new_customer()
        url = f"http://127.0.0.1:{port}/hook"
        assert (await configure(api, customer, url)).status_code == 200
        b = aligned_past(2)
        await rewind(db, customer, b)

        async def delivered() -> bool:
            outcomes = await db.fetch(
                "SELECT outcome FROM forwarder.delivery_log WHERE customer_id = $1", customer.id
            )
            return [o["outcome"] for o in outcomes][:2] == ["delivered", "delivered"]

        await eventually(delivered)
        assert len(requests) >= 2
        assert sent < 50_000_000  # the connection was dropped, not drained
    finally:
        server.close()
