"""Deliveries to real local HTTP receivers: the spec's status table, Basic auth, ordering,
isolation of slow customers, and registration periods."""

from __future__ import annotations

import base64
import time
from itertools import pairwise

import asyncpg
import pytest

from tests.support.forwarder import (
    FAST,
    Action,
    Customer,
    NewCustomer,
    NewReceiver,
    Receiver,
    add_points,
    aligned_past,
    backdate,
    configure,
    register,
    rewind,
)
from tests.support.http import http_client
from tests.support.provisioning import new_sn
from tests.support.services import eventually, free_port

GAS = (1, 5, 7, None, None)


async def customer_with_two_batches(
    api: str, db: asyncpg.Connection, new_customer: NewCustomer, url: str
) -> tuple[Customer, int]:
    """A customer whose homebase stored a point in each of two intervals, B and B + 60, and
    whose cursor is at B (ten minutes ago): ten deliveries are due at once."""
    customer = await new_customer()
    assert (await configure(api, customer, url)).status_code == 200
    sn = new_sn()
    await register(api, customer, sn, db)
    b = aligned_past(10)
    await add_points(db, sn, GAS, [(b + 5, 1.0), (b + 65, 2.0)])
    await backdate(db, customer, sn, since=b - 3600, cursor=b)
    return customer, b


async def log_of(db: asyncpg.Connection, customer: Customer) -> list[tuple[str, str, int | None]]:
    rows = await db.fetch(
        "SELECT batch_id, outcome, status FROM forwarder.delivery_log"
        " WHERE customer_id = $1 ORDER BY id",
        customer.id,
    )
    return [(str(r["batch_id"]), r["outcome"], r["status"]) for r in rows]


@pytest.mark.parametrize("status", [200, 204])
async def test_2xx_is_success_and_the_next_batch_follows(
    api: str,
    db: asyncpg.Connection,
    new_customer: NewCustomer,
    receiver_factory: NewReceiver,
    deliveries: None,
    status: int,
) -> None:
    receiver = await receiver_factory([status], then=status)
    customer, b = await customer_with_two_batches(api, db, new_customer, receiver.url)
    await eventually(lambda: len(receiver.requests) >= 10)
    first, second = (r.json() for r in receiver.requests[:2])
    assert (first["from"], first["to"], second["from"], second["to"]) == (
        b,
        b + 60,
        b + 60,
        b + 120,
    )
    assert first["id"] != second["id"]
    assert [r.headers["idempotency-key"] for r in receiver.requests[:2]] == receiver.ids()[:2]
    assert receiver.requests[0].headers["content-type"] == "application/json"
    # Both points were stored before the first delivery: they are in it, whatever their time.
    assert [p["t"] for p in first["data"]] == [b + 5, b + 65]
    # Every later interval is delivered too, with nothing in it.
    bodies = [r.json() for r in receiver.requests[:10]]
    assert [body["from"] for body in bodies] == [b + 60 * n for n in range(10)]
    assert all(body["data"] == [] for body in bodies[1:])
    log = await log_of(db, customer)
    assert log[:2] == [(first["id"], "delivered", status), (second["id"], "delivered", status)]


async def test_4xx_drops_the_batch_and_sends_the_next(
    api: str,
    db: asyncpg.Connection,
    new_customer: NewCustomer,
    receiver_factory: NewReceiver,
    deliveries: None,
) -> None:
    receiver = await receiver_factory([404], then=200)
    customer, b = await customer_with_two_batches(api, db, new_customer, receiver.url)
    # The third batch is made only once the second one's outcome is recorded.
    await eventually(lambda: len(receiver.requests) >= 3)
    ids = receiver.ids()
    assert ids[0] != ids[1]
    assert [r.json()["from"] for r in receiver.requests[:2]] == [b, b + 60]
    log = await log_of(db, customer)
    assert log[:2] == [(ids[0], "dropped", 404), (ids[1], "delivered", 200)]


TEMPORARY: list[tuple[str, list[Action]]] = [
    ("301", [301, 301]),
    ("500", [500, 503]),
    ("timeout", ["hang"]),
    ("dropped connection", ["close"]),
]


@pytest.mark.parametrize(("case", "script"), TEMPORARY, ids=[c for c, _ in TEMPORARY])
async def test_temporary_failures_resend_the_same_batch_until_2xx(
    api: str,
    db: asyncpg.Connection,
    new_customer: NewCustomer,
    receiver_factory: NewReceiver,
    deliveries: None,
    case: str,
    script: list[Action],
) -> None:
    receiver = await receiver_factory(script, then=200)
    customer, b = await customer_with_two_batches(api, db, new_customer, receiver.url)
    attempts = len(script) + 1
    await eventually(lambda: len(receiver.requests) >= attempts + 1)
    ids = receiver.ids()
    assert ids[:attempts] == [ids[0]] * attempts, case
    assert ids[attempts] != ids[0]
    froms = [r.json()["from"] for r in receiver.requests[: attempts + 1]]
    assert froms == [b] * attempts + [b + 60]
    bodies = {r.body for r in receiver.requests[:attempts]}
    assert len(bodies) == 1  # byte for byte the same request

    async def recorded() -> bool:
        return len(await log_of(db, customer)) >= attempts + 1

    await eventually(recorded)
    outcomes = [o for _, o, _ in await log_of(db, customer)]
    assert outcomes[: attempts + 1] == ["retry"] * len(script) + ["delivered", "delivered"]


