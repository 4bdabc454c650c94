"""The forwarder's /metrics says, per customer, how many points wait for delivery and how long
the oldest has waited; once they are delivered the customer is no longer listed."""

from __future__ import annotations

import asyncpg

from energy_platform.core.settings import Settings
from energy_platform.forwarder.delivery import DeliveryService
from tests.support.forwarder import (
    FAST,
    NewCustomer,
    NewReceiver,
    add_points,
    aligned_past,
    backdate,
    configure,
    register,
)
from tests.support.provisioning import new_sn
from tests.support.scrape import promtool_problems, scrape, value
from tests.support.services import eventually, running

GAS = (1, 5, 7, None, None)


async def test_undelivered_points_and_their_age_per_customer(
    api: str, db: asyncpg.Connection, new_customer: NewCustomer, receiver_factory: NewReceiver,
    settings: Settings,
) -> None:  # fmt: skip
    receiver = await receiver_factory(then=200)
    customer = await new_customer()
    assert (await configure(api, customer, receiver.url)).status_code == 200
    name = await db.fetchval("SELECT name FROM forwarder.customers WHERE id = $1", customer.id)
    sn = new_sn()
    await register(api, customer, sn, db)
    b = aligned_past(30)
    await add_points(db, sn, GAS, [(b + 5, 1.0), (b + 65, 2.0), (b + 125, 3.0)])
    # Stored 20 minutes ago while registered, and never delivered since.
    await db.execute(
        "UPDATE forwarder.points p SET received_at = now() - interval '20 minutes'"
        "  FROM forwarder.streams s WHERE s.id = p.stream_id AND s.homebase_sn = $1",
        sn,
    )
    await backdate(db, customer, sn, since=b - 3600, cursor=b)

    samples = await scrape(api)
    assert await promtool_problems(api) == ""  # with the per-customer families in it
    assert value(samples, "ep_forwarder_undelivered_points", customer=name) == 3
    age = value(samples, "ep_forwarder_undelivered_oldest_age_seconds", customer=name)
    assert age is not None
    assert 1200 <= age < 1300
    assert value(samples, "ep_forwarder_delivery_interval_seconds", customer=name) == 60
    behind = value(samples, "ep_forwarder_customers_behind")
    assert behind is not None
    assert behind >= 1

    async with running(DeliveryService(settings.database, FAST)):

        async def delivered() -> bool:
            points = value(await scrape(api), "ep_forwarder_undelivered_points", customer=name)
            return points is None

        await eventually(delivered)
    assert receiver.requests
