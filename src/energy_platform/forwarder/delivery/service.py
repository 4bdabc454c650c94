"""The delivery loop: every customer's batches, one interval at a time, at least once.

Three parts share one event loop:
- the scheduler claims due customers (``claim_size`` per statement, skipping those in flight):
  for a customer whose next interval has ended (plus ``settle_seconds``) it makes the batch
  with one query for all of them, and persists each batch's id, interval and snapshot before
  the first attempt (an interval with nothing to send is a batch too, with no points); a
  customer whose pending batch is due for a retry gets that batch back;
- one task per claimed batch posts it (a semaphore bounds the requests in flight, each has its
  own timeout), so a slow or dead endpoint only ever holds up its own customer;
- the recorder writes outcomes in batches: each attempt's log row and the cursor it moves (or
  the retry it schedules) in one transaction. Only then is the customer claimable again, so a
  customer's batches go out strictly in order.

One customer's data never stops the others' deliveries (docs/forwarder.md#parked-customers): a
data error (core/faults.py) while its batch is made or its outcome recorded is narrowed down to
the customers it arises from, by halving; those are parked (``forwarder.parked_deliveries``,
their cursors where they were) until ``admin customers retry``, and the rest go out.

Run one delivery process per database: two would each deliver every batch.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime

import asyncpg
import msgspec
import structlog
from prometheus_client import Counter, Histogram

from energy_platform.core.background import sleep_unless_stopped
from energy_platform.core.db.pool import Connection, create_pool
from energy_platform.core.faults import blames_the_data, is_outside_fault, world_faults_logged
from energy_platform.core.settings import DatabaseSettings, ForwarderSettings
from energy_platform.forwarder.delivery import queries
from energy_platform.forwarder.delivery.batches import Batch, DeliveryBody, Mode, encode
from energy_platform.forwarder.delivery.webhook import BadResponse, basic_auth, post
from energy_platform.forwarder.destinations import RefusedDestination

log = structlog.get_logger()
ATTEMPTS = Counter("ep_forwarder_attempts", "Delivery attempts by outcome", ["outcome"])
LAG = Histogram(
    "ep_forwarder_delivery_lag_seconds",
    "Seconds from an interval's end to its successful delivery",
    buckets=(0.5, 1, 2, 5, 10, 30, 60, 300, 3600),
)
RECORD_BATCH = 500


class Outcome(msgspec.Struct, frozen=True):
    kind: str
    """delivered (2xx), dropped (4xx) or retry (anything else)."""
    status: int | None
    error: str | None
    started: datetime
    seconds: float


def classify(status: int) -> str:
    """The spec's status table: 2xx success, 4xx permanent, 1xx/3xx/5xx temporary."""
    if 200 <= status < 300:
        return "delivered"
    if 400 <= status < 500:
        return "dropped"
    return "retry"


