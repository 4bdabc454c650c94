"""``kill -9`` of a real forwarder process while it delivers and while it retries: after each
restart the same batch id goes out again, byte for byte, and no batch is ever skipped."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

import asyncpg

from energy_platform.core.settings import Settings
from tests.support.admin import CLI
from tests.support.forwarder import (
    LOOPBACK,
    NewCustomer,
    NewReceiver,
    Received,
    add_points,
    aligned_past,
    backdate,
    configure,
    register,
)
from tests.support.provisioning import new_sn
from tests.support.services import eventually, free_port

GAS = (1, 5, 7, None, None)


@contextmanager
def forwarder_process(settings: Settings) -> Iterator[subprocess.Popen[bytes]]:
    env = {
        **os.environ,
        "EP_DATABASE_URL": settings.database.url,
        "EP_HTTP_FORWARDER_PORT": str(free_port()),
        "EP_FORWARDER_DELIVERY_TIMEOUT": "1",
        "EP_FORWARDER_BACKOFF_BASE": "0.1",
        "EP_FORWARDER_SETTLE_SECONDS": "0",
        "EP_FORWARDER_POLL_INTERVAL": "0.05",
        "EP_FORWARDER_ALLOWED_NETWORKS": LOOPBACK,
        "EP_LOG_FORMAT": "json",
    }
    process = subprocess.Popen(
        [CLI, "serve", "forwarder"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(30)


def unique_batches(requests: list[Received]) -> list[Received]:
    """The first request of each batch id, in order."""
    return list({r.batch_id: r for r in reversed(requests)}.values())[::-1]


def kill_9(process: subprocess.Popen[bytes]) -> None:
    os.kill(process.pid, signal.SIGKILL)
    process.wait(30)


async def test_a_killed_forwarder_resends_the_same_batch_and_skips_none(
    api: str,
    settings: Settings,
    db: asyncpg.Connection,
    new_customer: NewCustomer,
    receiver_factory: NewReceiver,
) -> None:
    receiver = await receiver_factory(["hang"], then=500)
    customer = await new_customer()
    assert (await configure(api, customer, receiver.url)).status_code == 200
    sn = new_sn()
    await register(api, customer, sn, db)
    b = aligned_past(10)
    await add_points(db, sn, GAS, [(b + 5, 1.0), (b + 65, 2.0), (b + 125, 3.0)])
    await backdate(db, customer, sn, since=b - 3600, cursor=b)

    # 1. Killed while its first attempt waits for an answer: nothing recorded but the batch.
    with forwarder_process(settings) as process:
        await eventually(lambda: len(receiver.requests) == 1, within=60)
        kill_9(process)
    logged = await db.fetchval(
        "SELECT count(*) FROM forwarder.delivery_log WHERE customer_id = $1", customer.id
    )
    assert logged == 0
    # 2. Restarted: the same batch, rebuilt byte for byte, now answered 500 and retried.
    with forwarder_process(settings) as process:
        await eventually(lambda: len(receiver.requests) >= 4, within=60)
        kill_9(process)
    # 3. Restarted again, the endpoint healthy: the same batch, then the next ones in order.
    receiver.then = 200

    async def three_delivered() -> bool:
        count = await db.fetchval(
            "SELECT count(*) FROM forwarder.delivery_log"
            " WHERE customer_id = $1 AND outcome = 'delivered'",
            customer.id,
        )
        return bool(count >= 3)

    with forwarder_process(settings) as process:
        await eventually(lambda: len({r.batch_id for r in receiver.requests}) >= 3, within=60)
        # A batch is answered before its outcome is written; the kill must come after both.
        await eventually(three_delivered, within=60)
    first_id = receiver.requests[0].batch_id
    retried = [r for r in receiver.requests if r.batch_id == first_id]
    assert len(retried) >= 4
    assert {r.body for r in retried} == {receiver.requests[0].body}
    starts = [r.json()["from"] for r in receiver.requests]
    assert starts == sorted(starts)  # never an earlier interval after a later one
    assert sorted(set(starts)) == [b + 60 * n for n in range(len(set(starts)))]  # none skipped
    # Every point stored went out, in the batch that was cut short and resent.
    points = [p["t"] for r in unique_batches(receiver.requests) for p in r.json()["data"]]
    assert points == [b + 5, b + 65, b + 125]
    outcomes = await db.fetch(
        "SELECT batch_id, outcome FROM forwarder.delivery_log WHERE customer_id = $1 ORDER BY id",
        customer.id,
    )
    delivered = [str(o["batch_id"]) for o in outcomes if o["outcome"] == "delivered"]
    assert len(delivered) >= 3
    assert delivered == [r.batch_id for r in unique_batches(receiver.requests)][: len(delivered)]
