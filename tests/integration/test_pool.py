"""The services' pool lends its connections in the order they were asked for (db/pool.py)."""

from __future__ import annotations

import asyncio

import pytest

from energy_platform.core.db.pool import create_pool
from energy_platform.core.settings import DatabaseSettings


async def test_a_caller_arriving_as_a_connection_comes_back_queues_behind_the_waiting_one(
    database_url: str,
) -> None:
    # asyncpg's own queue let a caller that asked while a connection was being given back take
    # it ahead of the caller already waiting, which then queued again at the end: under load a
    # few requests waited many turns (the data API's p99 was nine times its p50).
    pool = await create_pool(DatabaseSettings(url=database_url, pool_max=1), stateless_queries=True)
    order: list[str] = []

    async def take(name: str) -> None:
        async with pool.acquire():
            order.append(name)

    try:
        held = await pool.acquire()
        waiting = asyncio.create_task(take("waiting"))
        await asyncio.sleep(0.05)  # it waits for the one connection
        giving_back = asyncio.create_task(pool.release(held))
        await asyncio.sleep(0)  # the connection is on its way back
        late = asyncio.create_task(take("late"))
        await asyncio.wait_for(asyncio.gather(giving_back, waiting, late), 5)
    finally:
        await pool.close()
    assert order == ["waiting", "late"]


async def test_a_caller_waits_for_a_connection_no_longer_than_asked(database_url: str) -> None:
    pool = await create_pool(DatabaseSettings(url=database_url, pool_max=1))
    try:
        async with pool.acquire():
            with pytest.raises(TimeoutError):
                await pool.acquire(timeout=0.2)
        # The turn of the caller that gave up is not lost: the pool lends its one connection.
        assert await asyncio.wait_for(pool.fetchval("SELECT 1"), 5) == 1
        conn = await pool.acquire()
        await pool.release(conn)
        await pool.release(conn)  # a second release gives nothing back twice
        async with pool.acquire():
            with pytest.raises(TimeoutError):
                await pool.acquire(timeout=0.2)
    finally:
        await pool.close()