class DeliveryService:
    name = "deliveries"

    def __init__(
        self,
        database: DatabaseSettings,
        settings: ForwarderSettings,
    ) -> None:
        self._database = database
        self._settings = settings
        self._allowed = settings.networks()
        self._in_flight: set[int] = set()
        self._outcomes: asyncio.Queue[tuple[Batch, Outcome]] = asyncio.Queue()
        self._wake = asyncio.Event()

    async def run(self, stop: asyncio.Event) -> None:
        s = self._settings
        pool = await create_pool(self._database)
        slots = asyncio.Semaphore(s.max_concurrent)
        attempts: set[asyncio.Task[None]] = set()
        try:
            # One group: a claimer or the recorder that fails (core/faults.py: anything but a
            # fault of the world) fails the service instead of dying unnoticed.
            async with asyncio.TaskGroup() as group:
                recorder = group.create_task(self._recorder(pool), name="deliveries-recorder")
                claimers = [
                    group.create_task(
                        self._claimer(pool, slots, attempts, stop), name=f"claimer-{n}"
                    )
                    for n in range(max(1, s.claim_workers))
                ]
                await stop.wait()
                for task in (*claimers, recorder):
                    task.cancel()
        finally:
            # Batches cut short are persisted and go out again after a restart.
            for task in attempts:
                task.cancel()
            await asyncio.gather(*attempts, return_exceptions=True)
            await pool.close()

    async def _claimer(
        self,
        pool: asyncpg.Pool,
        slots: asyncio.Semaphore,
        attempts: set[asyncio.Task[None]],
        stop: asyncio.Event,
    ) -> None:
        s = self._settings
        while not stop.is_set():
            batches: list[Batch] = []
            with world_faults_logged("cannot claim due deliveries"):
                batches = await self._claim(pool)
            for batch in batches:
                task = asyncio.create_task(self._deliver(slots, batch))
                attempts.add(task)
                task.add_done_callback(attempts.discard)
            if len(batches) >= s.claim_size:
                continue  # more may be due right now
            await sleep_unless_stopped(
                stop, min(s.poll_interval, _until_next_end(s.settle_seconds)), wake=self._wake
            )
            self._wake.clear()

    async def _claim(self, pool: asyncpg.Pool) -> list[Batch]:
        """Batches to attempt now: due retries, and new batches for ended intervals."""
        s = self._settings
        claimed: set[int] = set()
        try:
            async with pool.acquire() as conn, conn.transaction():
                await conn.execute(queries.CUSTOM_PLANS)
                await conn.execute(queries.NO_JIT)
                found = await conn.fetch(queries.CLAIM, s.settle_seconds, s.claim_size)
                # A lease that ran out while the outcome waits to be recorded: still ours.
                rows = [r for r in found if r["customer_id"] not in self._in_flight]
                claimed = {r["customer_id"] for r in rows}
                # In flight from now on: the other claimers pass these customers over.
                self._in_flight.update(claimed)
                batches = await self._batches(conn, rows)
        except BaseException:
            self._in_flight.difference_update(claimed)
            raise
        # A customer parked meanwhile has no batch, and is no longer in flight.
        self._in_flight.difference_update(claimed - {b.customer_id for b in batches})
        return batches

    async def _batches(self, conn: Connection, rows: Sequence[asyncpg.Record]) -> list[Batch]:
        """The claimed customers' batches, persisted (new ones) and leased (all); a customer
        whose points fail on data is parked instead, and gets none."""
        lease = 2 * self._settings.delivery_timeout
        out: list[Batch] = []
        failed: dict[int, asyncpg.PostgresError] = {}
        fresh = [r for r in rows if r["batch_id"] is None]
        pending = [r["customer_id"] for r in rows if r["batch_id"] is not None]
        if pending:
            await conn.execute(queries.LEASE, pending, lease)
        for row in rows:
            if row["batch_id"] is not None:
                batch = await self._pending(conn, row, failed)
                if batch is not None:
                    out.append(batch)
        started: list[tuple[int, uuid.UUID, datetime, str, str]] = []
        for mode in ("all", "aggregated"):
            group = [r for r in fresh if r["mode"] == mode]
            if not group:
                continue
            points, errors = await _rows_isolated(conn, mode, [_window(r) for r in group])
            failed.update(errors)
            for row in group:
                if row["customer_id"] in errors:
                    continue  # its cursor stays: the same interval is made again after a retry
                customer, start, end = row["customer_id"], row["delivered_to"], row["next_end"]
                batch_id = uuid.uuid4()
                # An interval with nothing to send still yields a delivery: "data": [].
                body, count = encode(batch_id, start, end, mode, points.get(customer, []))
                started.append((customer, batch_id, end, mode, row["upto"]))
                out.append(_batch(row, batch_id, start, end, body, count, 1, False))
        if started:
            await conn.execute(queries.START_BATCHES, *_columns(started, 5), lease)
        if failed:
            await _park(conn, failed)
        return out

    async def _pending(
        self, conn: Connection, row: asyncpg.Record, failed: dict[int, asyncpg.PostgresError]
    ) -> Batch | None:
        batch_id: uuid.UUID = row["batch_id"]
        start, end = row["batch_from"], row["batch_to"]
        stored: bytes | None = row["batch_body"]
        if stored is not None:
            points = len(msgspec.json.decode(stored, type=DeliveryBody).data)
            body = stored
        else:
            # Cut short before its outcome was recorded: rebuilt from the same points.
            mode: Mode = row["batch_mode"]
            window = (
                row["customer_id"],
                start,
                end,
                row["interval_minutes"] * 60,
                row["seen"],
                row["batch_seen"],
            )
            found, errors = await _rows_isolated(conn, mode, [window])
            if errors:
                failed.update(errors)
                return None  # the batch stays pending, to be made again after a retry
            body, points = encode(batch_id, start, end, mode, found.get(row["customer_id"], []))
        attempt = row["attempts"] + 1
        return _batch(row, batch_id, start, end, body, points, attempt, stored is not None)

    async def _deliver(self, slots: asyncio.Semaphore, batch: Batch) -> None:
        async with slots:
            outcome = await self._attempt(batch)
        await self._outcomes.put((batch, outcome))

    async def _attempt(self, batch: Batch) -> Outcome:
        headers = {"Content-Type": "application/json", "Idempotency-Key": str(batch.id)}
        # Credentials from the URL go as HTTP Basic; the URL itself has none.
        if batch.username is not None:
            headers["Authorization"] = basic_auth(batch.username, batch.password)
        started = datetime.now().astimezone()
        clock = time.monotonic()
        status: int | None = None
        error: str | None = None
        try:
            async with asyncio.timeout(self._settings.delivery_timeout):
                status = await post(batch.url, batch.body, headers, self._allowed)
            kind = classify(status)
        except TimeoutError:
            kind, error = "retry", "timeout"
        except RefusedDestination:
            kind, error = "retry", "refused_destination"
        except BadResponse:
            kind, error = "retry", "bad_response"
        except (OSError, ValueError) as e:
            # The kind of error only: messages may quote the address.
            kind, error = "retry", type(e).__name__
        return Outcome(kind, status, error, started, time.monotonic() - clock)

    async def _recorder(self, pool: asyncpg.Pool) -> None:
        while True:
            done = [await self._outcomes.get()]
            while not self._outcomes.empty() and len(done) < RECORD_BATCH:
                done.append(self._outcomes.get_nowait())
            while True:
                try:
                    await self._record_isolated(pool, done)
                    break
                except Exception as e:
                    if not is_outside_fault(e):
                        raise
                    # Unrecorded outcomes keep their customers in flight until written.
                    log.warning("cannot record delivery outcomes", error=type(e).__name__)
                    await asyncio.sleep(1.0)
            for batch, _ in done:
                self._in_flight.discard(batch.customer_id)
            self._wake.set()

    async def _record_isolated(
        self, pool: asyncpg.Pool, done: Sequence[tuple[Batch, Outcome]]
    ) -> None:
        """:meth:`_record`; on a data error, halves recorded apart down to the one outcome it
        arises from (a customer deleted while its batch was out fails the log's foreign key),
        whose customer is parked with its batch still pending: sent again after a retry. A
        fault of the world between halves has the recorder write them all again: a second log
        row, and a retry's attempt counted twice, at worst."""
        try:
            await self._record(pool, done)
        except asyncpg.PostgresError as e:
            if not blames_the_data(e):
                raise
            if len(done) == 1:
                async with pool.acquire() as conn:
                    await _park(conn, {done[0][0].customer_id: e})
                return
        else:
            return
        half = len(done) // 2
        await self._record_isolated(pool, done[:half])
        await self._record_isolated(pool, done[half:])

    async def _record(self, pool: asyncpg.Pool, done: Sequence[tuple[Batch, Outcome]]) -> None:
        """Log the attempts and move the cursors (or schedule the retries) in one transaction."""
        base = self._settings.backoff_base
        finished = [(b.customer_id, b.id) for b, o in done if o.kind != "retry"]
        retries = [
            (
                b.customer_id,
                b.id,
                None if b.stored else b.body,
                min(base * 2 ** (b.attempt - 1), float(b.interval_seconds)),
            )
            for b, o in done
            if o.kind == "retry"
        ]
        logged = [
            (
                b.customer_id,
                b.id,
                b.start,
                b.end,
                b.attempt,
                o.kind,
                o.status,
                o.error,
                b.points,
                o.started,
                o.seconds * 1000,
            )
            for b, o in done
        ]
        async with pool.acquire() as conn, conn.transaction():
            await conn.execute(queries.RELAXED_COMMIT)
            await conn.execute(queries.LOG_ATTEMPTS, *_columns(logged, 11))
            if finished:
                await conn.execute(queries.FINISH_BATCHES, *_columns(finished, 2))
            if retries:
                await conn.execute(queries.RETRY_BATCHES, *_columns(retries, 4))
        now = time.time()
        for b, o in done:
            ATTEMPTS.labels(o.kind).inc()
            fields = {
                "customer": b.customer_id,
                "batch": str(b.id),
                "attempt": b.attempt,
                "status": o.status,
                "points": b.points,
            }
            if o.kind == "delivered":
                LAG.observe(max(0.0, now - b.end.timestamp()))
                log.debug("batch delivered", **fields)
            elif o.kind == "dropped":
                log.warning("batch dropped by the customer (4xx)", **fields)
            else:
                log.info("batch will be retried", error=o.error, **fields)


