"""Mosquitto's persistence settings, and RabbitMQ, against ingest throughput and the crash window.

For each Mosquitto setting, a broker of its own (tests/support/broker.py: the private broker's
configuration and accounts, on a free port), and a RabbitMQ node of its own
(tests/support/rabbitmq.py: Debian's 3.10 with its MQTT plugin, the durable quorum ingest queue
that pairing declares, ingest over AMQP), each with a real ingest in this process:

- live throughput: 4 homebases publish their batches (QoS 1, 50 points each) as fast as the
  broker acknowledges them while ingest stores them; points/s from the first publish until the
  last point is committed. The limit is the same run's ``autosave_interval 10`` (the setting
  Mosquitto ships and ours started with).
- the crash window: one homebase publishes 200 batches as fast as the broker acknowledges them;
  as the 200th is acknowledged the broker is killed (SIGKILL) and started again on the same
  data directory; ingest reconnects. Acknowledged points that never reach the database are
  lost: a homebase deletes what the broker acknowledged.
- ingest away: ingest stopped (its session kept by the broker, and in its snapshot), one
  homebase publishes for 8 s (quick: 2 s) as fast as the broker acknowledges (the queue grows,
  and with it every snapshot), then SIGKILL, restart, ingest back: messages/s acknowledged, and
  acknowledged points lost.

What was kept is counted once ingest has stored a message the homebase publishes after the
restart: it queues behind everything the broker kept, and ingest stores a homebase's messages
in the order the broker delivers them.

For Mosquitto as shipped (``autosave_interval 1``) and RabbitMQ, also: ingest points/s with one
and two ``serve ingest`` processes (benchmarks/ingest_throughput.py's method: the backlog
published while they are stopped, timed from SIGCONT; a backlog of 4,000 messages, quick
2,000), the broker's CPU time per message over the live runs, its memory (RSS) idle and after
the runs, and the seconds a fresh broker takes until it takes connections. Each phase is
printed as it starts.

    python -m benchmarks.broker_persistence [--full] [--runs N] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Protocol

import asyncpg
import msgspec

from benchmarks.ingest_throughput import (
    POINTS_PER_MESSAGE,
    TIMES_PER_MESSAGE,
    WARM_UP_MESSAGES,
    Worker,
    backlog,
    drain,
    publish,
    setup,
)
from benchmarks.support import Figure, bench_database, figure, phase, report
from energy_platform.core.settings import MqttSettings, Settings
from energy_platform.devices.ingest.service import IngestService
from energy_platform.devices.simulator.homebase import (
    SimulatedHomebase,
    data_topic,
    homebase_client,
)
from energy_platform.services import build_services
from tests.support.broker import KillableBroker
from tests.support.platform import publish_killing
from tests.support.rabbitmq import RabbitCluster
from tests.support.services import eventually, running, with_port

SETTINGS = {
    "interval 10 s": "autosave_interval 10",
    "interval 1 s": "autosave_interval 1",
    "every 100 changes": "autosave_on_changes true\nautosave_interval 100",
    "every change": "autosave_on_changes true\nautosave_interval 1",
    "rabbitmq": "",
}
SHIPPED = "interval 1 s"
"""Mosquitto as the private broker and deploy/ run it: the one RabbitMQ is set beside."""


class Sizes(msgspec.Struct, frozen=True):
    """What each broker's measurements publish."""

    live: int
    """Messages of a live run, from 4 homebases."""
    away_seconds: float
    """Seconds the homebase publishes while ingest is away..."""
    away_messages: int
    """... or fewer, when it has published these (made beforehand: 30,000 took 1.4 s here)."""
    workers: int
    """Messages of the backlog 1 and 2 ingest processes drain, from 20 homebases."""