async def test_connection_refused_is_retried_until_the_endpoint_comes_up(
    api: str,
    db: asyncpg.Connection,
    new_customer: NewCustomer,
    receiver_factory: NewReceiver,
    deliveries: None,
) -> None:
    dead = f"http://127.0.0.1:{free_port()}/hook"
    customer, b = await customer_with_two_batches(api, db, new_customer, dead)

    async def refused_twice() -> bool:
        log = await log_of(db, customer)
        return len(log) >= 2

    await eventually(refused_twice, 60)
    log = await log_of(db, customer)
    assert {o for _, o, _ in log} == {"retry"}
    assert len({i for i, _, _ in log}) == 1
    errors = await db.fetch(
        "SELECT status, error FROM forwarder.delivery_log WHERE customer_id = $1", customer.id
    )
    assert all(e["status"] is None and e["error"] == "ConnectionRefusedError" for e in errors)
    receiver = await receiver_factory()
    assert (await configure(api, customer, receiver.url)).status_code == 200
    await eventually(lambda: len(receiver.requests) >= 2)
    assert receiver.ids()[0] == log[0][0]
    assert [r.json()["from"] for r in receiver.requests[:2]] == [b, b + 60]


async def test_backoff_grows_and_is_capped_at_the_interval(
    api: str,
    db: asyncpg.Connection,
    new_customer: NewCustomer,
    receiver_factory: NewReceiver,
    deliveries: None,
) -> None:
    receiver = await receiver_factory(then=500)
    customer, _ = await customer_with_two_batches(api, db, new_customer, receiver.url)

    async def five_logged() -> bool:
        return len(await log_of(db, customer)) >= 5

    await eventually(five_logged)
    rows = await db.fetch(
        "SELECT attempted_at FROM forwarder.delivery_log WHERE customer_id = $1 ORDER BY id",
        customer.id,
    )
    gaps = [(b["attempted_at"] - a["attempted_at"]).total_seconds() for a, b in pairwise(rows)]
    # backoff_base 0.1 s: 0.1, 0.2, 0.4, 0.8 ... (plus polling), never shorter than the backoff.
    for n, gap in enumerate(gaps[:4]):
        assert gap >= 0.1 * 2**n - 0.02, gaps
    assert gaps[3] > gaps[0]
    state = await db.fetchrow(
        "SELECT attempts, batch_body IS NOT NULL AS stored FROM forwarder.delivery_state"
        " WHERE customer_id = $1",
        customer.id,
    )
    assert state is not None
    assert state["attempts"] >= 4
    assert state["stored"]


async def test_credentials_go_as_basic_auth_and_never_into_the_url_or_log(
    api: str,
    db: asyncpg.Connection,
    new_customer: NewCustomer,
    receiver_factory: NewReceiver,
    deliveries: None,
) -> None:
    receiver = await receiver_factory([500], then=200)
    url = f"http://hook%40user:s3cr%3At@127.0.0.1:{receiver.port}/in?customer=7"
    customer, _ = await customer_with_two_batches(api, db, new_customer, url)
    await eventually(lambda: len(receiver.requests) >= 3)
    expected = "Basic " + base64.b64encode(b"hook@user:s3cr:t").decode()
    assert [r.headers["authorization"] for r in receiver.requests[:3]] == [expected] * 3
    assert receiver.requests[0].path == "/in?customer=7"
    stored = await db.fetchrow(
        "SELECT url, username, password FROM forwarder.configs WHERE customer_id = $1", customer.id
    )
    assert stored is not None
    assert stored["url"] == f"http://127.0.0.1:{receiver.port}/in?customer=7"
    logged = await db.fetch(
        "SELECT * FROM forwarder.delivery_log WHERE customer_id = $1", customer.id
    )
    assert logged
    assert all("s3cr" not in str(dict(row)) for row in logged)