def _until_next_end(settle: float) -> float:
    """Seconds until the next moment a new interval can be due: every interval ends on a whole
    minute since the epoch, plus the settle time (so the claim runs then, not up to a poll
    interval later)."""
    now = time.time()
    due = (now - settle) // 60 * 60 + 60 + settle
    return due - now + 0.01  # just after, so that the database's clock finds it due


Window = tuple[int, datetime, datetime, int, str | None, str]
"""(customer, from, to, interval seconds, seen, upto): what one batch covers."""


def _window(row: asyncpg.Record) -> Window:
    return (
        row["customer_id"],
        row["delivered_to"],
        row["next_end"],
        row["interval_minutes"] * 60,
        row["seen"],
        row["upto"],
    )


async def _rows_for(
    conn: Connection, mode: Mode, windows: Sequence[Window]
) -> dict[int, list[asyncpg.Record]]:
    """The points of each batch, by customer, in one query."""
    statement = queries.ALL_POINTS if mode == "all" else queries.AGGREGATED_POINTS
    by_customer: dict[int, list[asyncpg.Record]] = defaultdict(list)
    columns = _columns(windows, 6)
    if mode == "all":
        columns = [columns[0], columns[4], columns[5]]
    for row in await conn.fetch(statement, *columns):
        by_customer[row[0]].append(row)
    return by_customer


