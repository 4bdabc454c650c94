"""Point-in-time restore: how fast pgBackRest brings points back, beside how fast its base
backup writes them, in the same run, on a PostgreSQL cluster of the benchmark's own (the
restore drill's: tests/support/pgcluster.py, timescaledb preloaded, WAL archived; like the
drill it lives on a tmpfs where there is one, with fsync off, so the disk's sync speed is
measured by neither figure).

A full backup of the empty, migrated database; N points COPYed into cluster.raw_points (their
WAL archived as they are written); the time noted; a few points more; a second full backup
(timed: the base backup's write rate, N points / seconds). Then the data directory is removed
and the cluster restored to the noted time (timed until it accepts writes): pgBackRest restores
the first backup, older than the noted time, and PostgreSQL replays the archived WAL of the N
points: restore points/s = N / seconds. The count is checked afterwards.

    python -m benchmarks.restore [--full] [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import time

import asyncpg

from benchmarks.support import figure, phase, report
from energy_platform import seeding
from energy_platform.core.db.migrations import migrate
from energy_platform.core.paths import migrations_dir
from tests.support.pgcluster import DrillCluster

STREAMS = 10
BATCH = 50_000


async def load(url: str, points: int) -> dt.datetime:
    """``points`` raw points over ``STREAMS`` streams; the database's time after they
    committed (the restore target), then a few points more (recovery stops at the first
    commit after the target)."""
    conn = await asyncpg.connect(url)
    try:
        owner = await seeding.add_user(conn, "bench")
        feed = await seeding.add_feed(conn, owner.id, "BE00000000000002")
        streams = await seeding.raw_streams(conn, feed, range(1, STREAMS + 1), 1, device=3)
        start = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
        per_stream = points // STREAMS
        for stream in streams:
            for first in range(0, per_stream, BATCH):
                rows = [
                    (stream, start + dt.timedelta(seconds=5 * i), 230.0 + i % 7)
                    for i in range(first, min(first + BATCH, per_stream))
                ]
                await conn.copy_records_to_table(
                    "raw_points", schema_name="cluster", records=rows,
                    columns=["stream_id", "ts", "value"],
                )  # fmt: skip
        noted: dt.datetime = await conn.fetchval("SELECT clock_timestamp()")
        await asyncio.sleep(0.01)
        # One row straight in after the noted instant, on purpose: the restore to that instant
        # must not have it (the bulk above is COPY for speed, as the restore is what is timed).
        await conn.execute(
            "INSERT INTO cluster.raw_points (stream_id, ts, value) VALUES ($1, $2, 0)",
            streams[0],
            start - dt.timedelta(days=1),
        )
        return noted
    finally:
        await conn.close()


async def count(url: str) -> int:
    conn = await asyncpg.connect(url)
    try:
        return int(await conn.fetchval("SELECT count(*) FROM cluster.raw_points"))
    finally:
        await conn.close()


async def one_run(points: int) -> tuple[float, float]:
    """(restore points/s, base backup points/s) of one cluster."""
    pg = DrillCluster()
    try:
        phase("a cluster of its own, migrated, backed up")
        pg.initdb()
        pg.start()
        url = seeding.with_database(pg.url, "bench")
        conn = await asyncpg.connect(pg.url)
        await conn.execute("CREATE DATABASE bench")
        await conn.close()
        migrate(url, migrations_dir())
        pg.backup("init")
        pg.backup("full")
        phase(f"{points:,} points")
        noted = await load(url, points)
        phase("a full backup of them")
        started = time.perf_counter()
        pg.backup("full")
        backup_rate = points / (time.perf_counter() - started)
        pg.archive_current_wal()
        pg.destroy()
        phase("the cluster destroyed; restoring")
        target = (noted + dt.timedelta(milliseconds=1)).isoformat(sep=" ", timespec="milliseconds")
        started = time.perf_counter()
        # The newest backup before the target: the first one; then the WAL of every point.
        pg.backup("restore", target, "--set=" + first_backup(pg))
        pg.start()
        pg.wait_promoted()
        restore_rate = points / (time.perf_counter() - started)
        restored = await count(url)
        assert restored == points, f"restored {restored} of {points} points"
        return restore_rate, backup_rate
    finally:
        pg.close()


def first_backup(pg: DrillCluster) -> str:
    """The label of the repository's first backup."""
    for line in pg.backup("info").splitlines():
        if "full backup:" in line:
            return line.split(":", 1)[1].strip()
    raise AssertionError("no full backup in the repository")


async def main(full: bool, runs: int) -> None:
    points = 2_000_000 if full else 200_000
    restores, backups = [], []
    for _ in range(runs):
        restore, backup = await one_run(points)
        restores.append(restore)
        backups.append(backup)
    print(
        f"restore: {points:,} raw points restored to a noted time (base backup + WAL replay)"
        f" beside a full backup of them, pgBackRest with lz4, {runs} runs"
    )
    report([figure("restore", "points/s", restores, "base backup points/s", backups)])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--full", action="store_true", help="2,000,000 points, not 200,000")
    parser.add_argument("--runs", type=int, help="default: 1, or 3 with --full")
    args = parser.parse_args()
    asyncio.run(main(args.full, args.runs or (3 if args.full else 1)))
