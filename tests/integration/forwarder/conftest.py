"""The forwarder under test: its API on a free port, a delivery service with short timings,
customers made as the admin CLI makes them, and real HTTP receivers (helpers in
tests/support/forwarder.py)."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator

import asyncpg
import pytest

from energy_platform.core.http.server import HttpService
from energy_platform.core.settings import Settings
from energy_platform.core.tokens import new_token, token_digest
from energy_platform.forwarder.delivery import DeliveryService
from energy_platform.forwarder.http import app as forwarder
from tests.support.forwarder import (
    FAST,
    Action,
    Customer,
    NewCustomer,
    NewReceiver,
    Receiver,
    loopback_allowed,
)
from tests.support.services import running


@pytest.fixture
async def receiver_factory() -> AsyncIterator[NewReceiver]:
    servers: list[asyncio.Server] = []

    async def make(script: list[Action] | None = None, then: Action = 200) -> Receiver:
        receiver = Receiver(list(script or []), then)
        server = await asyncio.start_server(receiver.handle, "127.0.0.1", 0)
        receiver.port = server.sockets[0].getsockname()[1]
        servers.append(server)
        return receiver

    yield make
    for server in servers:
        server.close()


@pytest.fixture
async def new_customer(
    db: asyncpg.Connection,
) -> AsyncIterator[NewCustomer]:
    made: list[int] = []

    async def make() -> Customer:
        # As `admin customers add` does (tested in test_api.py); not through the CLI, whose
        # stdout capture would also catch the logs of a delivery service running meanwhile.
        name, token = f"customer-{os.getpid()}-{time.time_ns()}", new_token()
        customer_id: int = await db.fetchval(
            "INSERT INTO forwarder.customers (name, token_sha256) VALUES ($1, $2) RETURNING id",
            name,
            token_digest(token),
        )
        made.append(customer_id)
        # Nothing is due until the test puts the cursor where it wants it (rewind): a minute
        # that ends while the test sets up must not make a batch of its own.
        await db.execute(
            "INSERT INTO forwarder.delivery_state (customer_id, delivered_to)"
            " VALUES ($1, date_trunc('minute', now()) + interval '1 day')",
            customer_id,
        )
        return Customer(customer_id, token)

    yield make
    # Later tests' delivery services must not keep trying this test's receivers.
    await db.execute("DELETE FROM forwarder.configs WHERE customer_id = ANY($1)", made)
    await db.execute("DELETE FROM forwarder.registrations WHERE customer_id = ANY($1)", made)


@pytest.fixture(scope="module")
async def api(settings: Settings) -> AsyncIterator[str]:
    url = f"http://127.0.0.1:{settings.http.forwarder_port}"
    app = forwarder.create_app(loopback_allowed(settings))
    service = HttpService("forwarder", app, "127.0.0.1", settings.http.forwarder_port)
    async with running(service, ready_urls=(url + "/healthz",)):
        yield url


@pytest.fixture
async def deliveries(settings: Settings) -> AsyncIterator[None]:
    async with running(DeliveryService(settings.database, FAST)):
        yield