async def _rows_isolated(
    conn: Connection, mode: Mode, windows: Sequence[Window]
) -> tuple[dict[int, list[asyncpg.Record]], dict[int, asyncpg.PostgresError]]:
    """:func:`_rows_for` in a savepoint; on a data error, halves apart down to the customers it
    arises from. Their points and, apart, each failing customer's error."""
    try:
        async with conn.transaction():
            return await _rows_for(conn, mode, windows), {}
    except asyncpg.PostgresError as e:
        if not blames_the_data(e):
            raise
        if len(windows) == 1:
            return {}, {windows[0][0]: e}
    half = len(windows) // 2
    points, errors = await _rows_isolated(conn, mode, windows[:half])
    more, more_errors = await _rows_isolated(conn, mode, windows[half:])
    return {**points, **more}, {**errors, **more_errors}


async def _park(conn: Connection, failed: dict[int, asyncpg.PostgresError]) -> None:
    """Park these customers' deliveries, each with its error, until ``admin customers retry``."""
    for customer, e in failed.items():
        log.warning(
            "deliveries parked for a customer", customer=customer, error=f"{type(e).__name__}: {e}"
        )
    await conn.execute(
        queries.PARK,
        list(failed),
        [str(e.sqlstate) for e in failed.values()],
        [str(e) for e in failed.values()],
    )


def _columns(rows: Sequence[tuple[object, ...]], width: int) -> list[list[object]]:
    """Rows as ``width`` parallel arrays, the shape ``unnest`` takes."""
    return [[row[n] for row in rows] for n in range(width)]


def _batch(
    row: asyncpg.Record,
    batch_id: uuid.UUID,
    start: datetime,
    end: datetime,
    body: bytes,
    points: int,
    attempt: int,
    stored: bool,
) -> Batch:
    return Batch(
        customer_id=row["customer_id"],
        id=batch_id,
        start=start,
        end=end,
        body=body,
        points=points,
        attempt=attempt,
        url=row["url"],
        username=row["username"],
        password=row["password"],
        interval_seconds=row["interval_minutes"] * 60,
        stored=stored,
    )