async def test_a_dead_customer_does_not_delay_another(
    api: str,
    db: asyncpg.Connection,
    new_customer: NewCustomer,
    receiver_factory: NewReceiver,
    deliveries: None,
) -> None:
    hanging = await receiver_factory(then="hang")
    healthy = await receiver_factory()
    await customer_with_two_batches(api, db, new_customer, hanging.url)
    await hanging.arrived.wait()
    started = time.monotonic()
    await customer_with_two_batches(api, db, new_customer, healthy.url)
    await eventually(lambda: len(healthy.requests) >= 2)
    # Both of the healthy customer's batches within one timeout of the hanging one's first
    # request: not queued behind it.
    assert time.monotonic() - started < FAST.delivery_timeout
    assert len({r.batch_id for r in hanging.requests}) == 1  # still retrying its first batch


async def test_points_belong_to_the_customer_registered_when_they_were_stored(
    api: str,
    db: asyncpg.Connection,
    new_customer: NewCustomer,
    receiver_factory: NewReceiver,
    deliveries: None,
) -> None:
    """Homebase X is the first customer's, then nobody's, then the second's: each point goes to
    the customer X was registered to when the point was stored, whatever its timestamp."""
    first_receiver, second_receiver = await receiver_factory(), await receiver_factory()
    first, second = await new_customer(), await new_customer()
    b = aligned_past(10)
    sn = new_sn()
    await configure(api, first, first_receiver.url)
    await configure(api, second, second_receiver.url)
    await register(api, first, sn, db)
    await add_points(db, sn, GAS, [(b + 10, 1.0)])
    async with http_client(base_url=api, headers=first.headers()) as c:
        assert (await c.delete(f"/register/{sn}")).status_code == 200
    await add_points(db, sn, GAS, [(b + 20, 2.0)])  # stored while nobody's: never sent
    await register(api, second, sn, db)
    await add_points(db, sn, GAS, [(b + 30, 3.0), (b - 7200, 4.0)])
    for customer in (first, second):
        await rewind(db, customer, b)
    await eventually(
        lambda: len(first_receiver.requests) >= 10 and len(second_receiver.requests) >= 10
    )

    def sent(receiver: Receiver) -> list[tuple[int, float]]:
        return [(p["t"], p["v"]) for r in receiver.requests for p in r.json()["data"]]

    assert sent(first_receiver) == [(b + 10, 1.0)]
    # Stored in one transaction: in the order of their timestamps within it.
    assert sent(second_receiver) == [(b - 7200, 4.0), (b + 30, 3.0)]


async def test_a_customer_with_nothing_registered_gets_an_empty_delivery_each_interval(
    api: str,
    db: asyncpg.Connection,
    new_customer: NewCustomer,
    receiver_factory: NewReceiver,
    deliveries: None,
) -> None:
    receiver = await receiver_factory()
    customer = await new_customer()
    assert (await configure(api, customer, receiver.url, "aggregated")).status_code == 200
    b = aligned_past(3)
    await rewind(db, customer, b)
    await eventually(lambda: len(receiver.requests) >= 3)
    bodies = [r.json() for r in receiver.requests[:3]]
    assert [(x["from"], x["to"], x["mode"], x["data"]) for x in bodies] == [
        (b + 60 * n, b + 60 * (n + 1), "aggregated", []) for n in range(3)
    ]
    assert len({x["id"] for x in bodies}) == 3


async def test_get_deliveries_shows_points_attempts_last_status_and_next_retry(
    api: str,
    db: asyncpg.Connection,
    new_customer: NewCustomer,
    receiver_factory: NewReceiver,
    deliveries: None,
) -> None:
    receiver = await receiver_factory(then=503)
    customer, b = await customer_with_two_batches(api, db, new_customer, receiver.url)
    await eventually(lambda: len(receiver.requests) >= 3)
    async with http_client(base_url=api, headers=customer.headers()) as client:
        (pending,) = (await client.get("/deliveries")).json()["deliveries"]
        assert pending["id"] == receiver.requests[0].batch_id
        assert (pending["from"], pending["to"], pending["points"]) == (b, b + 60, 2)
        assert pending["outcome"] == "pending"
        assert pending["attempts"] >= 2
        assert (pending["status"], pending["error"]) == (503, None)
        assert pending["next_retry"] is not None
        receiver.then = 200
        await eventually(lambda: len({r.batch_id for r in receiver.requests}) >= 3)

        async def listed() -> list[dict[str, object]]:
            answer = await client.get("/deliveries", params={"limit": 100})
            deliveries: list[dict[str, object]] = answer.json()["deliveries"]
            return deliveries

        async def first_delivered() -> bool:
            return any(
                d["id"] == pending["id"] and d["outcome"] == "delivered" for d in await listed()
            )

        await eventually(first_delivered)
        (done,) = [d for d in await listed() if d["id"] == pending["id"]]
        assert (done["status"], done["points"], done["next_retry"]) == (200, 2, None)
        assert isinstance(done["attempts"], int)
        assert done["attempts"] >= 3
        assert (await client.get("/deliveries", params={"limit": 0})).status_code == 400
    async with http_client(base_url=api) as anonymous:
        assert (await anonymous.get("/deliveries")).status_code == 401
