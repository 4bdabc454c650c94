"""From a homebase publishing over MQTT, through ingest and the forwarder, to a real HTTP
receiver on loopback: every point stored is delivered, late and days-old ones included, and an
aggregated interval that receives late points is sent again with the new value."""

from __future__ import annotations

import time

import asyncpg

from energy_platform.core.codec.format_v4 import HomebaseRecord
from energy_platform.devices.simulator.homebase import SimulatedHomebase
from tests.support.forwarder import (
    Customer,
    NewCustomer,
    NewReceiver,
    aligned_past,
    configure,
    register,
    rewind,
)
from tests.support.platform import Platform, paired_homebase, publish_as
from tests.support.services import eventually

GAS_DEVICE, GAS_CHANNEL, GAS_UNIQ = 5, 2, 0x1A02


def gas(t: int, value: float) -> HomebaseRecord:
    return HomebaseRecord(f=4, t=t, d=GAS_DEVICE, ch=GAS_CHANNEL, uniq=GAS_UNIQ, s={"7": value})


async def stored(db: asyncpg.Connection, sn: str, count: int) -> None:
    """Wait until ingest stored ``count`` points of ``sn`` for the forwarder."""

    async def done() -> bool:
        n = await db.fetchval(
            "SELECT count(*) FROM forwarder.points p JOIN forwarder.streams s"
            " ON s.id = p.stream_id WHERE s.homebase_sn = $1",
            sn,
        )
        return bool(n >= count)

    await eventually(done, 60)


async def behind(db: asyncpg.Connection, customer: Customer, minutes: int) -> int:
    """Put the customer's interval cursor ``minutes`` back, as if the forwarder had been
    behind: the intervals since then are due at once (1-minute intervals are the shortest)."""
    b = aligned_past(minutes)
    await rewind(db, customer, b)
    return b


async def registered_homebase(
    platform: Platform, api: str, db: asyncpg.Connection, customer: Customer
) -> SimulatedHomebase:
    sn, secret, _ = await paired_homebase(platform, feed=False)
    # Registered before it sends anything: ingest has no route of it cached yet, so its first
    # message goes to the forwarder.
    await register(api, customer, sn, db)
    return SimulatedHomebase(sn, secret, seed=1)


async def test_all_mode_delivers_fresh_ten_minute_three_hour_and_ten_day_old_points(
    platform: Platform,
    api: str,
    db: asyncpg.Connection,
    new_customer: NewCustomer,
    receiver_factory: NewReceiver,
    deliveries: None,
) -> None:
    receiver = await receiver_factory()
    customer = await new_customer()
    assert (await configure(api, customer, receiver.url, "all")).status_code == 200
    homebase = await registered_homebase(platform, api, db, customer)
    now = int(time.time())
    # The first is ten days old: in the cluster its day would be compacted by now; forwarder
    # points have one tier (docs/forwarder.md), and it is delivered like the others.
    times = [now - 10 * 86400, now - 3 * 3600, now - 3 * 3600 + 5, now - 600, now - 20, now - 11]
    # As a homebase back from an outage sends them: oldest first, in two messages.
    await publish_as(
        platform,
        homebase.sn,
        homebase.secret,
        homebase.encrypt([gas(t, 100 + n) for n, t in enumerate(times[:4])]),
    )
    await publish_as(
        platform,
        homebase.sn,
        homebase.secret,
        homebase.encrypt([gas(t, 104 + n) for n, t in enumerate(times[4:])]),
    )
    await stored(db, homebase.sn, len(times))
    await behind(db, customer, 2)

    def sent() -> list[tuple[int, float]]:
        return [(p["t"], p["v"]) for r in receiver.requests for p in r.json()["data"]]

    await eventually(lambda: len(sent()) >= len(times), within=60)
    assert sent() == [(t, 100.0 + n) for n, t in enumerate(times)]  # each once, as stored
    first = next(r.json() for r in receiver.requests if r.json()["data"])
    assert {p["gateway"] for p in first["data"]} == {homebase.sn}
    assert {(p["channel"], p["device"], p["medium"]) for p in first["data"]} == {
        (GAS_CHANNEL, GAS_DEVICE, 7)
    }


async def test_aggregated_interval_is_sent_again_with_late_points(
    platform: Platform,
    api: str,
    db: asyncpg.Connection,
    new_customer: NewCustomer,
    receiver_factory: NewReceiver,
    deliveries: None,
) -> None:
    receiver = await receiver_factory()
    customer = await new_customer()
    assert (await configure(api, customer, receiver.url, "aggregated")).status_code == 200
    homebase = await registered_homebase(platform, api, db, customer)
    b = aligned_past(4)
    await publish_as(platform, homebase.sn, homebase.secret, homebase.encrypt([gas(b + 10, 500.0)]))
    await stored(db, homebase.sn, 1)
    await behind(db, customer, 4)

    def gas_sent() -> list[tuple[int, float]]:
        return [
            (p["t"], p["v"])
            for r in receiver.requests
            for p in r.json()["data"]
            if p["medium"] == 7 and p["method"] == "LAST"
        ]

    await eventually(lambda: gas_sent() == [(b + 60, 500.0)], within=60)
    # A point for the same interval arrives late (the homebase was offline): the interval is
    # sent again, recomputed: LAST is now the later reading.
    await publish_as(platform, homebase.sn, homebase.secret, homebase.encrypt([gas(b + 50, 500.5)]))
    await stored(db, homebase.sn, 2)
    await behind(db, customer, 2)
    await eventually(lambda: len(gas_sent()) >= 2, within=60)
    assert gas_sent() == [(b + 60, 500.0), (b + 60, 500.5)]
    again = next(r.json() for r in reversed(receiver.requests) if r.json()["data"])
    assert again["from"] > b  # sent in a later delivery
