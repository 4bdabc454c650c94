"""For any readings of a register with glitches inserted, in any order of arrival, the engine's
total is the true rise (issue 48, docs/engine.md#registers-wh): a glitch (a reading below the
one before it, undone by the one after it) never counts, and the line between true readings
does, to the last Wh. Each example writes a channel of its own on one feed and runs the
engine's own statements (intake, compute) after each batch."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator

import asyncpg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from energy_platform import seeding
from tests.support.data import T0
from tests.support.engine import Feed, process

IMPORT_REGISTER, METER = 22, 7
STEP = 20  # seconds between true readings; a glitch comes 10 s after one
_channels = itertools.count(1)


@pytest.fixture(scope="module")
async def feed(database_url: str) -> AsyncIterator[tuple[str, int]]:
    """One feed for every example (each writes a channel of its own)."""
    conn = await asyncpg.connect(database_url)
    try:
        owner = await seeding.add_user(conn, "meter-properties")
        feed_id = await seeding.add_feed(conn, owner.id, "F48F48F48F480000", timezone="UTC")
        yield database_url, feed_id
    finally:
        await conn.execute("DELETE FROM cluster.feeds WHERE id = $1", feed_id)
        await conn.close()


@st.composite
def readings_with_glitches(draw: st.DrawFn) -> tuple[list[tuple[int, float]], float, list[int]]:
    """True readings 20 s apart rising by 0 to 30 Wh (up to 5.4 kW), a glitch (any value below
    the true reading before it) after some of them, and the batch each reading arrives in.
    Returns the readings, the true rise and the batches."""
    start = draw(st.floats(min_value=1.0, max_value=1e9, allow_nan=False))
    rises = draw(st.lists(st.floats(min_value=0.0, max_value=30.0), min_size=2, max_size=40))
    true = [start]
    for rise in rises:
        true.append(true[-1] + rise)
    readings = [(T0 + STEP * i, v) for i, v in enumerate(true)]
    after = draw(st.sets(st.integers(min_value=0, max_value=len(true) - 1), max_size=8))
    for i in sorted(after):
        low = draw(st.floats(min_value=0.0, max_value=1.0, exclude_max=True))
        readings.append((T0 + STEP * i + STEP // 2, true[i] * low))
    batches = draw(st.lists(st.integers(0, 2), min_size=len(readings), max_size=len(readings)))
    return readings, true[-1] - true[0], batches


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=readings_with_glitches())
def test_a_registers_total_is_its_true_rise_whatever_glitches_and_order(
    feed: tuple[str, int], case: tuple[list[tuple[int, float]], float, list[int]]
) -> None:
    url, feed_id = feed
    readings, rise, batches = case

    async def example() -> float:
        conn = await asyncpg.connect(url)
        try:
            channel = next(_channels)
            meter = await seeding.raw_stream(conn, feed_id, channel, IMPORT_REGISTER, device=METER)
            for batch in range(3):
                sent = [r for r, b in zip(readings, batches, strict=True) if b == batch]
                await seeding.write_points(conn, meter, sent)
                await process(conn)
            points = await Feed(conn, feed_id, "", "").points(f"Electricity, channel {channel}")
            return sum(points.values())
        finally:
            await conn.close()

    assert asyncio.run(example()) == pytest.approx(rise, rel=1e-9, abs=1e-5)
