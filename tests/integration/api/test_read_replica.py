"""The data API reading from a real PostgreSQL hot standby (``EP_DATABASE_READ_URL``,
docs/scaling.md#a-read-replica): reads are answered there, writes still go to the primary, and
the replica's lag is measured."""

from __future__ import annotations

import time
from collections.abc import Iterator

import asyncpg
import msgspec
import pytest

from energy_platform.api import app as data_app
from energy_platform.core.http.server import HttpService
from energy_platform.core.settings import Settings
from tests.support.admin import run_admin
from tests.support.http import http_client
from tests.support.replica import hot_standby
from tests.support.services import eventually, free_port, running


@pytest.fixture(scope="module")
def replica_url(database_url: str) -> Iterator[str]:
    with hot_standby(database_url) as url:
        yield url


async def replay_lag(primary: asyncpg.Connection, replica: asyncpg.Connection) -> float:
    """Seconds until the replica has replayed what the primary just committed. Reported, never
    asserted: how fast is the benchmark's question (benchmarks/replica_lag.py); the bound only
    ends a replica that never catches up."""
    lsn = await primary.fetchval("SELECT pg_current_wal_lsn()")
    started = time.perf_counter()

    async def replayed() -> bool:
        return bool(await replica.fetchval("SELECT pg_last_wal_replay_lsn() >= $1", lsn))

    # Polled every millisecond: the wait is the figure reported.
    await eventually(replayed, within=120, every=0.001)
    return time.perf_counter() - started


async def pause_replay(replica: asyncpg.Connection) -> None:
    """Pause the replica's replay and wait until it has paused: pg_wal_replay_pause() only asks,
    and a record replayed meanwhile would show what the test says it must not."""
    await replica.execute("SELECT pg_wal_replay_pause()")

    async def paused() -> bool:
        return bool(await replica.fetchval("SELECT pg_get_wal_replay_pause_state() = 'paused'"))

    await eventually(paused, within=120)


async def test_the_api_reads_from_the_replica_and_writes_to_the_primary(
    settings: Settings, database_url: str, replica_url: str, record_property: pytest.RecordProperty
) -> None:
    user = await run_admin(settings, "users", "add", f"replica-{time.time_ns()}")
    s = msgspec.structs.replace(
        settings, database=msgspec.structs.replace(settings.database, read_url=replica_url)
    )
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    primary = await asyncpg.connect(database_url)
    replica = await asyncpg.connect(replica_url)
    try:
        assert await replica.fetchval("SELECT pg_is_in_recovery()")  # a real standby
        record_property("replica_lag_seconds", await replay_lag(primary, replica))
        service = HttpService("api", data_app.create_app(s), "127.0.0.1", port)
        auth = {"Authorization": f"Bearer {user['token']}"}
        async with (
            running(service, ready_urls=(base + "/healthz",)),
            http_client(base_url=base, headers=auth) as http,
        ):
            # Reads are the replica's: a notification made on the primary appears only once it
            # has been replayed there; the API's own reads of it agree with the replica.
            await primary.execute(
                "INSERT INTO cluster.notifications (user_id, rule, subject, title, content)"
                " VALUES ($1, 'power_change', 'replica', 'From the primary', '')",
                int(user["id"]),
            )
            lag = await replay_lag(primary, replica)
            listed = (await http.get(f"/users/{user['id']}/notifications")).json()
            assert [n["title"] for n in listed] == ["From the primary"]

            # A write goes to the primary (a hot standby refuses every write).
            patched = await http.patch(
                f"/users/{user['id']}/notifications/{listed[0]['id']}", json={"read": True}
            )
            assert patched.status_code == 200, patched.text
            assert patched.json()["read"] is True
            assert await primary.fetchval(
                "SELECT read FROM cluster.notifications WHERE id = $1", int(listed[0]["id"])
            )

            # While the replica is paused, the API's reads show what it has, not the primary.
            await pause_replay(replica)
            try:
                await primary.execute(
                    "INSERT INTO cluster.notifications (user_id, rule, subject, title, content)"
                    " VALUES ($1, 'power_change', 'replica-2', 'Not replayed yet', '')",
                    int(user["id"]),
                )
                paused = (await http.get(f"/users/{user['id']}/notification_count")).json()
            finally:
                await replica.execute("SELECT pg_wal_replay_resume()")
            await replay_lag(primary, replica)
            resumed = (await http.get(f"/users/{user['id']}/notification_count")).json()
    finally:
        await primary.close()
        await replica.close()
    record_property("replica_lag_after_insert_seconds", lag)
    print(f"replica replay lag after an insert: {lag * 1000:.1f} ms")
    assert paused["total"] == 1
    assert resumed["total"] == 2


