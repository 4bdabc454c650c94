"""A token's last use is written at most once a minute per process, apart from the request, and
a failed write fails nothing (users/usage.py)."""

from __future__ import annotations

from typing import Any, cast

import asyncpg

from energy_platform.users import usage
from energy_platform.users.usage import TokenUses


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Primary:
    """Stands in for the primary's pool: records each write, or fails it."""

    def __init__(self, error: Exception | None = None) -> None:
        self.writes: list[tuple[Any, ...]] = []
        self.error = error

    async def execute(self, *args: Any) -> str:
        self.writes.append(args)
        if self.error:
            raise self.error
        return "UPDATE 1"


async def settled(uses: TokenUses) -> None:
    """The writes in flight done (what the app's shutdown waits for)."""
    await uses.close()


async def test_a_token_used_many_times_a_minute_is_written_once() -> None:
    clock, primary = Clock(), Primary()
    uses = TokenUses(clock=clock)
    pool = cast(asyncpg.Pool, primary)
    for _ in range(50):
        uses.note(pool, b"a")
        clock.now += 1  # 50 uses over 50 s
    uses.note(pool, b"b")  # another token is its own
    await settled(uses)
    assert [w[1] for w in primary.writes] == [b"a", b"b"]
    clock.now += 10  # 60 s after the first use of a
    uses.note(pool, b"a")
    await settled(uses)
    assert [w[1] for w in primary.writes] == [b"a", b"b", b"a"]
    # The database's own bound is a little under the process's minute (clock skew).
    assert primary.writes[0][0] == usage.TOUCH
    assert primary.writes[0][2] == usage.EVERY - usage.SLACK


async def test_a_failed_write_is_logged_and_waits_for_the_next_minute() -> None:
    clock, primary = Clock(), Primary(OSError("connection refused"))
    uses = TokenUses(clock=clock)
    pool = cast(asyncpg.Pool, primary)
    uses.note(pool, b"a")
    await settled(uses)
    uses.note(pool, b"a")  # not retried at once: a primary that is down is not hammered
    await settled(uses)
    assert len(primary.writes) == 1
    clock.now += 60
    uses.note(pool, b"a")
    await settled(uses)
    assert len(primary.writes) == 2


async def test_a_process_remembers_a_bounded_number_of_tokens(monkeypatch: Any) -> None:
    monkeypatch.setattr(usage, "REMEMBERED", 3)
    clock, primary = Clock(), Primary()
    uses = TokenUses(clock=clock)
    pool = cast(asyncpg.Pool, primary)
    for digest in (b"a", b"b", b"c"):
        uses.note(pool, digest)
    clock.now += 1
    # A fourth token within the minute: all three are fresh, so all are forgotten; the price is
    # a write that the database's own bound turns into nothing.
    uses.note(pool, b"d")
    uses.note(pool, b"a")
    uses.note(pool, b"d")
    await settled(uses)
    assert [w[1] for w in primary.writes] == [b"a", b"b", b"c", b"d", b"a"]