FULL = Sizes(live=8_000, away_seconds=8, away_messages=30_000, workers=4_000)
# The same measurements on less: ingest away for 2 s is still two snapshot intervals of
# Mosquitto as shipped (it acknowledged 2,829 to 5,936 messages a second here), and a drain of
# 100,000 points takes seconds at the rates measured here.
QUICK = Sizes(live=2_000, away_seconds=2, away_messages=12_000, workers=2_000)
KILL_AFTER = 200
# Guards against a hang; each wait ends as soon as its event comes. The longest drain measured
# here, ingest back after 26,081 messages queued on Mosquitto, took 33 s.
STORED_WITHIN, SAVED_WITHIN = 300.0, 60.0
# Each run publishes its own time range (live) or its own homebase (the crashes), so that a
# count never meets another run's points.
STORED = """
SELECT count(*) FROM cluster.raw_points p JOIN cluster.streams s ON s.id = p.stream_id
  JOIN cluster.feeds f ON f.id = s.feed_id
 WHERE f.homebase_sn = $1 AND p.ts >= to_timestamp($2) AND p.ts < to_timestamp($3)"""
LIVE_SPAN = 200_000  # seconds of point times a live run may use


async def stored(db: asyncpg.Connection, sn: str, since: int, until: int) -> int:
    """Points of homebase ``sn`` stored at times from ``since`` until before ``until``."""
    return int(await db.fetchval(STORED, sn, since, until))


async def kept(
    s: Settings, db: asyncpg.Connection, h: SimulatedHomebase, since: int, until: int
) -> int:
    """Points of ``h`` stored from ``since`` until before ``until`` once every message the
    broker kept of them is: one published now with points at ``until`` queues behind them, and
    ingest stores a homebase's messages in the order the broker delivers them."""
    ((_, marker),) = backlog([h], 1, until)
    await publish_all(s, h, [marker])
    await eventually(
        partial(stored, db, h.sn, until, until + TIMES_PER_MESSAGE),
        STORED_WITHIN,
        what=f"{h.sn}'s message published after the restart stored",
        holds=lambda n: n == POINTS_PER_MESSAGE,
    )
    return await stored(db, h.sn, since, until)


async def publish_all(s: Settings, h: SimulatedHomebase, payloads: list[bytes]) -> None:
    async with homebase_client(s.mqtt, h.sn, h.secret, will=False) as client:
        for payload in payloads:
            await client.publish(data_topic(h.sn, s.mqtt.topic_prefix), payload, qos=1, timeout=5)


async def live_rate(
    s: Settings, db: asyncpg.Connection, homebases: list[SimulatedHomebase], messages: int, run: int
) -> float:
    """Points/s from the first publish until every point is stored, ingest running."""
    t0 = int(time.time()) - 30 * 86_400 + run * LIVE_SPAN
    batch = backlog(homebases, messages, t0)
    per = {h.sn: [p for sn, p in batch if sn == h.sn] for h in homebases}
    expected = len(per[homebases[0].sn]) * POINTS_PER_MESSAGE
    started = time.perf_counter()
    await asyncio.gather(*(publish_all(s, h, per[h.sn]) for h in homebases))
    for h in homebases:
        await eventually(
            partial(stored, db, h.sn, t0, t0 + LIVE_SPAN),
            STORED_WITHIN,
            what=f"{h.sn}'s {expected:,} points stored",
            holds=lambda n: n >= expected,
        )
    return len(batch) * POINTS_PER_MESSAGE / (time.perf_counter() - started)


async def crash_loss(
    s: Settings,
    db: asyncpg.Connection,
    broker: Broker,
    ingest: IngestService,
    h: SimulatedHomebase,
) -> tuple[int, int]:
    """(points acknowledged by the broker, of those never stored) across a SIGKILL."""
    t0 = int(time.time()) - 86_400
    burst = [p for _, p in backlog([h], KILL_AFTER, t0)]
    # Nothing is published after the kill: a publish then waits out its timeout, unanswered.
    acknowledged = await publish_killing(s, h.sn, h.secret, burst, broker.kill, KILL_AFTER)
    await eventually(lambda: not ingest.subscribed.is_set(), 10)  # ingest saw the broker go
    phase(f"killed as the {acknowledged}th batch was acknowledged; starting it again")
    broker.start()
    await asyncio.wait_for(ingest.subscribed.wait(), 60)  # back, with its session
    phase("ingest subscribed again")
    points = acknowledged * POINTS_PER_MESSAGE
    return points, points - await kept(s, db, h, t0, t0 + KILL_AFTER * TIMES_PER_MESSAGE)