async def test_tokens_are_used_through_the_replica_and_their_last_use_written_to_the_primary(
    settings: Settings, database_url: str, replica_url: str
) -> None:
    user = await run_admin(settings, "users", "add", f"replica-tokens-{time.time_ns()}")
    s = msgspec.structs.replace(
        settings, database=msgspec.structs.replace(settings.database, read_url=replica_url)
    )
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    primary = await asyncpg.connect(database_url)
    replica = await asyncpg.connect(replica_url)
    try:
        service = HttpService("api", data_app.create_app(s), "127.0.0.1", port)
        auth = {"Authorization": f"Bearer {user['token']}"}
        async with (
            running(service, ready_urls=(base + "/healthz",)),
            http_client(base_url=base, headers=auth) as http,
        ):
            # Made on the primary; it authenticates once the replica has replayed it.
            made = {}
            for name in ("wall", "graph"):
                answer = await http.post(
                    f"/users/{user['id']}/tokens", json={"name": name, "scope": "read"}
                )
                assert answer.status_code == 201, answer.text
                made[name] = {"Authorization": f"Bearer {answer.json()['token']}"}
            await replay_lag(primary, replica)
            feeds = await http.get(f"/users/{user['id']}/feeds", headers=made["wall"])
            # The data endpoint's own statement knows the caller (the stream is nobody's: 404).
            data = await http.get("/feeds/1/streams/1/data", headers=made["graph"])

            async def both_used() -> bool:
                return bool(
                    await primary.fetchval(
                        "SELECT count(last_used_at) = 2 FROM cluster.user_tokens"
                        " WHERE user_id = $1 AND name IN ('wall', 'graph')",
                        int(user["id"]),
                    )
                )

            # A hot standby refuses every write: the times can only have come from the primary.
            await eventually(both_used, within=120)
    finally:
        await primary.close()
        await replica.close()
    assert feeds.status_code == 200
    assert data.status_code == 404


async def test_a_revoked_write_token_writes_nothing_while_the_replica_lags(
    settings: Settings, database_url: str, replica_url: str
) -> None:
    user = await run_admin(settings, "users", "add", f"replica-revoked-{time.time_ns()}")
    s = msgspec.structs.replace(
        settings, database=msgspec.structs.replace(settings.database, read_url=replica_url)
    )
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    tokens = f"/users/{user['id']}/tokens"
    primary = await asyncpg.connect(database_url)
    replica = await asyncpg.connect(replica_url)
    try:
        service = HttpService("api", data_app.create_app(s), "127.0.0.1", port)
        owner = {"Authorization": f"Bearer {user['token']}"}
        async with (
            running(service, ready_urls=(base + "/healthz",)),
            http_client(base_url=base, headers=owner) as http,
        ):
            made = await http.post(tokens, json={"name": "script", "scope": "write"})
            assert made.status_code == 201, made.text
            script = {"Authorization": f"Bearer {made.json()['token']}"}
            await replay_lag(primary, replica)  # the replica knows the script's token
            await pause_replay(replica)
            try:
                revoked = await http.delete(f"{tokens}/script")
                # The replica has not seen the revocation: a read with the token still passes.
                read = await http.get(f"/users/{user['id']}/feeds", headers=script)
                # A write looks the token up on the primary, where it is gone.
                write = await http.post(
                    tokens, json={"name": "sneaky", "scope": "write"}, headers=script
                )
            finally:
                await replica.execute("SELECT pg_wal_replay_resume()")
        sneaky = await primary.fetchval(
            "SELECT count(*) FROM cluster.user_tokens WHERE user_id = $1 AND name = 'sneaky'",
            int(user["id"]),
        )
    finally:
        await primary.close()
        await replica.close()
    assert revoked.status_code == 204, revoked.text
    assert read.status_code == 200  # the lag is real: only the primary can have refused
    assert write.status_code == 401, write.text
    assert write.headers["content-type"] == "application/problem+json"
    assert sneaky == 0
