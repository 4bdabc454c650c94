"""Compaction: old stream-days move into the compact tier losslessly, every reader gets the same
points from it, a write into a compacted day lands in exactly one tier, and a compaction killed
halfway loses and duplicates nothing. Each test runs on a database of its own: a round compacts
every stream of the database and drops emptied chunks."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from energy_platform import seeding
from energy_platform.core.settings import (
    CompactionSettings,
    DatabaseSettings,
    RetentionSettings,
    Settings,
)
from energy_platform.engine.compaction import compact
from energy_platform.engine.retention import enforce
from energy_platform.engine.watch import engine_queues
from tests.support.admin import CLI, run_admin

SETTINGS = CompactionSettings(after_days=7)

# Every point of every stream, bit for bit: times in microseconds, values as their 8 bytes.
ALL_POINTS = """
SELECT s.id, extract(epoch FROM p.ts) * 1000000 AS us, float8send(p.value) AS bits
  FROM cluster.streams s
 CROSS JOIN LATERAL cluster.stream_points(s.id, '-infinity', 'infinity') p
 ORDER BY 1, 2"""
ROW_TIER = """
SELECT (SELECT count(*) FROM cluster.raw_points) + (SELECT count(*) FROM cluster.processed_points)
     + (SELECT count(*) FROM cluster.system_points)"""
# Stream-days with points in both tiers: must never exist.
IN_BOTH = """
SELECT count(*) FROM cluster.point_days d
 WHERE EXISTS (SELECT FROM cluster.raw_points p
                WHERE p.stream_id = d.stream_id
                  AND p.ts >= d.day::timestamp AT TIME ZONE 'UTC'
                  AND p.ts < (d.day + 1)::timestamp AT TIME ZONE 'UTC')"""


def midnight(days_ago: int) -> datetime:
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return today - timedelta(days=days_ago)


SN = "A0000000000000C1"


async def new_streams(pool: asyncpg.Pool, *types: str) -> list[int]:
    """A stream of each of ``types`` (raw, processed, system) on channels 1, 2, ... of the feed
    of ``SN``."""
    async with pool.acquire() as conn:
        owner = await seeding.add_user(conn, "compaction")
        feed = await seeding.add_feed(conn, owner.id, SN)
        made = {
            "raw": lambda n: seeding.raw_stream(conn, feed, n, 1),
            "processed": lambda n: seeding.processed_stream(conn, feed, n, title=f"Power {n}"),
            "system": lambda n: seeding.system_stream(conn, feed, n, "medium:40"),
        }
        return [await made[kind](n) for n, kind in enumerate(types, start=1)]


async def test_old_days_move_losslessly_and_every_reader_gets_the_same_points(
    pool: asyncpg.Pool,
) -> None:
    raw, processed, system = await new_streams(pool, "raw", "processed", "system")
    old, older = midnight(10), midnight(11)
    # Awkward values and times: -0.0, a subnormal, 0.1 (inexact), huge ones; a regular 5 s grid
    # with a gap and a point off the grid by microseconds.
    odd = [-0.0, 5e-324, 0.1, 123456.789, -5e300, 1.0 / 3.0]
    raw_points = [(older + timedelta(seconds=5 * i), odd[i % len(odd)] + i) for i in range(2000)]
    raw_points += [(old + timedelta(seconds=5 * i), odd[i % len(odd)]) for i in range(1000)]
    raw_points += [(old + timedelta(hours=5, seconds=5 * i), float(i)) for i in range(500)]
    raw_points.append((old + timedelta(hours=9, microseconds=123457), 42.5))
    recent = datetime.now(UTC) - timedelta(hours=1)
    raw_points.append((recent, 7.0))
    # Straight into the row tier, bypassing ingest's store: it takes whole seconds, and this
    # test needs a time off the grid by microseconds.
    await pool.executemany(
        "INSERT INTO cluster.raw_points VALUES ($1, $2, $3)", [(raw, t, v) for t, v in raw_points]
    )
    # The processed and system tiers beside them, as exact values of the test's own: the
    # compaction round is under test, not the engine nor an entry.
    await pool.executemany(
        "INSERT INTO cluster.processed_points VALUES ($1, $2, $3)",
        [(processed, old + timedelta(seconds=90 * i), i / 7) for i in range(960)],
    )
    await pool.execute("INSERT INTO cluster.system_points VALUES ($1, $2, -71)", system, old)
    before = await pool.fetch(ALL_POINTS)
    views_before = await pool.fetch(
        "SELECT stream_id, ts, float8send(value) AS bits FROM cluster.readings ORDER BY 1, 2"
    )

    result = await compact(pool, SETTINGS)

    # Four stream-days (raw on two days, processed and system on one) went; the recent point
    # stayed a row; the emptied chunks were dropped.
    assert (result.days, result.points) == (4, len(raw_points) - 1 + 960 + 1)
    assert result.chunks >= 2
    assert await pool.fetchval(ROW_TIER) == 1
    days = await pool.fetch(
        "SELECT stream_id, day, points, pg_column_compression(vals) AS method"
        " FROM cluster.point_days ORDER BY stream_id, day"
    )
    assert [(r["stream_id"], r["day"], r["points"]) for r in days] == [
        (raw, older.date(), 2000),
        (raw, old.date(), 1501),
        (processed, old.date(), 960),
        (system, old.date(), 1),
    ]
    assert days[0]["method"] == "lz4"  # large arrays are compressed with lz4
    # Every point comes back with its time to the microsecond and its value bit for bit, from
    # the readers' function and from the analysts' views.
    assert await pool.fetch(ALL_POINTS) == before
    assert (
        await pool.fetch(
            "SELECT stream_id, ts, float8send(value) AS bits FROM cluster.readings ORDER BY 1, 2"
        )
        == views_before
    )
    # Edges and neighbours are found in the compact tier too.
    edges = await pool.fetchrow(
        "SELECT cluster.stream_point_edge($1, false) AS first,"
        " cluster.point_before($1, $2) AS before, cluster.point_from($1, $2) AS after",
        raw,
        old + timedelta(hours=9),
    )
    assert edges["first"] == older
    assert edges["before"] == old + timedelta(hours=5, seconds=5 * 499)
    assert edges["after"] == old + timedelta(hours=9, microseconds=123457)
    # A second round finds nothing more to do.
    assert (await compact(pool, SETTINGS)).days == 0


async def test_a_write_into_a_compacted_day_moves_it_back_and_compaction_takes_it_again(
    pool: asyncpg.Pool,
) -> None:
    (raw,) = await new_streams(pool, "raw")
    old = midnight(9)
    times = [int((old + timedelta(seconds=60 * i)).timestamp()) for i in range(100)]
    await seeding.write_points(pool, raw, [(t, 1) for t in times])
    await compact(pool, SETTINGS)
    assert await pool.fetchval(ROW_TIER) == 0

    # Ingest writes a late point and a resent one into the compacted day.
    late = times[0] + 30
    await seeding.write_points(pool, raw, [(late, 2.0), (times[5], 2.0)])
    # The day is in the row tier only, with the late point once and the resent one unchanged.
    assert await pool.fetchval("SELECT count(*) FROM cluster.point_days") == 0
    assert await pool.fetchval(ROW_TIER) == 101
    assert await pool.fetchval(
        "SELECT value FROM cluster.raw_points WHERE ts = to_timestamp($1)", times[5]
    ) == pytest.approx(1.0)

    assert (await compact(pool, SETTINGS)).points == 101
    assert await pool.fetchval(ROW_TIER) == 0
    # A write into a recent day takes no lock and moves nothing.
    assert (
        await pool.fetchval(
            "SELECT cluster.thaw_days($1::bigint[], $2::date[])",
            [raw],
            [datetime.now(UTC).date()],
        )
        == 0
    )


async def test_retention_removes_compacted_days_older_than_the_age_only(pool: asyncpg.Pool) -> None:
    raw, processed = await new_streams(pool, "raw", "processed")
    for stream, table in ((raw, "raw_points"), (processed, "processed_points")):
        for days_ago in (40, 20, 9):
            # Straight into the row tiers, on purpose: retention is under test, not an entry.
            await pool.execute(
                f"INSERT INTO cluster.{table} VALUES ($1, $2, 1)",  # noqa: S608 - fixed names
                stream,
                midnight(days_ago) + timedelta(hours=1),
            )
    await compact(pool, SETTINGS)

    removed = await enforce(pool, RetentionSettings(raw_days=15))

    left = await pool.fetch("SELECT stream_id, day FROM cluster.point_days ORDER BY 1, 2")
    assert [(r["stream_id"], r["day"]) for r in left] == [
        (raw, midnight(9).date()),
        (processed, midnight(40).date()),
        (processed, midnight(20).date()),
        (processed, midnight(9).date()),
    ]
    assert removed["raw_compact_days"] == 2


async def test_compaction_killed_halfway_loses_and_duplicates_nothing(
    pool: asyncpg.Pool, own_database: str
) -> None:
    streams = await new_streams(pool, *["raw"] * 40)
    start = midnight(12)
    # 40 streams x 3 days of a point every 30 s: 120 stream-days, 345,600 points.
    first = int(start.timestamp())
    for stream in streams:
        points = [(first + 30 * i, i % 97 * 1.5) for i in range(3 * 2880)]
        await seeding.write_points(pool, stream, points)
    before = await pool.fetch(ALL_POINTS)
    env = {**os.environ, "EP_DATABASE_URL": own_database}
    script = (
        "import asyncio\n"
        "from energy_platform.core.db.pool import create_pool\n"
        "from energy_platform.engine.compaction import compact\n"
        "from energy_platform.core.settings import CompactionSettings, DatabaseSettings\n"
        "async def main():\n"
        f"    pool = await create_pool(DatabaseSettings(url={own_database!r}))\n"
        "    await compact(pool, CompactionSettings(after_days=7))\n"
        "asyncio.run(main())\n"
    )
    worker = await asyncio.create_subprocess_exec(sys.executable, "-c", script, env=env)
    try:
        # Killed once 20 of the 120 days are compacted, however long its start (imports, a
        # pool) takes on a loaded machine: a count of polls (600 of 20 ms) could run out first.
        deadline = time.monotonic() + 120
        while worker.returncode is None and time.monotonic() < deadline:
            if await pool.fetchval("SELECT count(*) FROM cluster.point_days") >= 20:
                break
            await asyncio.sleep(0.02)
        if worker.returncode is None:  # else it finished: the assertion below says so
            worker.send_signal(signal.SIGKILL)
    finally:
        await worker.wait()
    # (Its last statement may still commit: the server finishes it without its client.)
    halfway = await pool.fetchval("SELECT count(*) FROM cluster.point_days")
    assert 20 <= halfway < 100, "the kill came too late to test anything"

    # Every point once, in one tier: nothing lost, nothing twice.
    assert await pool.fetchval(IN_BOTH) == 0
    assert await pool.fetch(ALL_POINTS) == before
    # The next round finishes the job.
    await compact(pool, SETTINGS)
    assert await pool.fetchval("SELECT count(*) FROM cluster.point_days") == 120
    assert await pool.fetchval(ROW_TIER) == 0
    assert await pool.fetch(ALL_POINTS) == before


async def test_days_compacted_before_the_decimal_codec_are_encoded_again_by_a_round(
    pool: asyncpg.Pool,
) -> None:
    (raw,) = await new_streams(pool, "raw")
    old = midnight(30)
    # Two days as the compact tier held them before the codec (the float8 array, codec 1): one
    # of tenths of a watt, one of thirds.
    for day, values in ((old, [230.1, 230.2, 229.9]), (old + timedelta(days=1), [1 / 3, 2 / 3])):
        await pool.execute(
            "INSERT INTO cluster.point_days (stream_id, day, first_ts, last_ts, points, step_us,"
            " offsets_us, vals, codec) VALUES ($1, $2::timestamptz::date, $2,"
            " $2 + (cardinality($3::float8[]) - 1) * interval '5 s', cardinality($3::float8[]),"
            " 5000000, array_fill(0::bigint, ARRAY[cardinality($3::float8[])]), $3, 1)",
            raw,
            day,
            values,
        )
    before = await pool.fetch(ALL_POINTS)

    result = await compact(pool, SETTINGS)

    assert result.recoded == 2
    days = await pool.fetch("SELECT codec, scale FROM cluster.point_days ORDER BY day")
    assert [tuple(r) for r in days] == [(2, 1), (2, None)]  # tenths; thirds stay floats
    assert await pool.fetch(ALL_POINTS) == before
    assert (await compact(pool, SETTINGS)).recoded == 0


CHUNKS = """
SELECT format('%I.%I', chunk_schema, chunk_name) AS chunk FROM timescaledb_information.chunks
 WHERE hypertable_schema = 'cluster' AND hypertable_name = 'raw_points' ORDER BY range_start"""


async def test_a_busy_emptied_chunk_waits_for_a_later_round_without_failing_one(
    pool: asyncpg.Pool, own_database: str
) -> None:
    (raw,) = await new_streams(pool, "raw")
    # Three old days, a chunk each (raw points: a chunk a day), 1,000 points each.
    for days_ago in (12, 11, 10):
        first = int(midnight(days_ago).timestamp())
        await seeding.write_points(pool, raw, [(first + 60 * i, i) for i in range(1000)])
    before = await pool.fetch(ALL_POINTS)
    chunks = [r["chunk"] for r in await pool.fetch(CHUNKS)]
    assert len(chunks) == 3
    # An analyst's long read holds the first chunk, VACUUM's lock the second, and a real VACUUM
    # of every chunk runs over and over while the round drops them.
    reader = await asyncpg.connect(own_database)
    vacuum_lock = await asyncpg.connect(own_database)
    vacuumer = await asyncpg.connect(own_database)
    vacuuming = True

    async def vacuum_again_and_again() -> int:
        rounds = 0
        while vacuuming:
            try:  # VACUUM takes no parameters; the name comes from the catalog above.
                await vacuumer.execute(f"VACUUM {chunks[2]}")
            except asyncpg.UndefinedTableError:
                break  # dropped under it
            rounds += 1
        return rounds

    try:
        await reader.execute("BEGIN")
        await reader.fetchval(f"SELECT count(*) FROM {chunks[0]}")  # noqa: S608 - catalog name
        await vacuum_lock.execute("BEGIN")
        await vacuum_lock.execute(f"LOCK TABLE {chunks[1]} IN SHARE UPDATE EXCLUSIVE MODE")
        vacuum = asyncio.create_task(vacuum_again_and_again())
        try:
            result = await compact(pool, SETTINGS)
        finally:
            vacuuming = False
            assert await vacuum > 0
        # The round went through: every day compacted, the free chunk dropped, two left.
        assert (result.days, result.points, result.chunks, result.busy) == (3, 3000, 1, 2)
        assert await pool.fetch(ALL_POINTS) == before
    finally:
        await reader.close()
        await vacuum_lock.close()
        await vacuumer.close()

    # Once they are free, the next round drops them; nothing was lost on the way.
    result = await compact(pool, SETTINGS)
    assert (result.days, result.chunks, result.busy) == (0, 2, 0)
    assert await pool.fetch(CHUNKS) == []
    assert await pool.fetch(ALL_POINTS) == before


async def test_admin_compact_runs_a_round_now_and_refuses_an_age_the_settings_refuse(
    pool: asyncpg.Pool, own_database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (raw,) = await new_streams(pool, "raw")
    first = int(midnight(4).timestamp())
    await seeding.write_points(pool, raw, [(first + 60 * i, 1) for i in range(100)])
    settings = Settings(
        database=DatabaseSettings(url=own_database), compaction=CompactionSettings(after_days=7)
    )
    # The settings' age (7 days) leaves a day 4 days old alone.
    assert await run_admin(settings, "compact") == {
        "older_than_days": 7,
        "days": 0,
        "points": 0,
        "chunks": 0,
        "busy": 0,
        "recoded": 0,
    }
    # --older-than 3 takes it, from the command line as an operator runs it.
    done = await asyncio.create_subprocess_exec(
        CLI,
        *("admin", "compact", "--older-than", "3"),
        env={**os.environ, "EP_DATABASE_URL": own_database},
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await done.communicate()
    assert done.returncode == 0
    assert json.loads(out) == {
        "older_than_days": 3,
        "days": 1,
        "points": 100,
        "chunks": 1,
        "busy": 0,
        "recoded": 0,
    }
    assert await pool.fetchval(ROW_TIER) == 0
    for bad in ("1", "0", "-3"):
        with pytest.raises(SystemExit):  # exit status 1, the reason on stderr
            await run_admin(settings, "compact", "--older-than", bad)
        assert "--older-than must be at least 2" in capsys.readouterr().err
    off = Settings(database=settings.database, compaction=CompactionSettings(after_days=0))
    with pytest.raises(SystemExit):
        await run_admin(off, "compact")
    assert "compaction is off" in capsys.readouterr().err


def test_a_compaction_age_under_two_days_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        CompactionSettings(after_days=1)
    assert CompactionSettings(after_days=0).after_days == 0  # never
    for bad in ({"after_days": -1}, {"interval": 0}, {"page": 0}):
        with pytest.raises(ValueError, match="EP_COMPACTION_"):
            CompactionSettings(**bad)  # type: ignore[arg-type]


# A trigger of the test's own: compact rows of stream {stream} fail with SQLSTATE 54001 (the
# work's own error, whatever moves or removes them), every other stream's pass.
REFUSE_COMPACT_ROWS = """
CREATE FUNCTION cluster.test_refuse_days() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF coalesce(NEW.stream_id, OLD.stream_id) = {stream} THEN
        RAISE EXCEPTION 'statement too complex' USING ERRCODE = '54001';
    END IF;
    RETURN coalesce(NEW, OLD);