class Broker(Protocol):
    def kill(self) -> None: ...
    def start(self) -> None: ...
    def pids(self) -> list[int]: ...


class RabbitBroker:
    """One RabbitMQ node as a :class:`Broker`: ``start()`` returns once it takes connections."""

    def __init__(self, cluster: RabbitCluster) -> None:
        self.node = cluster.nodes[0]

    def kill(self) -> None:
        self.node.kill()

    def start(self) -> None:
        self.node.start()
        self.node.wait_ready()

    def pids(self) -> list[int]:
        return self.node.pids()


TICKS = os.sysconf("SC_CLK_TCK")


def usage(pids: list[int]) -> tuple[float, float]:
    """(CPU seconds, user and system, so far; resident MB now) of the processes ``pids``."""
    cpu, rss = 0.0, 0.0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
            cpu += (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    rss += int(line.split()[1]) / 1024
    return cpu, rss


class Measured(msgspec.Struct):
    live: list[float] = msgspec.field(default_factory=list)
    """Points/s stored, ingest running."""
    burst_acked: list[int] = msgspec.field(default_factory=list)
    burst_lost: list[int] = msgspec.field(default_factory=list)
    away_rate: list[float] = msgspec.field(default_factory=list)
    """Messages/s the broker acknowledged while queueing for an absent ingest."""
    away_acked: list[int] = msgspec.field(default_factory=list)
    away_lost: list[int] = msgspec.field(default_factory=list)
    workers: dict[int, list[float]] = msgspec.field(default_factory=dict)
    """Points/s drained by 1 and by 2 ``serve ingest`` processes."""
    cpu_us: list[float] = msgspec.field(default_factory=list)
    """Broker CPU microseconds per message over a live run."""
    rss_idle: list[float] = msgspec.field(default_factory=list)
    rss_busy: list[float] = msgspec.field(default_factory=list)
    start_seconds: list[float] = msgspec.field(default_factory=list)


async def while_away(
    s: Settings,
    db: asyncpg.Connection,
    broker: Broker,
    start_ingest: Callable[[], AbstractAsyncContextManager[IngestService]],
    h: SimulatedHomebase,
    sizes: Sizes,
) -> tuple[float, int, int]:
    """Ingest away (its session kept by the broker): a homebase publishes for a while as fast
    as the broker acknowledges, then SIGKILL, restart, ingest back. (messages/s, points
    acknowledged, of those never stored)."""
    until = int(time.time()) - 3600
    t0 = until - sizes.away_messages * TIMES_PER_MESSAGE  # all in the past
    payloads = [p for _, p in backlog([h], sizes.away_messages, t0)]
    acknowledged = 0
    started = time.perf_counter()
    async with homebase_client(s.mqtt, h.sn, h.secret, will=False) as client:
        for payload in payloads:
            await client.publish(data_topic(h.sn, s.mqtt.topic_prefix), payload, qos=1, timeout=30)
            acknowledged += 1
            if time.perf_counter() - started > sizes.away_seconds:
                break
    rate = acknowledged / (time.perf_counter() - started)
    phase(f"{acknowledged} acknowledged ({rate:.0f} msg/s); killing, starting it again")
    broker.kill()
    broker.start()
    points = acknowledged * POINTS_PER_MESSAGE
    async with start_ingest() as ingest:
        await asyncio.wait_for(ingest.subscribed.wait(), 60)
        phase("ingest back")
        return rate, points, points - await kept(s, db, h, t0, until)


@contextlib.contextmanager
def broker_for(name: str, base: MqttSettings) -> Iterator[tuple[Broker, MqttSettings, float]]:
    """A fresh broker of kind ``name``: (it, settings on it, seconds until it took connections)."""
    began = time.perf_counter()
    if name == "rabbitmq":
        with RabbitCluster(1) as cluster:
            yield RabbitBroker(cluster), cluster.nodes[0].settings(base), cluster.started_in
        return
    with KillableBroker(SETTINGS[name]) as broker:
        started = time.perf_counter() - began
        mqtt = msgspec.structs.replace(
            base,
            url=with_port(base.url, broker.port),
            accounts_url=with_port(base.accounts_url, broker.port),
        )
        yield broker, mqtt, started


async def measure(
    base: Settings, n: int, name: str, sizes: Sizes, runs: int, workers: bool
) -> Measured:
    out = Measured()
    phase(f"{name}: starting a broker")
    with broker_for(name, base.mqtt) as (broker, mqtt, started):
        out.start_seconds.append(started)
        out.rss_idle.append(usage(broker.pids())[1])
        phase(f"{name}: broker started in {started:.1f} s; pairing {4 + 2 * runs} homebases")
        s, homebases = await setup(
            msgspec.structs.replace(base, mqtt=mqtt), 4 + 2 * runs, first=n * 64
        )
        provisioning = s.pairing.provisioning_url

        @asynccontextmanager
        async def ingesting() -> AsyncIterator[IngestService]:
            ingest = IngestService(s)
            async with running(ingest):
                yield ingest

        db = await asyncpg.connect(s.database.url)
        try:
            async with running(
                *build_services("provisioning", s), ready_urls=(provisioning + "/healthz",)
            ):
                async with ingesting() as ingest:
                    await asyncio.wait_for(ingest.subscribed.wait(), 20)
                    phase(f"{name}: live warm-up")
                    # The warm-up (run 0) fetches secrets and makes stream ids.
                    await live_rate(s, db, homebases[:4], 400, 0)
                    for run in range(runs):
                        phase(f"{name}: live run {run + 1}")
                        cpu_before = usage(broker.pids())[0]
                        out.live.append(await live_rate(s, db, homebases[:4], sizes.live, run + 1))
                        cpu = usage(broker.pids())[0] - cpu_before
                        out.cpu_us.append(cpu / sizes.live * 1e6)
                    out.rss_busy.append(usage(broker.pids())[1])
                    for run in range(runs):
                        phase(f"{name}: burst + SIGKILL, run {run + 1}")
                        a, gone = await crash_loss(s, db, broker, ingest, homebases[4 + run])
                        out.burst_acked.append(a)
                        out.burst_lost.append(gone)
                for run in range(runs):
                    if isinstance(broker, KillableBroker):
                        phase(f"{name}: ingest's session in a snapshot")
                        # As it is after any long run: waited for, not guessed.
                        await eventually(
                            partial(broker.saved, s.mqtt.client_id.encode()), SAVED_WITHIN
                        )
                    phase(f"{name}: ingest away + SIGKILL, run {run + 1}")
                    away = homebases[4 + runs + run]
                    rate, a, gone = await while_away(s, db, broker, ingesting, away, sizes)
                    out.away_rate.append(rate)
                    out.away_acked.append(a)
                    out.away_lost.append(gone)
                    async with ingesting() as ingest:  # a snapshot with the session again
                        await asyncio.wait_for(ingest.subscribed.wait(), 60)
        finally:
            await db.close()
        if workers:
            phase(f"{name}: 1 and 2 ingest processes")
            out.workers = await worker_rates(base, mqtt, n, runs, sizes.workers)
    print(f"{name}: {out}", flush=True)
    return out


async def worker_rates(
    base: Settings, mqtt: MqttSettings, n: int, runs: int, backlog_messages: int
) -> dict[int, list[float]]:
    """Points/s that 1, then 2 ``serve ingest`` processes drain from a queued backlog."""
    s, homebases = await setup(msgspec.structs.replace(base, mqtt=mqtt), 20, first=n * 64 + 32)
    phase("20 homebases paired")
    points = backlog_messages * POINTS_PER_MESSAGE
    rates: dict[int, list[float]] = {1: [], 2: []}
    t0 = int(time.time()) - 5 * 86_400
    provisioning = s.pairing.provisioning_url
    workers: list[Worker] = []
    async with running(*build_services("provisioning", s), ready_urls=(provisioning + "/healthz",)):
        try:
            for count in (1, 2):
                workers.append(Worker(s, count))
                await workers[-1].start()
                for run in range(runs + 1):  # run 0 warms up (secrets, stream ids)
                    phase(f"{count} process(es), run {run}")
                    t0 += 3_600
                    messages = backlog_messages if run else WARM_UP_MESSAGES
                    await publish(s, homebases, t0, messages)
                    seconds = await drain(workers, messages * POINTS_PER_MESSAGE)
                    if run:
                        rates[count].append(points / seconds)
        finally:
            for w in workers:
                w.stop()
    return rates


async def main(full: bool, runs: int, only: list[str]) -> None:
    sizes = FULL if full else QUICK
    names = [name for name in SETTINGS if not only or name in only]
    with bench_database() as base:
        results = {
            name: await measure(base, n, name, sizes, runs, workers=name in (SHIPPED, "rabbitmq"))
            for n, name in enumerate(names)
        }
    reference = results.get("interval 10 s") or results[names[0]]
    reference_name = "saving every 10 s" if "interval 10 s" in results else names[0]
    print(
        f"broker persistence: live, {sizes.live:,} messages of {POINTS_PER_MESSAGE} points from 4"
        f" homebases; burst: {KILL_AFTER} batches, SIGKILL as the last is acknowledged; ingest"
        f" away: {sizes.away_seconds:g} s of publishing (at most {sizes.away_messages:,}"
        f" messages), then SIGKILL; {runs} runs each; workers: a backlog of {sizes.workers:,}"
        " messages from 20 homebases"
    )
    figures = []
    for name, m in results.items():
        label = "rabbitmq" if name == "rabbitmq" else f"saving {name}"
        figures += [
            figure(
                "ingest points/s, rabbitmq"
                if name == "rabbitmq"
                else f"ingest points/s, broker saving {name}",
                "points/s",
                m.live,
                f"same run, {reference_name}",
                reference.live,
            ),
            figure(
                f"broker msg/s with ingest away, {label}",
                "msg/s",
                m.away_rate,
                f"same run, {reference_name}",
                reference.away_rate,
            ),
            figure(
                f"acknowledged points lost, burst + SIGKILL, {label}",
                "points",
                m.burst_lost,
                "points acknowledged before the kill",
                m.burst_acked,
                better="low",
                goal="0" if name == "rabbitmq" else "",
                goal_met=max(m.burst_lost) == 0 if name == "rabbitmq" else None,
            ),
            figure(
                f"acknowledged points lost, ingest away + SIGKILL, {label}",
                "points",
                m.away_lost,
                "points acknowledged before the kill",
                m.away_acked,
                better="low",
            ),
        ]
    figures += beside(results)
    report(figures)


def beside(results: dict[str, Measured]) -> list[Figure]:
    """RabbitMQ beside Mosquitto as shipped: workers, CPU, memory, start."""
    rabbit, mosquitto = results.get("rabbitmq"), results.get(SHIPPED)
    if rabbit is None or mosquitto is None:
        return []
    pairs = [
        ("ingest points/s, 1 process", "points/s", rabbit.workers[1], mosquitto.workers[1]),
        ("ingest points/s, 2 processes", "points/s", rabbit.workers[2], mosquitto.workers[2]),
        ("broker CPU per message", "us", rabbit.cpu_us, mosquitto.cpu_us),
        ("broker memory idle", "MB", rabbit.rss_idle, mosquitto.rss_idle),
        ("broker memory after the live runs", "MB", rabbit.rss_busy, mosquitto.rss_busy),
        ("broker start until connections", "s", rabbit.start_seconds, mosquitto.start_seconds),
    ]
    out = []
    for what, unit, theirs, ours in pairs:
        low = unit in ("us", "MB", "s")
        out.append(
            figure(
                f"{what}, rabbitmq",
                unit,
                theirs,
                "same run, mosquitto",
                ours,
                better="low" if low else "high",
            )
        )
        out.append(
            figure(
                f"{what}, mosquitto",
                unit,
                ours,
                "same run, rabbitmq",
                theirs,
                better="low" if low else "high",
            )
        )
    two_vs_one = [b / a for a, b in zip(rabbit.workers[1], rabbit.workers[2], strict=True)]
    out.append(figure("ingest, 2 processes vs 1, rabbitmq", "x", two_vs_one, "1", [1.0]))
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--full", action="store_true", help="8,000 messages a live run")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--only", nargs="*", default=[], choices=list(SETTINGS), help="brokers")
    args = parser.parse_args()
    asyncio.run(main(args.full, args.runs, args.only))
