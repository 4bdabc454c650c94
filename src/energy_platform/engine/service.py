"""The engine service: processes ingest's work the moment it is committed, and at each bucket end.

Workers wake on a notification from ingest's transaction (engine/wakeup.py), 0.2 s after every
bucket end, and at least every poll interval. Rollups run in a loop of their own, so that a
rollup batch never holds a closed bucket back (docs/engine.md#freshness).

Several engine processes may run against one database: intake takes disjoint dirty ranges
(SKIP LOCKED) and processing takes whole feeds under advisory locks, so no bucket is computed
by two workers at once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import asyncpg
import msgspec
import structlog
from prometheus_client import Counter

from energy_platform.core.background import sleep_unless_stopped
from energy_platform.core.db.pool import Connection, create_pool
from energy_platform.core.faults import world_faults_logged
from energy_platform.core.settings import BillingSettings, DatabaseSettings, EngineSettings
from energy_platform.engine.processing import BUCKET, MeterLimits, intake, process_batch
from energy_platform.engine.rollups import rollup_batch
from energy_platform.engine.wakeup import Wakeups

log = structlog.get_logger()
POINTS_WRITTEN = Counter("ep_engine_points_written", "Processed points inserted or changed")
POINTS_DELETED = Counter("ep_engine_points_deleted", "Processed points that no longer qualified")
STREAMS_CREATED = Counter("ep_engine_streams_created", "Processed streams created by the engine")
ROLLUPS_WRITTEN = Counter(
    "ep_engine_rollups_written", "Rollup periods (hours and days) inserted or changed"
)
# Counted idle or not: a stalled worker shows as a flat line, and a test waits for rounds
# instead of guessing how many a sleep holds.
ROUNDS = Counter("ep_engine_rounds", "Processing rounds completed by the engine's workers")
# Each told its owner once (rule meter_fault); many at once point at a reader or a meter model.
METER_FAULTS = Counter(
    "ep_engine_meter_faults",
    "Meter counter faults found: glitches skipped, resets and replacements counted as 0",
    ["kind"],
)
# Wake a little after a bucket closes, so that its end is behind the database's clock too.
BOUNDARY_MARGIN = 0.2

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    return datetime.now(UTC)


class EngineService:
    name = "engine"

    def __init__(
        self,
        settings: DatabaseSettings,
        engine: EngineSettings | None = None,
        *,
        currency: str = BillingSettings().currency,
        clock: Clock = system_clock,
    ) -> None:
        self._settings = settings
        self._engine = engine or EngineSettings()
        self._currency = currency
        self._clock = clock

    async def run(self, stop: asyncio.Event) -> None:
        pool = await create_pool(self._settings)
        wakeups = Wakeups()
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(wakeups.listen(self._settings, stop), name="engine-wakeup")
                for n in range(self._engine.workers):
                    group.create_task(
                        self._work(pool, stop, wakeups.subscribe()), name=f"engine-worker-{n}"
                    )
                group.create_task(self._roll_up(pool, stop), name="engine-rollups")
        finally:
            await pool.close()

    async def _work(self, pool: asyncpg.Pool, stop: asyncio.Event, wake: asyncio.Event) -> None:
        while not stop.is_set():
            # Cleared before the round: work committed while it runs starts the next one at once.
            wake.clear()
            # A failed transaction leaves the queues as they were: the next round retries a
            # fault of the world; a data error in one feed's work is parked inside its batch
            # (engine/parking.py); any other error fails the engine (core/faults.py).
            with world_faults_logged("processing failed; retrying"):
                async with pool.acquire() as conn:
                    # One intake batch a round, and at most round_s of recomputing: with a
                    # backlog of ranges, the closed buckets of those taken in are published
                    # before the next batch is taken; with one homebase's year of work, the
                    # other feeds' new readings are taken in every round_s all the same.
                    done = await drain(
                        conn,
                        self._engine,
                        self._clock,
                        stop,
                        currency=self._currency,
                        rollup_batches=0,
                        intake_batches=1,
                        round_s=self._engine.round_s,
                    )
                ROUNDS.inc()
                if done.intake_left or done.work_left:
                    wake.set()
                if done.periods:
                    # Where a round's seconds go (benchmarks/engine_freshness.py reads these).
                    log.debug(
                        "engine round",
                        started=done.started,
                        periods=done.periods,
                        written=done.written,
                        intake_s=round(done.intake_s, 4),
                        claim_s=round(done.claim_s, 4),
                        compute_s=round(done.compute_s, 4),
                        commit_s=round(done.commit_s, 4),
                        rollups_s=round(done.rollups_s, 4),
                    )
            await sleep_unless_stopped(stop, self._next_wake(), wake)

    async def _roll_up(self, pool: asyncpg.Pool, stop: asyncio.Event) -> None:
        """Rollup batches on a connection of their own, beside the processing rounds: a full
        batch takes the next at once, else the loop waits a poll interval."""
        while not stop.is_set():
            full = False
            with world_faults_logged("rollups failed; retrying"):
                async with pool.acquire() as conn:
                    rolled = await rollup_batch(
                        conn,
                        batch=self._engine.rollup_batch,
                        delay=self._engine.rollup_delay,
                        timeout_ms=self._engine.timeout_ms(),
                        park_after=self._engine.park_after,
                    )
                ROLLUPS_WRITTEN.inc(rolled.written)
                full = rolled.streams == self._engine.rollup_batch
            if not full:
                await sleep_unless_stopped(stop, self._engine.poll_interval)

    def _next_wake(self) -> float:
        seconds = self._clock().timestamp()
        to_boundary = BUCKET.total_seconds() - seconds % BUCKET.total_seconds()
        return min(self._engine.poll_interval, to_boundary + BOUNDARY_MARGIN)


class Drained(msgspec.Struct, frozen=True):
    written: int
    """Processed points written."""
    rollups_left: bool
    """The last rollup batch was full: more queued periods may be due."""
    intake_left: bool = False
    """The last intake batch was full: more dirty ranges may wait."""
    work_left: bool = False
    """The round's time (``round_s``) ran out with closed work still queued."""
    periods: int = 0
    """Channel periods recomputed."""
    started: float = 0.0
    """Unix time the round started."""
    intake_s: float = 0.0
    """Seconds taking ingest's ranges in."""
    claim_s: float = 0.0
    """Seconds claiming closed work."""
    compute_s: float = 0.0
    """Seconds recomputing it."""
    commit_s: float = 0.0
    """Seconds committing it."""
    rollups_s: float = 0.0
    """Seconds of rollup batches (none in the service's rounds: its rollups run beside them)."""


