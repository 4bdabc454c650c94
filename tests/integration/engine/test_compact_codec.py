"""The compact tier's codec: every float8 comes back to the bit (NaN payloads, -0.0, infinities,
subnormals included), a day of exact decimals is stored as scaled integers, and any other day
keeps the float path. Each example runs in a transaction that is rolled back."""

from __future__ import annotations

import struct
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta

import asyncpg
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from energy_platform import seeding

DAY = date(2026, 9, 1)  # long past any compaction age
START = datetime(2026, 9, 1, tzinfo=UTC)
# A day as the compact tier held it before the decimal codec (codec 1: the float8 array).
OLD_DAY = """
INSERT INTO cluster.point_days (stream_id, day, first_ts, last_ts, points, step_us, offsets_us,
                                vals, codec)
VALUES (%(stream)s, %(day)s, %(start)s, %(start)s + (%(points)s - 1) * interval '5 s',
        %(points)s, 5000000, array_fill(0::bigint, ARRAY[%(points)s]), %(vals)b, 1)"""
# The codec's tests write the row tier directly, in a psycopg transaction each rolls back:
# what they test is compact_day on exact values and times (one off the grid by microseconds,
# which ingest's whole seconds cannot carry), not an entry.
ROWS = """
INSERT INTO cluster.raw_points (stream_id, ts, value)
SELECT %(stream)s, %(start)s + (n - 1) * interval '5 s', v
  FROM unnest(%(vals)b::float8[]) WITH ORDINALITY AS u (v, n)"""
STORED = """
SELECT codec, scale, vals IS NULL AS no_floats, coalesce(cardinality(wide), 0) AS wide
  FROM cluster.point_days WHERE stream_id = %s"""
DECODED = """
SELECT float8send(x.value)
  FROM cluster.point_days d
 CROSS JOIN LATERAL cluster.unpack(d.first_ts, d.step_us, d.offsets_us, d.vals, d.scale, d.base,
                                   d.deltas, d.wide_at, d.wide) x
 WHERE d.stream_id = %s ORDER BY x.n"""

# Any 64 bits as a float8: NaNs with any payload and sign, infinities, -0.0, subnormals.
any_float8 = st.integers(min_value=0, max_value=2**64 - 1).map(
    lambda bits: struct.unpack(">d", bits.to_bytes(8, "big"))[0]
)
awkward = st.sampled_from(
    [-0.0, 0.0, 5e-324, -5e-324, 2.2250738585072014e-308, float("inf"), float("-inf"),
     float("nan"), 1.7976931348623157e308, 0.1, 1 / 3, 2.0**53, -(2.0**52) + 0.5]
)  # fmt: skip


def bits(values: list[float]) -> list[bytes]:
    return [struct.pack(">d", v) for v in values]


def decimal_day(draw: st.DrawFn) -> tuple[list[float], int]:
    """A meter-like day: integers (a walk with small steps and rare jumps) over 10^digits."""
    digits = draw(st.integers(min_value=0, max_value=6))
    start = draw(st.integers(min_value=-(10**9), max_value=10**9))
    steps = draw(
        st.lists(
            st.integers(min_value=-130, max_value=130)
            | st.integers(min_value=-(10**9), max_value=10**9),
            min_size=0,
            max_size=300,
        )
    )
    scaled = [start]
    for step in steps:
        scaled.append(scaled[-1] + step)
    return [i / 10**digits for i in scaled], digits


decimal_days = st.composite(decimal_day)()


def fewest_digits(value: float) -> int:
    """The decimal digits the codec needs for one value (the test's own arithmetic)."""
    return next(k for k in range(7) if round(value * 10**k) / 10**k == value)


@pytest.fixture(scope="module")
async def stream(database_url: str) -> AsyncIterator[int]:
    """The raw stream every example writes its day into, in a transaction rolled back after it,
    so that each example starts from an empty day."""
    conn = await asyncpg.connect(database_url)
    try:
        owner = await seeding.add_user(conn, "codec")
        feed = await seeding.add_feed(conn, owner.id, "C0DEC00000000000")
        yield await seeding.raw_stream(conn, feed, 1, 1, device=3)
    finally:
        await conn.close()


