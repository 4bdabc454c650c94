"""Live streams (issue 40): 2,000 `GET /feeds/{id}/live` clients on one `serve api` process,
10 on each of 200 feeds, while a real `serve ingest` process stores what 200 simulated
homebases publish over MQTT; and what those clients and the live log cost ingest.

- `live: commit -> client p99, 2,000 clients`: each homebase publishes one message a second,
  one reading time of 10 points (two three-phase clamps, two gas meters with a thermometer):
  2,000 points/s, 2,000 live events/s (one a stream and commit), each sent to the feed's 10
  clients. A client's latency is the time its socket read gave it the event minus
  `cluster.live_log.logged_at` of the event (the writing transaction's start, `now()`: a little
  before its commit, so the figure errs high), read from the log after the run (the API keeps
  EP_LIVE_REPLAY_S of a day; no engine prunes it here). Goal: p99 <= 1 s.
- `live: API RSS per client`: the API process's resident set with the 2,000 clients connected
  and idle (steady state) minus what it held before they came, per client, beside
  EP_LIVE_CLIENT_BUFFER_BYTES (1 MiB): the most one client's queued events may hold, the bound
  a client's memory is designed against.
- `ingest points/s with live clients`: ingest_throughput.py's measurement (a backlog published
  while ingest is stopped, drained from SIGCONT until every point is committed) with the 2,000
  clients following the feeds being ingested, beside the same with no client, same run.
  Goal: ratio >= 0.9.
- `ingest points/s vs no live log`: the same drain beside one where `cluster.live_stage` and
  `cluster.live_publish` are replaced by no-ops returning 0 in this benchmark's scratch database
  (a measurement aid, put back before the next run; never in the product): the live log's own
  cost to ingest.

The clients run in a process of their own (raw asyncio streams, a minimal chunked-SSE parser,
one clock reading per socket read); its CPU, the API's and ingest's during the live phase are
printed. The ingest process serves only /metrics (EP_HTTP_METRICS_PORT): it has no live
follower of its own.

    python -m benchmarks.live_stream [--full] [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import resource
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from array import array
from collections.abc import Callable
from pathlib import Path

import asyncpg
import httpx
import msgspec

from benchmarks.csv_export import rss_kb
from benchmarks.ingest_throughput import POINTS_PER_MESSAGE, Worker, drain, publish, setup
from benchmarks.support import bench_database, cpu_s, figure, report
from energy_platform.core.codec.format_v4 import HomebaseRecord
from energy_platform.core.http.clients import http_client
from energy_platform.core.paths import migrations_dir
from energy_platform.core.settings import Settings
from energy_platform.core.tokens import token_digest
from energy_platform.devices.simulator.homebase import (
    SimulatedHomebase,
    data_topic,
    homebase_client,
)
from energy_platform.services import build_services
from energy_platform.users.admin import ROTATE_DEFAULT
from tests.support.admin import CLI
from tests.support.platform import serve_env, wait_subscribed
from tests.support.services import eventually, free_port, running

FEEDS = 200
PER_FEED = 10
CLIENTS = FEEDS * PER_FEED
GOAL_S = 1.0
GOAL_RATIO = 0.9
REPLAY_S = 86_400
TOKEN = "bench-live-" + secrets.token_hex(8)
BUFFER_BYTES = 1_048_576  # LiveSettings.client_buffer_bytes, the default the API runs with
LIVE_POINTS = 10
"""Points in one live message (:func:`live_record`)."""
CONNECTING = 50
"""Clients connecting at once (the API's accept queue and pool take them in turn)."""
# With track_commit_timestamp on (a diagnostic setting of the server, off by default) the
# writing transaction's commit time too: the latency splits into ingest's transaction (from its
# start to its commit) and the delivery (from the commit to the client).
LIVE_EVENTS = """
SELECT pos, date_part('epoch', logged_at) AS at,
       CASE WHEN current_setting('track_commit_timestamp') = 'on'
            THEN date_part('epoch', pg_xact_commit_timestamp(xmin)) END AS committed
  FROM cluster.live_log
 WHERE pos > $1 AND pos <= $2 AND kind = 'points'"""
TOP = "SELECT coalesce(max(pos), 0) FROM cluster.live_log"
# The measurement aid of the last figure: the live log's functions as no-ops (same signatures).
NO_LIVE_LOG = """
CREATE OR REPLACE FUNCTION cluster.live_stage(p_kind text, p_streams bigint[], p_times bigint[],
                                              p_values double precision[],
                                              p_max integer DEFAULT NULL)
RETURNS integer LANGUAGE sql VOLATILE AS $$ SELECT 0 $$;
CREATE OR REPLACE FUNCTION cluster.live_publish() RETURNS integer LANGUAGE sql AS $$ SELECT 0 $$;
"""
LIVE_FUNCTIONS = migrations_dir() / "functions" / "70_live.sql"


def sizes(full: bool) -> tuple[int, float]:
    """(backlog messages a drain, seconds of each live window). At quick size a window of 5 s
    still times 100,000 deliveries (10,000 events x 10 clients), a drain 100,000 points."""
    return (20_000, 60.0) if full else (2_000, 5.0)


# -- the clients' process ---------------------------------------------------------------------


class ClientsOrder(msgspec.Struct):
    port: int
    token: str
    feeds: list[int]
    """One entry per client: the feed it follows."""


class ClientsResult(msgspec.Struct):
    positions: list[int]
    """Every ``points`` event received, by every client, ..."""
    times: list[float]
    """... and the wall-clock time of the socket read that completed it."""
    connected: int
    failed: int
    ended: int
    """Streams the server closed (a client dropped as slow, or its stream ended)."""
    other_events: int
    keepalives: int
    cpu_s: float
    """The process's user + system CPU seconds from its start to the report."""


class _Received:
    def __init__(self) -> None:
        self.positions = array("q")
        self.times = array("d")
        self.other = 0
        self.keepalives = 0
        self.ended = 0
        self.connected = 0


async def _follow(
    port: int, token: str, feed: int, out: _Received, heads: asyncio.Semaphore
) -> None:
    """One client: the request, the head, then chunks de-chunked and SSE blocks split."""
    async with heads:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            f"GET /feeds/{feed}/live HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n".encode()
        )
        head = await reader.readuntil(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200") or b"chunked" not in head.lower():
        writer.close()
        raise RuntimeError(head.decode(errors="replace")[:200])
    out.connected += 1
    chunks, text = _Dechunked(), b""
    with contextlib.suppress(ConnectionError):
        while not chunks.last and (data := await reader.read(65536)):
            now = time.time()
            blocks = (text + chunks.feed(data)).split(b"\n\n")
            text = blocks.pop()
            for block in blocks:
                if block.startswith(b": "):
                    out.keepalives += 1
                elif b"\nevent: points\n" in block:
                    out.positions.append(int(block[4 : block.index(b"\n")]))
                    out.times.append(now)
                elif b"\nevent: " in block:
                    out.other += 1
    out.ended += 1
    writer.close()


class _Dechunked:
    """HTTP/1.1 chunked transfer coding undone, as the bytes come."""

    def __init__(self) -> None:
        self._raw = b""
        self._left = 0  # bytes of the current chunk still to come
        self._skip = 0  # of the CRLF after it
        self.last = False  # the last (empty) chunk came: the server ended the stream

    def feed(self, data: bytes) -> bytes:
        raw, i, parts = self._raw + data, 0, []
        while not self.last:
            if self._skip:
                n = min(self._skip, len(raw) - i)
                i, self._skip = i + n, self._skip - n
                if self._skip:
                    break
            if self._left:
                n = min(self._left, len(raw) - i)
                if n == 0:
                    break
                parts.append(raw[i : i + n])
                i, self._left = i + n, self._left - n
                self._skip = 0 if self._left else 2
                continue
            j = raw.find(b"\r\n", i)
            if j < 0:
                break
            self._left, i = int(raw[i:j].split(b";")[0], 16), j + 2
            self.last = self._left == 0
        self._raw = raw[i:]
        return b"".join(parts)


async def _clients(order: ClientsOrder) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = len(order.feeds) + 256
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    out = _Received()
    heads = asyncio.Semaphore(CONNECTING)
    tasks = [
        asyncio.create_task(_follow(order.port, order.token, feed, out, heads))
        for feed in order.feeds
    ]
    # Connected: every head read, or its task failed.
    while True:
        await asyncio.sleep(0.2)
        failed = sum(1 for t in tasks if t.done() and t.exception() is not None)
        if out.connected + failed == len(tasks):
            break
    connected = out.connected
    print(f"connected {connected} failed {failed}", flush=True)
    await asyncio.to_thread(sys.stdin.readline)  # "stop"
    ended_by_server = out.ended
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result = ClientsResult(
        positions=out.positions.tolist(),
        times=out.times.tolist(),
        connected=connected,
        failed=failed,
        ended=ended_by_server,
        other_events=out.other,
        keepalives=out.keepalives,
        cpu_s=usage.ru_utime + usage.ru_stime,
    )
    sys.stdout.buffer.write(msgspec.msgpack.encode(result))
    sys.stdout.flush()


class Clients:
    """The clients' process: connect, read until told to stop, then report."""

    def __init__(self, port: int, feeds: list[int]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.live_stream", "--clients"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        order = ClientsOrder(port, TOKEN, [f for f in feeds for _ in range(PER_FEED)])
        self.process.stdin.write(msgspec.json.encode(order) + b"\n")
        self.process.stdin.flush()

    async def connected(self) -> tuple[int, int]:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(self.process.stdout.readline), 300)
        found = re.match(rb"connected (\d+) failed (\d+)", line)
        if not found:
            raise RuntimeError(f"the clients' process said {line!r}")
        return int(found.group(1)), int(found.group(2))

    async def stop(self) -> ClientsResult:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(b"stop\n")
        self.process.stdin.flush()
        data = await asyncio.to_thread(self.process.stdout.read)
        self.process.wait(30)
        return msgspec.msgpack.decode(data, type=ClientsResult)


# -- the benchmark ----------------------------------------------------------------------------


def waited_s(pid: int) -> float:
    """Seconds the threads of process ``pid`` have waited, runnable, for a CPU (schedstat)."""
    return sum(
        int(task.joinpath("schedstat").read_text().split()[1]) / 1e9
        for task in Path(f"/proc/{pid}/task").iterdir()
    )


class IngestOnly(Worker):
    """ingest_throughput's worker as `serve ingest` alone, its counters on EP_HTTP_METRICS_PORT:
    no data API (and so no live follower) in the ingest process."""

    def __init__(self, s: Settings, n: int) -> None:
        port = free_port()
        self.settings = msgspec.structs.replace(
            s,
            mqtt=msgspec.structs.replace(s.mqtt, client_id=f"{s.mqtt.client_id}-{n}"),
            http=msgspec.structs.replace(s.http, api_port=port),  # readings() reads it
        )
        env = {**serve_env(self.settings), "EP_HTTP_METRICS_PORT": str(port)}
        env["EP_DEVICES_COAP_PORT"] = str(free_port(socket.SOCK_DGRAM))
        self.process = subprocess.Popen([CLI, "serve", "ingest"], env=env, stderr=subprocess.PIPE)


def start_api(s: Settings, port: int, log: Path) -> subprocess.Popen[bytes]:
    """One `serve api` process on ``port``, keeping a day of the live log. The ingest
    benchmark's feeds share one owner, whose token every client uses: the per-user cap on live
    streams is lifted (a real cluster has a household per feed)."""
    env = {
        **serve_env(s),
        "EP_HTTP_API_PORT": str(port),
        "EP_LIVE_REPLAY_S": str(REPLAY_S),
        "EP_LIVE_STREAMS_PER_USER": "1000000",
        "EP_LOG_LEVEL": "warning",
    }
    with log.open("wb") as err:
        process = subprocess.Popen([CLI, "serve", "api"], env=env, stderr=err)
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline or process.poll() is not None:
            process.terminate()
            raise RuntimeError(f"serve api did not start: {log.read_text()[-2000:]}")
        time.sleep(0.2)


def live_record(t: int, k: int) -> list[HomebaseRecord]:
    """One reading time of 10 points: two three-phase clamps, two gas meters + thermometers."""
    return [
        HomebaseRecord(4, t, 3, 1, 1, {"1": [230.0 + k % 7, 120.5, 80.25]}),
        HomebaseRecord(4, t, 4, 3, 3, {"1": [10.0 + k % 5, 20.5, 30.25]}),
        HomebaseRecord(4, t, 5, 2, 2, {"7": t / 1e5, "5": 21.5}),
        HomebaseRecord(4, t, 6, 4, 4, {"7": t / 1e6, "5": 19.5}),
    ]


async def publish_live(
    s: Settings, homebases: list[SimulatedHomebase], seconds: float
) -> tuple[int, float]:
    """Every homebase publishes one message of 10 points a second for ``seconds``, spread over
    the second; (messages published, seconds the publishers lagged behind at most)."""
    t0 = int(time.time()) + 1
    start = time.time() + 1.0
    ticks = int(seconds)
    lag = 0.0
    published = 0

    async def homebase(n: int, h: SimulatedHomebase) -> None:
        nonlocal lag, published
        async with homebase_client(s.mqtt, h.sn, h.secret, will=False) as client:
            topic = data_topic(h.sn, s.mqtt.topic_prefix)
            for k in range(ticks):
                due = start + k + n / len(homebases)
                await asyncio.sleep(max(0.0, due - time.time()))
                lag = max(lag, time.time() - due)
                await client.publish(topic, h.encrypt(live_record(t0 + k, k)), qos=1)
                published += 1

    await asyncio.gather(*(homebase(n, h) for n, h in enumerate(homebases)))
    return published, lag


async def ingest_metric(http: httpx.AsyncClient, port: int, name: str) -> float:
    metrics = (await http.get(f"http://127.0.0.1:{port}/metrics")).text
    found = re.search(rf"^{name}(?:{{[^}}]*}})? (\S+)$", metrics, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


class Live(msgspec.Struct):
    """The live windows' figures, one entry a window (latencies in ms)."""

    p50: list[float] = msgspec.field(default_factory=list)
    p99: list[float] = msgspec.field(default_factory=list)
    worst: list[float] = msgspec.field(default_factory=list)
    delivered: list[float] = msgspec.field(default_factory=list)
    """Events received per second, over all clients."""
    expected: list[float] = msgspec.field(default_factory=list)
    """Events committed per second x the clients of their feed."""
    transaction: list[tuple[float, float]] = msgspec.field(default_factory=list)
    """(p50, p99) from the writing transaction's start to its commit, per event."""
    delivery: list[tuple[float, float]] = msgspec.field(default_factory=list)
    """(p50, p99) from the commit to the client, per event received."""


def at_least(floor: float) -> Callable[[float], bool]:
    """A test for :func:`eventually` that a count reached ``floor`` (bound now, not in a loop)."""
    return lambda n: n >= floor


def percentiles(values: list[float]) -> tuple[float, float]:
    """(p50, p99) in ms of ``values`` in seconds."""
    ordered = sorted(values)
    return (
        statistics.median(ordered) * 1000,
        ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
    )


async def measure_live(
    conn: asyncpg.Connection,
    windows: list[tuple[int, int, float]],
    result: ClientsResult,
) -> Live:
    """Latency per window ``(first pos exclusive, last pos, seconds)`` from the log's times."""
    live = Live()
    for low, high, seconds in windows:
        rows = await conn.fetch(LIVE_EVENTS, low, high)
        logged = {r["pos"]: r["at"] for r in rows}
        received = [
            (p, t) for p, t in zip(result.positions, result.times, strict=True) if low < p <= high
        ]
        if not received:
            raise RuntimeError("no live event reached a client")
        p50, p99 = percentiles([t - logged[p] for p, t in received])
        live.p50.append(p50)
        live.p99.append(p99)
        live.worst.append(max(t - logged[p] for p, t in received) * 1000)
        live.delivered.append(len(received) / seconds)
        live.expected.append(len(logged) * PER_FEED / seconds)
        committed = {r["pos"]: r["committed"] for r in rows if r["committed"] is not None}
        if committed:
            live.transaction.append(percentiles([committed[p] - logged[p] for p in committed]))
            live.delivery.append(percentiles([t - committed[p] for p, t in received]))
    return live


async def drain_no_live_log(url: str, workers: list[Worker], points: int) -> float:
    """A drain with the live log's functions as no-ops, put back afterwards."""
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(NO_LIVE_LOG)
        try:
            return await drain(workers, points)
        finally:
            await conn.execute(LIVE_FUNCTIONS.read_text())
    finally:
        await conn.close()


async def main(full: bool, runs: int) -> None:
    messages, window = sizes(full)
    with bench_database() as base_settings, tempfile.TemporaryDirectory() as tmp:
        began = time.monotonic()
        s, homebases = await setup(base_settings, FEEDS)
        url = s.database.url
        conn = await asyncpg.connect(url)
        owner = await conn.fetchval("SELECT min(owner_id) FROM cluster.feeds")
        await conn.execute(ROTATE_DEFAULT, owner, token_digest(TOKEN))
        feeds = [r["id"] for r in await conn.fetch("SELECT id FROM cluster.feeds ORDER BY id")]
        assert len(feeds) == FEEDS, feeds
        print(f"setup: {FEEDS} paired homebases and feeds in {time.monotonic() - began:.0f} s")
        per = messages // FEEDS
        points = per * FEEDS * POINTS_PER_MESSAGE
        base = s.pairing.provisioning_url
        alone: list[float] = []
        stubbed: list[float] = []
        followed: list[float] = []
        api_port = free_port()
        api_log = Path(tmp) / "api.log"
        t0 = int(time.time()) - 3 * 86_400
        workers: list[Worker] = []
        api = start_api(s, api_port, api_log)
        clients: Clients | None = None
        try:
            async with (
                running(*build_services("provisioning", s), ready_urls=(base + "/healthz",)),
                http_client(timeout=5) as http,
            ):
                workers.append(IngestOnly(s, 1))
                await wait_subscribed(workers[0].process)
                workers[0].process.send_signal(signal.SIGSTOP)

                async def backlog_drain(sent: int = messages, stub: bool = False) -> float:
                    nonlocal t0
                    t0 += 3_600
                    count = (sent // FEEDS) * FEEDS * POINTS_PER_MESSAGE
                    await publish(s, homebases, t0, sent)
                    if stub:
                        return count / await drain_no_live_log(url, workers, count)
                    return count / await drain(workers, count)

                # Warm-up: a message from each homebase makes every feed's streams and fills
                # the caches; the drains after it are the counted ones.
                await backlog_drain(FEEDS)
                for _ in range(runs):
                    alone.append(await backlog_drain())
                    stubbed.append(await backlog_drain(stub=True))
                rss_before = rss_kb(api.pid)
                clients = Clients(api_port, feeds)
                connected, failed = await clients.connected()
                # Steady state: every client subscribed (a new client gets no replay), idle.
                await eventually(
                    lambda: ingest_metric(http, api_port, "ep_live_clients"),
                    60,
                    what="the API's live clients (ep_live_clients)",
                    holds=at_least(connected),
                )
                rss_with = rss_kb(api.pid)
                print(
                    f"clients: {connected} connected, {failed} failed; API RSS "
                    f"{rss_before / 1024:.1f} MiB before, {rss_with / 1024:.1f} MiB with them"
                )
                # The live phase: ingest running, homebases publishing in real time.
                ingest = workers[0]
                ingest.process.send_signal(signal.SIGCONT)
                windows: list[tuple[int, int, float]] = []
                ingested: list[float] = []
                processes = {"api": api, "ingest": ingest.process, "clients": clients.process}
                cpu_before = {n: cpu_s(p.pid) for n, p in processes.items()}
                wait_before = {n: waited_s(p.pid) for n, p in processes.items()}
                live_began = time.monotonic()
                lags = []
                for _ in range(runs):
                    low = await conn.fetchval(TOP)
                    before = await ingest.readings(http)
                    published, lag = await publish_live(s, homebases, window)
                    lags.append(lag)
                    # The window's events are those of every point it published, once committed.
                    everything = before + published * LIVE_POINTS
                    await eventually(
                        lambda: ingest.readings(http),
                        60,
                        0.05,
                        what="ingest committing the window's points",
                        holds=at_least(everything),
                    )
                    high = await conn.fetchval(TOP)
                    # Rates per second the homebases published, without the second before it
                    # (their connecting): at 5 s windows that second would be a sixth.
                    ingested.append(published * LIVE_POINTS / window)
                    windows.append((low, high, window))
                live_seconds = time.monotonic() - live_began
                cpu = {
                    n: (cpu_s(p.pid) - cpu_before[n]) / live_seconds for n, p in processes.items()
                }
                waited = {
                    n: (waited_s(p.pid) - wait_before[n]) / live_seconds
                    for n, p in processes.items()
                }
                ingest.process.send_signal(signal.SIGSTOP)
                api_cpu = cpu_s(api.pid)
                for _ in range(runs):
                    followed.append(await backlog_drain())
                api_cpu_per_point = (cpu_s(api.pid) - api_cpu) / (runs * points)
                slow = await ingest_metric(http, api_port, "ep_live_clients_ended_total")
                result = await clients.stop()
                clients = None
                for _ in range(runs):  # the clients gone: no client again, bracketing
                    alone.append(await backlog_drain())
                live = await measure_live(conn, windows, result)
        finally:
            if clients is not None:
                clients.process.kill()
            for w in workers:
                w.stop()
            api.terminate()
            api.wait(20)
            with contextlib.suppress(Exception):
                await conn.close()
    print(
        f"live: {FEEDS} homebases over MQTT into one `serve ingest` (the real ingest path), one"
        f" message of 10 points a second each ({statistics.median(ingested):,.0f} points/s"
        f" committed, publishers at most {max(lags):.2f} s late); {CLIENTS:,} clients"
        f" ({PER_FEED} a feed) on one `serve api`, {runs} windows of {window:.0f} s"
    )
    print(
        f"live: events delivered {statistics.median(live.delivered):,.0f}/s of"
        f" {statistics.median(live.expected):,.0f}/s committed x clients; p50"
        f" {statistics.median(live.p50):.0f} ms, worst {max(live.worst):.0f} ms; streams ended"
        f" by the server {result.ended} (ep_live_clients_ended_total {slow:.0f}), connected"
        f" {result.connected}, failed {result.failed}"
    )
    for n, (transaction, delivery) in enumerate(zip(live.transaction, live.delivery, strict=True)):
        print(
            f"live: window {n + 1}: ingest's transaction start -> commit p50"
            f" {transaction[0]:.0f} ms, p99 {transaction[1]:.0f} ms; commit -> client p50"
            f" {delivery[0]:.0f} ms, p99 {delivery[1]:.0f} ms (track_commit_timestamp)"
        )
    print(
        "live: CPU during the live windows (cores): "
        + ", ".join(f"{n} {c:.2f}" for n, c in cpu.items())
        + f"; clients' process {result.cpu_s:.1f} CPU s in all; waiting runnable for a CPU"
        " (schedstat, seconds a second): " + ", ".join(f"{n} {w:.2f}" for n, w in waited.items())
    )
    print(
        f"API CPU while the drains' events went to the clients: {api_cpu_per_point * 1e6:.1f} us"
        " a point ingested"
    )
    print(
        f"ingest drains: {points:,} points each ({per} messages of 50 points from each of"
        f" {FEEDS} homebases), {runs} runs each after a warm-up of a message a homebase"
    )
    report(
        [
            figure(
                "live: commit -> client p99, 2,000 clients",
                "ms",
                live.p99,
                "goal ms",
                [GOAL_S * 1000],
                goal="<= 1 s",
                goal_met=statistics.median(live.p99) <= GOAL_S * 1000,
            ),
            figure(
                "live: events delivered/s, 2,000 clients",
                "events/s",
                live.delivered,
                "committed events/s x their clients",
                live.expected,
            ),
            figure(
                "live: API RSS per client",
                "KiB",
                [(rss_with - rss_before) / CLIENTS],
                "EP_LIVE_CLIENT_BUFFER_BYTES KiB",
                [BUFFER_BYTES / 1024],
                better="low",
            ),
            figure(
                "ingest points/s with live clients",
                "points/s",
                followed,
                "same run, no live client",
                alone,
                goal=f"ratio >= {GOAL_RATIO}",
                goal_met=statistics.median(followed) / statistics.median(alone) >= GOAL_RATIO,
            ),
            figure(
                "ingest points/s vs no live log",
                "points/s",
                alone,
                "live_stage/live_publish as no-ops",
                stubbed,
            ),
        ]
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--full", action="store_true", help="60 s windows, 1M-point drains")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--clients", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.clients:
        asyncio.run(_clients(msgspec.json.decode(sys.stdin.buffer.readline(), type=ClientsOrder)))
    else:
        asyncio.run(main(args.full, args.runs))