async def drain(
    conn: Connection,
    settings: EngineSettings,
    clock: Clock = system_clock,
    stop: asyncio.Event | None = None,
    *,
    currency: str = BillingSettings().currency,
    rollup_batches: int | None = None,
    intake_batches: int | None = None,
    round_s: float | None = None,
) -> Drained:
    """Take up to ``intake_batches`` batches (default: all) of dirty ranges in, process closed
    work until none is left (or, with ``round_s``, until that many seconds have passed), then
    up to ``rollup_batches`` batches (default: all) of the rollups that waited long enough. New
    cost and credit streams are in ``currency`` (billing's)."""
    started = time.time()
    intake_s = 0.0
    limits = MeterLimits.of(settings)
    batches, intake_left = 0, False
    while not (stop and stop.is_set()) and (intake_batches is None or batches < intake_batches):
        began = time.perf_counter()
        taken = await intake(
            conn,
            batch=settings.intake_batch,
            currency=currency,
            work_mem=settings.work_mem,
            limits=limits,
        )
        intake_s += time.perf_counter() - began
        STREAMS_CREATED.inc(taken.created)
        batches += 1
        intake_left = taken.claimed == settings.intake_batch
        if not intake_left:
            break
    written = periods = 0
    claim_s = compute_s = commit_s = 0.0
    work_left = False
    processing = time.perf_counter()
    while not (stop and stop.is_set()):
        if round_s is not None and periods and time.perf_counter() - processing >= round_s:
            # A batch at least, then the rest waits for the next round, after its intake.
            work_left = True
            break
        result = await process_batch(
            conn,
            now=clock(),
            feeds=settings.batch_feeds,
            max_span=timedelta(seconds=settings.max_span),
            work_mem=settings.work_mem,
            limits=limits,
            timeout_ms=settings.timeout_ms(),
            park_after=settings.park_after,
        )
        claim_s += result.claim_s
        if not result.periods and not result.parked:
            break
        # Counted, not logged: a line per batch would drown the log of a busy engine.
        POINTS_WRITTEN.inc(result.written)
        POINTS_DELETED.inc(result.deleted)
        for kind, found in result.faults.items():
            METER_FAULTS.labels(kind).inc(found)
        written += result.written
        periods += result.periods
        compute_s += result.compute_s
        commit_s += result.commit_s
    batches, full = 0, False
    began = time.perf_counter()
    while not (stop and stop.is_set()) and (rollup_batches is None or batches < rollup_batches):
        rolled = await rollup_batch(
            conn,
            batch=settings.rollup_batch,
            delay=settings.rollup_delay,
            timeout_ms=settings.timeout_ms(),
            park_after=settings.park_after,
        )
        ROLLUPS_WRITTEN.inc(rolled.written)
        batches += 1
        full = rolled.streams == settings.rollup_batch
        if not full:
            break
    return Drained(
        written,
        full,
        intake_left=intake_left,
        work_left=work_left,
        periods=periods,
        started=started,
        intake_s=intake_s,
        claim_s=claim_s,
        compute_s=compute_s,
        commit_s=commit_s,
        rollups_s=time.perf_counter() - began,
    )
