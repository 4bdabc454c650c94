"""A registered homebase's history imported by the operator goes where its live data goes: to
the forwarder, and in the customer's next deliveries, as late data would."""

from __future__ import annotations

from pathlib import Path

import asyncpg

from energy_platform import seeding
from energy_platform.core.settings import Settings
from tests.support.admin import run_admin
from tests.support.forwarder import (
    NewCustomer,
    NewReceiver,
    aligned_past,
    backdate,
    configure,
    register,
)
from tests.support.provisioning import new_sn
from tests.support.services import eventually


async def test_an_imported_history_of_a_registered_homebase_is_delivered_to_its_customer(
    api: str,
    db: asyncpg.Connection,
    new_customer: NewCustomer,
    receiver_factory: NewReceiver,
    deliveries: None,
    settings: Settings,
    tmp_path: Path,
) -> None:
    receiver = await receiver_factory(then=200)
    customer = await new_customer()
    assert (await configure(api, customer, receiver.url)).status_code == 200
    sn = new_sn()
    owner = await seeding.add_user(db, f"history-{sn}")
    feed = await seeding.add_feed(db, owner.id, sn)
    await register(api, customer, sn, db)
    b = aligned_past(10)
    yesterday = [(b - 86_400 + 60 * k, 100.0 + k) for k in range(5)]
    history = tmp_path / "history.csv"
    history.write_text("".join(f"{t},{v}\n" for t, v in yesterday))
    args = ("import", str(feed), "--channel", "1", "--device", "5", "--medium", "1")

    done = await run_admin(settings, *args, "--file", str(history))
    again = await run_admin(settings, *args, "--file", str(history))
    await backdate(db, customer, sn, since=b - 3600, cursor=b)

    assert (done["forwarded"], done["inserted"], done["unchanged"]) == (True, 5, 0)
    assert (again["inserted"], again["unchanged"], again["stream"]) == (0, 5, done["stream"])

    def delivered() -> list[tuple[int, float]]:
        return [(p["t"], p["v"]) for r in receiver.requests for p in r.json()["data"]]

    # At least once: a delivery retried after a slow answer may carry a point twice.
    await eventually(lambda: len(set(delivered())) >= 5)
    assert set(delivered()) == set(yesterday)
    # Nothing of it went to the feed the homebase's owner cannot see meanwhile.
    assert await db.fetchval("SELECT count(*) FROM cluster.streams WHERE feed_id = $1", feed) == 0
