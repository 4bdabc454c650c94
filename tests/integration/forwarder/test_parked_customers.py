"""One customer's data never stops the others' deliveries: a customer whose batch fails on data
is parked (its cursor where it was) while the others get theirs, and after a repair and
``admin customers retry`` it gets every interval it was owed
(docs/forwarder.md#parked-customers)."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from energy_platform.core.settings import Settings
from tests.support.admin import run_admin
from tests.support.forwarder import (
    MINUTE,
    NewCustomer,
    NewReceiver,
    Stream,
    aligned_past,
    at,
    seeded_customer,
)
from tests.support.scrape import scrape, value
from tests.support.services import eventually

POWER: Stream = (1, 7, 12, None, "1-0:1.7.0")


async def parked(settings: Settings, customer_id: int) -> list[dict[str, Any]]:
    listed = await run_admin(settings, "customers", "parked")
    return [c for c in listed if c["id"] == str(customer_id)]


def intervals_from(requests: list[dict[str, Any]]) -> list[int]:
    return sorted({r["from"] for r in requests})


async def test_a_customer_whose_points_overflow_is_parked_and_the_others_are_delivered(
    api: str,
    db: asyncpg.Connection,
    settings: Settings,
    new_customer: NewCustomer,
    receiver_factory: NewReceiver,
    deliveries: None,
) -> None:
    b = aligned_past(3)
    healthy_receiver, poisoned_receiver = await receiver_factory(), await receiver_factory()
    # 1e308 W held for 30 s: the INTEGRAL's trapezoid (2 x 1e308) overflows float8 (22003).
    poisoned, sn = await seeded_customer(
        api, db, new_customer, poisoned_receiver, {POWER: [(b + 10, 1e308), (b + 40, 1e308)]}, b
    )
    await seeded_customer(
        api, db, new_customer, healthy_receiver, {POWER: [(b + 10, 1000.0), (b + 40, 1000.0)]}, b
    )

    # The healthy customer gets each of the three intervals since b, one after another, while the
    # poisoned one is parked by the first claim that builds its batch.
    def healthy_caught_up() -> bool:
        sent = intervals_from([r.json() for r in healthy_receiver.requests])
        return sent[:3] == [b + n * MINUTE for n in range(3)]

    async def is_parked() -> bool:
        return bool(
            await db.fetchval(
                "SELECT count(*) FROM forwarder.parked_deliveries WHERE customer_id = $1",
                poisoned.id,
            )
        )

    await eventually(is_parked)
    await eventually(healthy_caught_up)
    [listed] = await parked(settings, poisoned.id)
    assert listed["sqlstate"] == "22003"
    assert listed["delivered_to"] == at(b).isoformat()  # its cursor stays: nothing is lost
    assert poisoned_receiver.requests == []
    gauge = value(await scrape(api), "ep_forwarder_customers_parked")
    assert gauge is not None
    assert gauge >= 1

    # Repaired by the operator, then retried: every interval since b arrives, the first with the
    # repaired point. 1000 W from b+10 to b+40, held to b+60: 50 s x 1000 W = 50,000 Ws.
    await db.execute(
        "UPDATE forwarder.points SET value = 1000.0 WHERE value = 1e308"
        " AND stream_id IN (SELECT id FROM forwarder.streams WHERE homebase_sn = $1)",
        sn,
    )
    await run_admin(settings, "customers", "retry", str(poisoned.id))

    def poisoned_caught_up() -> bool:
        sent = intervals_from([r.json() for r in poisoned_receiver.requests])
        return sent[:3] == [b + n * MINUTE for n in range(3)]

    await eventually(poisoned_caught_up)
    first = next(r.json() for r in poisoned_receiver.requests if r.json()["from"] == b)
    [point] = first["data"]
    assert (point["t"], point["medium"], point["method"]) == (b + MINUTE, 22, "INTEGRAL")
    assert point["v"] == pytest.approx(50_000 / 3600)
    assert await parked(settings, poisoned.id) == []


async def test_a_customer_deleted_while_its_batch_is_out_stops_no_one(
    api: str,
    db: asyncpg.Connection,
    new_customer: NewCustomer,
    receiver_factory: NewReceiver,
    deliveries: None,
) -> None:
    """Both receivers hold their first request until it times out; meanwhile one customer is
    deleted, so recording its outcome fails the log's foreign key (23503). The other
    customer's retry and the intervals after it are delivered all the same."""
    b = aligned_past(5)
    kept_receiver = await receiver_factory(["hang"])
    gone_receiver = await receiver_factory(then="hang")
    gone, _ = await seeded_customer(
        api, db, new_customer, gone_receiver, {POWER: [(b + 10, 1000.0)]}, b
    )
    await seeded_customer(api, db, new_customer, kept_receiver, {POWER: [(b + 10, 1000.0)]}, b)
    await eventually(lambda: bool(gone_receiver.requests) and bool(kept_receiver.requests))
    await db.execute("DELETE FROM forwarder.customers WHERE id = $1", gone.id)

    def kept_caught_up() -> bool:
        sent = intervals_from([r.json() for r in kept_receiver.requests])
        return sent[:5] == [b + n * MINUTE for n in range(5)]

    await eventually(kept_caught_up)
    # The first batch went out again after its timeout, under the same id.
    first = [r.batch_id for r in kept_receiver.requests if r.json()["from"] == b]
    assert len(first) >= 2
    assert len(set(first)) == 1