def round_trip(
    conn: psycopg.Connection, stream: int, values: list[float], *, old: bool
) -> tuple[object, ...]:
    """Store the values as a day of ``stream`` (an old compact row re-encoded, or rows
    compacted), read them back; rolled back afterwards."""
    with conn.transaction(force_rollback=True):
        args = {"stream": stream, "day": DAY, "start": START, "points": len(values), "vals": values}
        conn.execute(OLD_DAY if old else ROWS, args)
        conn.execute("SELECT cluster.compact_day(%s::bigint, %s::date)", (stream, DAY))
        stored = conn.execute(STORED, (stream,)).fetchone()
        decoded = [r[0] for r in conn.execute(DECODED, (stream,))]
    return stored or (), decoded


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(values=st.lists(any_float8 | awkward, min_size=1, max_size=200))
def test_any_float8_comes_back_to_the_bit(
    sync_db: psycopg.Connection, stream: int, values: list[float]
) -> None:
    stored, decoded = round_trip(sync_db, stream, values, old=True)
    assert decoded == bits(values)
    assert stored[0] == 2  # re-encoded with the current codec


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(day=decimal_days)
def test_a_day_of_exact_decimals_is_stored_as_scaled_integers(
    sync_db: psycopg.Connection, stream: int, day: tuple[list[float], int]
) -> None:
    values, _ = day
    stored, decoded = round_trip(sync_db, stream, values, old=False)
    assert decoded == bits(values)
    codec, scale, no_floats, _ = stored
    # The fewest digits that hold every value.
    assert (codec, scale, no_floats) == (2, max(fewest_digits(v) for v in values), True)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(day=decimal_days, odd=awkward | any_float8, at=st.integers(min_value=0))
def test_a_mixed_day_falls_back_to_the_float_path(
    sync_db: psycopg.Connection, stream: int, day: tuple[list[float], int], odd: float, at: int
) -> None:
    values, _ = day
    values.insert(at % (len(values) + 1), odd)
    stored, decoded = round_trip(sync_db, stream, values, old=True)
    assert decoded == bits(values)
    if odd != odd or odd in (float("inf"), float("-inf")) or bits([odd]) == bits([-0.0]):
        assert stored[1] is None  # no decimal has these


def test_a_meter_day_at_a_tenth_of_a_watt_takes_a_byte_a_point(
    sync_db: psycopg.Connection, stream: int
) -> None:
    # 17,280 points of 5 s: 230.0 W with steps of -0.5 to +0.5 W and a 2,000 W kettle for an
    # hour: two differences (on and off) do not fit a byte.
    values = [
        round(230 + (i * 7919 % 11 - 5) / 10 + (2000 if 1000 <= i < 1720 else 0), 1)
        for i in range(17_280)
    ]
    with sync_db.transaction(force_rollback=True):
        args = {"stream": stream, "start": START, "vals": values}
        sync_db.execute(ROWS, args)
        sync_db.execute("SELECT cluster.compact_day(%s::bigint, %s::date)", (stream, DAY))
        stored = sync_db.execute(STORED, (stream,)).fetchone()
        size = sync_db.execute(
            "SELECT pg_column_size(deltas) FROM cluster.point_days WHERE stream_id = %s",
            (stream,),
        ).fetchone()
        decoded = [r[0] for r in sync_db.execute(DECODED, (stream,))]
    assert decoded == bits(values)
    assert stored is not None
    assert stored[1:] == (1, True, 2)  # a tenth: scale 1, no float array, two wide differences
    assert size is not None
    assert size[0] <= 17_280 + 64  # a byte a point at most (lz4 may make it less)


def test_the_first_point_s_time_and_the_grid_survive_too(
    sync_db: psycopg.Connection, stream: int
) -> None:
    # Times are untouched by the codec: a day with a gap and a point off the grid.
    times = [START + timedelta(seconds=5 * i) for i in range(100)]
    times += [START + timedelta(hours=3, microseconds=7)]
    with sync_db.transaction(force_rollback=True):
        with sync_db.cursor() as cur:
            cur.executemany(
                "INSERT INTO cluster.raw_points VALUES (%s, %s, %s)",
                [(stream, t, n / 10) for n, t in enumerate(times)],
            )
        sync_db.execute("SELECT cluster.compact_day(%s::bigint, %s::date)", (stream, DAY))
        back = sync_db.execute(
            "SELECT ts, value FROM cluster.stream_points(%s, '-infinity', 'infinity') ORDER BY ts",
            (stream,),
        ).fetchall()
    assert back == [(t, n / 10) for n, t in enumerate(times)]
