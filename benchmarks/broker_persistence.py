"""Mosquitto's persistence settings against ingest throughput and the crash window.

For each setting, a broker of its own (tests/support/broker.py: the private broker's
configuration and accounts, on a free port) and a real ingest in this process:

- live throughput: 4 homebases publish their batches (QoS 1, 50 points each) as fast as the
  broker acknowledges them while ingest stores them; points/s from the first publish until the
  last point is committed. The limit is the same run's ``autosave_interval 10`` (the setting
  Mosquitto ships and ours started with).
- the crash window: one homebase publishes 400 batches as fast as it can; after 200 are
  acknowledged the broker is killed (SIGKILL) and started again on the same data directory;
  ingest reconnects. Acknowledged points that never reach the database are lost: a homebase
  deletes what the broker acknowledged.
- ingest away: ingest stopped (its session kept by the broker), one homebase publishes for 8 s
  as fast as the broker acknowledges (the queue grows, and with it every snapshot), then
  SIGKILL, restart, ingest back: messages/s acknowledged, and acknowledged points lost.

    python -m benchmarks.broker_persistence [--full] [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import aiomqtt
import asyncpg
import msgspec

from benchmarks.ingest_throughput import POINTS_PER_TIME, TIMES_PER_MESSAGE, backlog, setup
from benchmarks.support import bench_database, figure, report
from energy_platform.core.settings import Settings
from energy_platform.devices.ingest.service import IngestService
from energy_platform.devices.simulator import SimulatedHomebase, data_topic, homebase_client
from energy_platform.services import build_services
from tests.support.broker import KillableBroker
from tests.support.services import eventually, running, with_port

SETTINGS = {
    "interval 10 s": "autosave_interval 10",
    "interval 1 s": "autosave_interval 1",
    "every 100 changes": "autosave_on_changes true\nautosave_interval 100",
    "every change": "autosave_on_changes true\nautosave_interval 1",
}
POINTS_PER_MESSAGE = TIMES_PER_MESSAGE * POINTS_PER_TIME
CRASH_BATCHES, KILL_AFTER = 400, 200
AWAY_SECONDS, AWAY_MESSAGES = 8, 30_000
SNAPSHOT_WAIT = 11  # > the longest interval measured
# Each run publishes its own time range (live) or its own homebase (the crashes), so that a
# count never meets another run's points.
STORED = """
SELECT count(*) FROM cluster.raw_points p JOIN cluster.streams s ON s.id = p.stream_id
  JOIN cluster.feeds f ON f.id = s.feed_id
 WHERE f.homebase_sn = $1 AND p.ts >= to_timestamp($2)"""
LIVE_SPAN = 200_000  # seconds of point times a live run may use


async def settled(
    db: asyncpg.Connection, sn: str, since: int, expected: int, quiet: float = 5.0
) -> int:
    """Points of ``sn`` from ``since`` once they reach ``expected`` or stop changing for
    ``quiet`` seconds."""
    last, quiet_since = -1, time.monotonic()
    while True:
        n = int(await db.fetchval(STORED, sn, since))
        if n >= expected:
            return n
        if n != last:
            last, quiet_since = n, time.monotonic()
        elif time.monotonic() - quiet_since > quiet:
            return n
        await asyncio.sleep(0.1)


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
        await settled(db, h.sn, t0, expected)
    return len(batch) * POINTS_PER_MESSAGE / (time.perf_counter() - started)


async def crash_loss(
    s: Settings,
    db: asyncpg.Connection,
    broker: KillableBroker,
    ingest: IngestService,
    h: SimulatedHomebase,
) -> tuple[int, int]:
    """(points acknowledged by the broker, of those never stored) across a SIGKILL."""
    t0 = int(time.time()) - 86_400
    payloads = [p for _, p in backlog([h], CRASH_BATCHES, t0)]
    acknowledged = 0
    with contextlib.suppress(aiomqtt.MqttError):
        async with homebase_client(s.mqtt, h.sn, h.secret, will=False) as client:
            for payload in payloads:
                await client.publish(
                    data_topic(h.sn, s.mqtt.topic_prefix), payload, qos=1, timeout=5
                )
                acknowledged += 1
                if acknowledged == KILL_AFTER:
                    broker.kill()
    await eventually(lambda: not ingest.subscribed.is_set(), 10)  # ingest saw the broker go
    broker.start()
    await asyncio.wait_for(ingest.subscribed.wait(), 60)  # back, with its session
    points = acknowledged * POINTS_PER_MESSAGE
    # Only the acknowledged batches count: a later one may have reached the broker unacked.
    kept = min(await settled(db, h.sn, t0, points), points)
    return points, points - kept


class Measured(msgspec.Struct):
    live: list[float] = msgspec.field(default_factory=list)
    """Points/s stored, ingest running."""
    burst_acked: list[int] = msgspec.field(default_factory=list)
    burst_lost: list[int] = msgspec.field(default_factory=list)
    away_rate: list[float] = msgspec.field(default_factory=list)
    """Messages/s the broker acknowledged while queueing for an absent ingest."""
    away_acked: list[int] = msgspec.field(default_factory=list)
    away_lost: list[int] = msgspec.field(default_factory=list)


async def while_away(
    s: Settings,
    db: asyncpg.Connection,
    broker: KillableBroker,
    start_ingest: Callable[[], AbstractAsyncContextManager[IngestService]],
    h: SimulatedHomebase,
) -> tuple[float, int, int]:
    """Ingest away (its session kept by the broker): a homebase publishes for AWAY_SECONDS as
    fast as the broker acknowledges, then SIGKILL, restart, ingest back. (messages/s, points
    acknowledged, of those never stored)."""
    t0 = int(time.time()) - AWAY_MESSAGES * TIMES_PER_MESSAGE - 3600  # all in the past
    payloads = [p for _, p in backlog([h], AWAY_MESSAGES, t0)]
    acknowledged = 0
    started = time.perf_counter()
    async with homebase_client(s.mqtt, h.sn, h.secret, will=False) as client:
        for payload in payloads:
            await client.publish(data_topic(h.sn, s.mqtt.topic_prefix), payload, qos=1, timeout=30)
            acknowledged += 1
            if time.perf_counter() - started > AWAY_SECONDS:
                break
    rate = acknowledged / (time.perf_counter() - started)
    broker.kill()
    broker.start()
    points = acknowledged * POINTS_PER_MESSAGE
    async with start_ingest() as ingest:
        await asyncio.wait_for(ingest.subscribed.wait(), 60)
        kept = min(await settled(db, h.sn, t0, points), points)
    return rate, points, points - kept


async def measure(base: Settings, n: int, persistence: str, messages: int, runs: int) -> Measured:
    out = Measured()
    with KillableBroker(persistence) as broker:
        mqtt = msgspec.structs.replace(
            base.mqtt,
            url=with_port(base.mqtt.url, broker.port),
            accounts_url=with_port(base.mqtt.accounts_url, broker.port),
        )
        s, homebases = await setup(
            msgspec.structs.replace(base, mqtt=mqtt), 4 + 2 * runs, first=n * 16
        )
        provisioning = s.cluster.provisioning_url

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
                    # The warm-up (run 0) fetches secrets and makes stream ids.
                    await live_rate(s, db, homebases[:4], 400, 0)
                    for run in range(runs):
                        out.live.append(await live_rate(s, db, homebases[:4], messages, run + 1))
                    for run in range(runs):
                        a, gone = await crash_loss(s, db, broker, ingest, homebases[4 + run])
                        out.burst_acked.append(a)
                        out.burst_lost.append(gone)
                for run in range(runs):
                    # Ingest's session must be in a snapshot, as it is after any long run.
                    await asyncio.sleep(SNAPSHOT_WAIT)
                    away = homebases[4 + runs + run]
                    rate, a, gone = await while_away(s, db, broker, ingesting, away)
                    out.away_rate.append(rate)
                    out.away_acked.append(a)
                    out.away_lost.append(gone)
                    async with ingesting() as ingest:  # a snapshot with the session again
                        await asyncio.wait_for(ingest.subscribed.wait(), 60)
        finally:
            await db.close()
    print(f"{persistence!r}: {out}", flush=True)
    return out


async def main(full: bool, runs: int) -> None:
    messages = 8_000 if full else 2_000
    with bench_database() as base:
        results = {
            name: await measure(base, n, conf, messages, runs)
            for n, (name, conf) in enumerate(SETTINGS.items())
        }
    reference = results["interval 10 s"]
    print(
        f"broker persistence: live, {messages:,} messages of {POINTS_PER_MESSAGE} points from 4"
        f" homebases; burst: {CRASH_BATCHES} batches, SIGKILL after {KILL_AFTER} acknowledged;"
        f" ingest away: {AWAY_SECONDS} s of publishing, then SIGKILL; {runs} runs each"
    )
    figures = []
    for name, m in results.items():
        figures += [
            figure(
                f"ingest points/s, broker saving {name}",
                "points/s",
                m.live,
                "same run, saving every 10 s",
                reference.live,
            ),
            figure(
                f"broker msg/s with ingest away, saving {name}",
                "msg/s",
                m.away_rate,
                "same run, saving every 10 s",
                reference.away_rate,
            ),
            figure(
                f"acknowledged points lost, burst + SIGKILL, saving {name}",
                "points",
                m.burst_lost,
                "points acknowledged before the kill",
                m.burst_acked,
                better="low",
            ),
            figure(
                f"acknowledged points lost, ingest away + SIGKILL, saving {name}",
                "points",
                m.away_lost,
                "points acknowledged before the kill",
                m.away_acked,
                better="low",
            ),
        ]
    report(figures)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--full", action="store_true", help="8,000 messages a live run")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    asyncio.run(main(args.full, args.runs))
