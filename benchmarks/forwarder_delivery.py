"""Forwarder deliveries: N customers x H homebases, 1-minute intervals, receivers on
localhost (a separate process answering 204).

Two phases in one run, on one fresh database:
- catch-up after an outage: ``--backlog`` minutes of points were stored while the forwarder was
  down and every customer's cursor is that far behind; the clock runs until every one of those
  intervals is delivered (the first delivery carries the stored points, the others are empty):
  deliveries and points per second.
- live: the cursors stand at the current minute and the minute's points are stored during it;
  the figure is the lag from the interval's end to the answer of its delivery (from the
  delivery log), against the goal of 5 s.

    python -m benchmarks.forwarder_delivery [--customers N] [--homebases H] [--backlog MIN]
                                            [--mode all|aggregated]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import time
from datetime import UTC, datetime

import asyncpg

from benchmarks.support import bench_database, figure, report
from energy_platform.core.settings import ForwarderSettings, Settings
from energy_platform.core.tokens import token_digest
from energy_platform.forwarder.delivery import DeliveryService
from tests.support.services import free_port, running

STREAMS = ((1, 7, 12, None, "1-0:1.7.0"), (2, 8, 5, None, None))  # power (INTEGRAL), temperature
EVERY = 5  # seconds between points of a stream


def serve_receiver(port: int) -> None:
    """A minimal keep-alive HTTP/1.1 endpoint answering 204 to everything.

    A raw asyncio protocol, so that the receiver, which shares the cores with the forwarder
    and PostgreSQL, costs the benchmark as little as it can (its cost is not the product's)."""

    class Receiver(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            assert isinstance(transport, asyncio.Transport)
            self.transport = transport
            self.buffer = b""

        def data_received(self, data: bytes) -> None:
            self.buffer += data
            while (head := self.buffer.find(b"\r\n\r\n")) >= 0:
                length = 0
                for line in self.buffer[:head].split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                if len(self.buffer) < head + 4 + length:
                    return
                self.buffer = self.buffer[head + 4 + length :]
                self.transport.write(b"HTTP/1.1 204 No Content\r\n\r\n")

    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(Receiver, "127.0.0.1", port, backlog=1024)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


async def seed(url: str, customers: int, homebases: int, receiver: str, mode: str) -> None:
    """Customers, configs, registrations and streams."""
    conn = await asyncpg.connect(url)
    try:
        ids = await conn.fetch(
            "INSERT INTO forwarder.customers (name, token_sha256)"
            " SELECT 'bench-' || n, sha256(('token-' || n)::bytea)"
            " FROM generate_series(1, $1) n RETURNING id",
            customers,
        )
        await conn.executemany(
            "INSERT INTO forwarder.configs (customer_id, interval_minutes, url, mode)"
            " VALUES ($1, 1, $2, $3)",
            [(r["id"], f"{receiver}/c/{r['id']}", mode) for r in ids],
        )
        sns = [(f"B{c['id']:09X}{h:06X}", c["id"]) for c in ids for h in range(homebases)]
        await conn.executemany(
            "INSERT INTO forwarder.registrations (homebase_sn, customer_id, registered_at)"
            " VALUES ($1, $2, 'epoch')",
            sns,
        )
        await conn.executemany(
            "INSERT INTO forwarder.streams (homebase_sn, channel, device, medium, idx, obis)"
            " VALUES ($1, $2, $3, $4, $5, $6)",
            [(sn, *s) for sn, _ in sns for s in STREAMS],
        )
        assert token_digest("token-1")  # the tokens are sha256('token-N'), for trying the API
    finally:
        await conn.close()


async def store_points(url: str, start: int, end: int) -> int:
    """Every stream's points in [start, end), stored now (as ingest would); their number."""
    conn = await asyncpg.connect(url)
    try:
        stream_ids = [r["id"] for r in await conn.fetch("SELECT id FROM forwarder.streams")]
        times = [datetime.fromtimestamp(t, UTC) for t in range(start, end, EVERY)]
        await conn.copy_records_to_table(
            "points",
            schema_name="forwarder",
            columns=["stream_id", "ts", "value"],
            records=((s, t, float(s % 100 + n)) for s in stream_ids for n, t in enumerate(times)),
        )
        await conn.execute("ANALYZE forwarder.points")
        return len(stream_ids) * len(times)
    finally:
        await conn.close()


async def set_cursors(url: str, at: int) -> None:
    """Interval cursors at ``at``, no batch pending; the storage cursors (what was delivered)
    stay. Only while no delivery service runs."""
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(
            "INSERT INTO forwarder.delivery_state (customer_id, delivered_to)"
            " SELECT customer_id, $1 FROM forwarder.configs"
            " ON CONFLICT (customer_id) DO UPDATE SET delivered_to = EXCLUDED.delivered_to,"
            " batch_id = NULL, batch_from = NULL, batch_to = NULL, batch_mode = NULL,"
            " batch_seen = NULL, batch_body = NULL, attempts = 0, next_attempt_at = NULL",
            datetime.fromtimestamp(at, UTC),
        )
    finally:
        await conn.close()


async def count_delivered(url: str, since: int) -> int:
    """How many intervals from ``since`` are delivered (a cheap poll: the delivery service
    runs in this process, and fetching every lag twice a second would slow it)."""
    conn = await asyncpg.connect(url)
    try:
        count: int = await conn.fetchval(
            "SELECT count(*) FROM forwarder.delivery_log"
            " WHERE outcome = 'delivered' AND batch_from >= $1",
            datetime.fromtimestamp(since, UTC),
        )
        return count
    finally:
        await conn.close()


async def delivered(url: str, since: int) -> list[float]:
    """Lag (s) from each delivered interval's end to the answer, for intervals from ``since``."""
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch(
            "SELECT extract(epoch FROM attempted_at - batch_to) * 1000 + duration_ms AS lag_ms"
            " FROM forwarder.delivery_log WHERE outcome = 'delivered' AND batch_from >= $1",
            datetime.fromtimestamp(since, UTC),
        )
        return [float(r["lag_ms"]) / 1000 for r in rows]
    finally:
        await conn.close()


async def measure(s: Settings, args: argparse.Namespace, receiver: str) -> None:
    now = int(time.time())
    minute = now // 60 * 60
    backlog_start = minute - 60 * args.backlog
    t0 = time.monotonic()
    await seed(s.database.url, args.customers, args.homebases, receiver, args.mode)
    # The outage: the backlog's points were stored while no forwarder ran.
    backlog_points = await store_points(s.database.url, backlog_start, minute)
    print(f"seeded {backlog_points} points in {time.monotonic() - t0:.1f} s")
    forwarder = ForwarderSettings(
        max_concurrent=args.concurrency,
        settle_seconds=0.5,
        allowed_networks="127.0.0.0/8",
        claim_workers=args.claim_workers,
        claim_size=args.claim_size,
    )
    service = DeliveryService(s.database, forwarder)

    # Catch-up: the backlog's intervals, as fast as they go.
    await set_cursors(s.database.url, backlog_start)
    expected = args.customers * args.backlog
    async with running(service):
        started = time.monotonic()
        while await count_delivered(s.database.url, backlog_start) < expected:
            await asyncio.sleep(0.2)
            if time.monotonic() - started > 1800:
                raise SystemExit("catch-up did not finish in 30 minutes")
        catch_up = time.monotonic() - started
    # Live: the interval running now, its points stored during it, delivered after its end.
    live_from = int(time.time()) // 60 * 60
    await set_cursors(s.database.url, live_from)
    await store_points(s.database.url, live_from, live_from + 60)
    async with running(DeliveryService(s.database, forwarder)):
        print(f"waiting for the interval ending {datetime.fromtimestamp(live_from + 60, UTC)}")
        while await count_delivered(s.database.url, live_from) < args.customers:
            await asyncio.sleep(0.5)
            if time.time() > live_from + 180:
                raise SystemExit("the live interval was not delivered within 2 minutes")
    lags = sorted(await delivered(s.database.url, live_from))
    conn = await asyncpg.connect(s.database.url)
    try:
        spread = await conn.fetchrow(
            "SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms) AS p50,"
            " max(duration_ms) AS max,"
            " extract(epoch FROM min(attempted_at) - min(batch_to)) AS first_sent,"
            " extract(epoch FROM max(attempted_at) - min(batch_to)) AS last_sent"
            " FROM forwarder.delivery_log WHERE batch_from >= $1",
            datetime.fromtimestamp(live_from, UTC),
        )
    finally:
        await conn.close()
    assert spread is not None  # an aggregate has a row
    print(
        f"live requests: p50 {spread['p50']:.0f} ms, max {spread['max']:.0f} ms; first sent"
        f" {spread['first_sent']:.2f} s, last sent {spread['last_sent']:.2f} s after the end"
    )
    p99 = lags[min(len(lags) - 1, int(len(lags) * 0.99))]
    within = sum(lag <= 5.0 for lag in lags)
    print(
        f"catch-up: {expected} deliveries ({backlog_points} points) in {catch_up:.1f} s:"
        f" {expected / catch_up:.0f} deliveries/s, {backlog_points / catch_up:.0f} points/s"
    )
    print(
        f"live: {len(lags)} deliveries, lag p50 {statistics.median(lags):.2f} s,"
        f" p99 {p99:.2f} s, max {lags[-1]:.2f} s; {within} within 5 s"
    )
    report(
        [
            figure(
                "catch-up deliveries", "per s", [expected / catch_up], "goal per s", [1000 / 55]
            ),
            figure("live lag p50", "ms", [statistics.median(lags) * 1000], "goal ms", [5000]),
            figure("live lag p99", "ms", [p99 * 1000], "goal ms", [5000]),
            figure("live lag max", "ms", [lags[-1] * 1000], "goal ms", [5000]),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--customers", type=int, help="default 200, or 1,000 with --full")
    parser.add_argument("--full", action="store_true", help="1,000 customers (the issue's size)")
    parser.add_argument("--homebases", type=int, default=10, help="per customer")
    parser.add_argument("--backlog", type=int, default=3, help="minutes of outage to catch up")
    parser.add_argument("--mode", choices=["all", "aggregated"], default="aggregated")
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--claim-workers", type=int, default=ForwarderSettings().claim_workers)
    parser.add_argument("--claim-size", type=int, default=ForwarderSettings().claim_size)
    args = parser.parse_args()
    if args.customers is None:
        args.customers = 1000 if args.full else 200
    port = free_port()
    receiver = multiprocessing.get_context("spawn").Process(
        target=serve_receiver, args=(port,), daemon=True
    )
    receiver.start()
    try:
        with bench_database() as s:
            asyncio.run(measure(s, args, f"http://127.0.0.1:{port}"))
    finally:
        receiver.terminate()
        receiver.join(5)


if __name__ == "__main__":
    main()