END $$;
CREATE TRIGGER refuse_days BEFORE INSERT OR DELETE ON cluster.point_days
   FOR EACH ROW EXECUTE FUNCTION cluster.test_refuse_days();
"""
PARKED = """
SELECT stage, stream_id, sqlstate FROM cluster.parked_work WHERE retried_at IS NULL
 ORDER BY stage, stream_id"""


async def test_a_stream_that_fails_to_compact_or_to_expire_is_skipped_and_parked_alone(
    pool: asyncpg.Pool,
) -> None:
    bad, good = await new_streams(pool, "raw", "raw")
    for stream in (bad, good):
        for days_ago in (40, 9):
            # Straight into the row tier, as above: compaction and expiry are under test.
            await pool.execute(
                "INSERT INTO cluster.raw_points VALUES ($1, $2, 1)",
                stream,
                midnight(days_ago) + timedelta(hours=1),
            )
    # Format of an integer id, not of input.
    await pool.execute(REFUSE_COMPACT_ROWS.format(stream=bad))

    # The round goes on past the bad stream: the good one's two days move, the bad one's stay
    # rows, and the bad stream is parked for compaction, which the parked gauge counts.
    result = await compact(pool, SETTINGS)
    assert result.days == 2
    compacted = "SELECT stream_id, count(*) FROM cluster.point_days GROUP BY 1 ORDER BY 1"
    assert [tuple(r) for r in await pool.fetch(compacted)] == [(good, 2)]
    assert [tuple(r) for r in await pool.fetch(PARKED)] == [("compaction", bad, "54001")]
    async with pool.acquire() as conn:
        gauges = {f.name: f.samples[0].value for f in await engine_queues(conn)}
    assert gauges["ep_engine_parked_feeds"] == 1
    # A later round skips it without failing.
    assert (await compact(pool, SETTINGS)).days == 0

    # Retention narrows a failing run down to the stream in the same way (the bad stream's
    # compacted day, made before the trigger, fails to go; the good one's 40-day-old day goes).
    await pool.execute("DROP TRIGGER refuse_days ON cluster.point_days")
    assert (await compact(pool, SETTINGS)).days == 0  # still parked, until the retry
    await pool.execute(
        "SELECT cluster.engine_retry(feed_id) FROM cluster.streams WHERE id = $1", bad
    )
    assert (await compact(pool, SETTINGS)).days == 2
    await pool.execute(
        "CREATE TRIGGER refuse_days BEFORE INSERT OR DELETE ON cluster.point_days"
        " FOR EACH ROW EXECUTE FUNCTION cluster.test_refuse_days()"
    )
    removed = await enforce(pool, RetentionSettings(raw_days=15))
    assert removed["raw_compact_days"] == 1
    left = "SELECT stream_id, day FROM cluster.point_days ORDER BY 1, 2"
    assert [tuple(r) for r in await pool.fetch(left)] == [
        (bad, midnight(40).date()),
        (bad, midnight(9).date()),
        (good, midnight(9).date()),
    ]
    assert [tuple(r) for r in await pool.fetch(PARKED)] == [("retention", bad, "54001")]
    # Skipped by the next round, which goes on.
    assert (await enforce(pool, RetentionSettings(raw_days=15)))["raw_compact_days"] == 0
