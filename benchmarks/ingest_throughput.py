"""Ingest throughput: a backlog of encrypted homebase batches drained from Mosquitto into
TimescaleDB by one `serve ingest` process and by two on one shared subscription, beside a raw
COPY of the same rows into a hypertable and a bare aiomqtt receive of the same backlog (acked by
hand, nothing else done), both in the same run.

The Python publisher cannot outrun the consumer (about 4k QoS 1 messages/s here), so the backlog
is published while the ingest processes are stopped (SIGSTOP: their sessions and subscriptions
stay); the clock runs from SIGCONT until every point is committed (the processes' readings
counter, incremented after each commit, read from their /metrics).

    python -m benchmarks.ingest_throughput [--full] [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import re
import secrets
import signal
import socket
import time

import aiomqtt
import asyncpg
import httpx
import msgspec

from benchmarks.support import bench_database, figure, phase, report, tag
from energy_platform.core.codec.format_v4 import HomebaseRecord
from energy_platform.core.http.clients import http_client
from energy_platform.core.settings import (
    DeviceSettings,
    HttpSettings,
    PairingSettings,
    ProvisioningSettings,
    Settings,
)
from energy_platform.devices.ingest.service import broker_client
from energy_platform.devices.simulator.homebase import (
    SimulatedHomebase,
    data_topic,
    homebase_client,
)
from energy_platform.services import build_services
from tests.support.admin import run_admin
from tests.support.platform import start_ingest, wait_subscribed
from tests.support.services import eventually, free_port, running

TIMES_PER_MESSAGE = 10
POINTS_PER_TIME = 5  # three phases, a gas meter, a thermometer: 50 points a message
POINTS_PER_MESSAGE = TIMES_PER_MESSAGE * POINTS_PER_TIME
WARM_UP_MESSAGES = 400  # 20 from each of 20 homebases: its secret fetched, its streams made


def sizes(full: bool) -> tuple[int, int, int]:
    """(homebases, messages per run, messages of the warm-up)."""
    return (200, 40_000, 40_000) if full else (20, 4_000, WARM_UP_MESSAGES)


async def setup(
    s: Settings, homebases: int, first: int = 0
) -> tuple[Settings, list[SimulatedHomebase]]:
    """A cluster with ``homebases`` paired homebases and feeds, serial numbers from ``first``."""
    key = secrets.token_hex(32)
    s = msgspec.structs.replace(
        s,
        http=HttpSettings(
            provisioning_port=free_port(), api_port=free_port(), forwarder_port=free_port()
        ),
        devices=DeviceSettings(coap_port=free_port(socket.SOCK_DGRAM)),
        provisioning=ProvisioningSettings(secret_key=key, tftp_port=free_port(socket.SOCK_DGRAM)),
        # The broker's kind and URLs kept; a session and topics of the benchmark's own.
        mqtt=msgspec.structs.replace(
            s.mqtt,
            client_id=f"bench-{tag()}",
            share_group=f"bench-{tag()}",
            session_expiry=600,
            topic_prefix=f"bench-{tag()}/",
        ),
    )
    cluster = await run_admin(
        s,
        "clusters",
        "add",
        "--title",
        "bench",
        "--http",
        "127.0.0.1:80",
        "--mqtt",
        "127.0.0.1:1883",
    )
    s = msgspec.structs.replace(
        s,
        pairing=PairingSettings(
            provisioning_url=f"http://127.0.0.1:{s.http.provisioning_port}",
            cluster_secret=cluster["secret"],
        ),
    )
    user = await run_admin(s, "users", "add", f"bench-{tag()}")
    sns = [f"BE{first + i:014X}" for i in range(homebases)]
    out = []
    base = s.pairing.provisioning_url
    async with (
        running(*build_services("provisioning", s), ready_urls=(base + "/healthz",)),
        http_client(
            base_url=base + "/api", headers={"X-SvcClusterAuth": s.pairing.cluster_secret}
        ) as http,
    ):
        for sn in sns:
            await run_admin(
                s, "homebases", "add", sn, "--partner", "bench", "--type", "HB", "--generation", "6"
            )
            # A customer registering the serial number: the feed, paired with this cluster.
            await run_admin(
                s,
                "feeds",
                "add",
                "--owner",
                user["id"],
                "--homebase",
                sn,
                "--title",
                sn,
                "--timezone",
                "UTC",
            )
            secret = bytes.fromhex((await http.get(f"/device/{sn}/secret/")).json()["secret"])
            out.append(SimulatedHomebase(sn, secret))
    return s, out


def backlog(homebases: list[SimulatedHomebase], messages: int, t0: int) -> list[tuple[str, bytes]]:
    per = messages // len(homebases)
    out = []
    for h in homebases:
        for m in range(per):
            records = []
            for k in range(TIMES_PER_MESSAGE):
                t = t0 + m * TIMES_PER_MESSAGE + k
                records.append(HomebaseRecord(4, t, 3, 1, 1, {"1": [230.0 + k, 120.5, 80.25]}))
                records.append(HomebaseRecord(4, t, 5, 2, 2, {"7": t / 1e5, "5": 21.5}))
            out.append((h.sn, h.encrypt(records)))
    return out


class Worker:
    """One `serve ingest api` process (the api only for its /metrics), stopped between runs."""

    def __init__(self, s: Settings, n: int) -> None:
        self.settings = msgspec.structs.replace(
            s,
            mqtt=msgspec.structs.replace(s.mqtt, client_id=f"{s.mqtt.client_id}-{n}"),
            http=msgspec.structs.replace(s.http, api_port=free_port()),
        )
        self.process = start_ingest(self.settings, "api")

    async def start(self) -> None:
        await wait_subscribed(self.process)
        self.process.send_signal(signal.SIGSTOP)

    async def readings(self, http: httpx.AsyncClient) -> float:
        metrics = (await http.get(f"http://127.0.0.1:{self.settings.http.api_port}/metrics")).text
        found = re.search(r"^ep_ingest_points_total (\S+)$", metrics, re.MULTILINE)
        return float(found.group(1)) if found else 0.0

    def stop(self) -> None:
        self.process.send_signal(signal.SIGCONT)
        self.process.terminate()
        self.process.wait(20)


# Holds every insert into the points' table back until the transaction ends (SHARE conflicts
# with an insert's ROW EXCLUSIVE), and nothing else: a stopped worker is never inside one.
HOLD_INSERTS = "SET LOCAL lock_timeout = '30s'; LOCK TABLE cluster.raw_points IN SHARE MODE"
DRAIN_WITHIN = 600.0
"""A guard against a count that never comes: a quick drain took 3 to 5 s here."""


async def drain(workers: list[Worker], expected: int) -> float:
    """Seconds from resuming ``workers`` until they have committed ``expected`` more points.

    A stopped process answers no request, so its counter is read after the resume; a resumed
    one may commit some of the backlog before it answers, and the drain then waited for ever
    for points it had counted as old ones (two quick runs of six here, and `make bench`). The
    counters are read while a lock holds every insert back: none of the backlog is in them."""
    conn = await asyncpg.connect(workers[0].settings.database.url)
    try:
        async with http_client(timeout=5) as http:
            async with conn.transaction():
                await conn.execute(HOLD_INSERTS)
                for w in workers:
                    w.process.send_signal(signal.SIGCONT)
                started = time.perf_counter()
                owed = sum([await w.readings(http) for w in workers]) + expected

            async def stored() -> float:
                return sum([await w.readings(http) for w in workers])

            await eventually(
                stored,
                DRAIN_WITHIN,
                0.02,
                what=f"the ingest processes commit {expected:,} points",
                holds=lambda total: total >= owed,
            )
            elapsed = time.perf_counter() - started
    finally:
        await conn.close()
    for w in workers:
        w.process.send_signal(signal.SIGSTOP)
    return elapsed


def bare_client(s: Settings) -> aiomqtt.Client:
    return broker_client(s.mqtt, f"{s.mqtt.client_id}-bare")


def bare_topic(s: Settings) -> str:
    return f"$share/{s.mqtt.share_group}-bare/{s.mqtt.topic_prefix}homebases/+/data"


async def bare_session(s: Settings) -> None:
    """A session of its own group, so that it gets a copy of every backlog while away."""
    async with bare_client(s) as client:
        await client.subscribe(bare_topic(s), qos=1)


async def bare_receive(s: Settings, messages: int) -> float:
    """Seconds a bare aiomqtt client takes to receive and acknowledge ``messages`` queued
    messages, doing nothing else: the MQTT receive ceiling of one Python process."""
    received = 0
    started = time.perf_counter()
    async with bare_client(s) as client:
        paho = client._client  # manual acks, as ingest does (aiomqtt#345)
        paho.manual_ack_set(True)
        await client.subscribe(bare_topic(s), qos=1)
        async for message in client.messages:
            paho.ack(message.mid, 1)
            received += 1
            if received == messages:
                break
    return time.perf_counter() - started


async def publish(s: Settings, homebases: list[SimulatedHomebase], t0: int, messages: int) -> int:
    """The backlog of ``messages`` batches from ``homebases``, each logged in with its own
    account, as in the field; the number of messages published."""
    batch = backlog(homebases, messages, t0)
    for h in homebases:
        async with homebase_client(s.mqtt, h.sn, h.secret) as client:
            topic = data_topic(h.sn, s.mqtt.topic_prefix)
            for sn, payload in batch:
                if sn == h.sn:
                    await client.publish(topic, payload, qos=1)
    return len(batch)


COPY_TABLE = """
CREATE TABLE bench_copy (
    stream_id bigint, ts timestamptz, value float8, PRIMARY KEY (stream_id, ts)
);
SELECT create_hypertable('bench_copy', by_range('ts', INTERVAL '1 day'),
                         create_default_indexes => false);"""


async def copy_rate(url: str, rows: int) -> float:
    """Rows/s of COPY into an empty hypertable shaped like cluster.raw_points."""
    base = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=rows // 5 + 60)
    records = [(i % 5 + 1, base + dt.timedelta(seconds=i // 5), 1.5) for i in range(rows)]
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(COPY_TABLE)
        started = time.perf_counter()
        await conn.copy_records_to_table("bench_copy", records=records)
        elapsed = time.perf_counter() - started
        await conn.execute("DROP TABLE bench_copy")
    finally:
        await conn.close()
    return rows / elapsed


async def main(full: bool, runs: int) -> None:
    homebase_count, messages, warm_up = sizes(full)
    with bench_database() as base_settings:
        phase(f"pairing {homebase_count} homebases")
        s, homebases = await setup(base_settings, homebase_count)
        points = (messages // homebase_count) * homebase_count * POINTS_PER_MESSAGE
        base = s.pairing.provisioning_url
        one: list[float] = []
        two: list[float] = []
        bare: list[float] = []
        message_rates: list[float] = []
        copy_rates: list[float] = []
        t0 = int(time.time()) - 3 * 86_400
        workers: list[Worker] = []
        async with running(*build_services("provisioning", s), ready_urls=(base + "/healthz",)):
            try:
                await bare_session(s)
                workers.append(Worker(s, 1))
                await workers[0].start()
                # Run 0 of each setup warms up (secrets, stream ids) on a small backlog and is
                # not counted. The second process joins the share group only after the runs of
                # the first alone. The limits are measured beside the first process's runs.
                for setup_rates, count in ((one, 1), (two, 2)):
                    if count == 2:
                        workers.append(Worker(s, 2))
                        await workers[1].start()
                    for run in range(runs + 1):
                        phase(f"{count} process(es), {f'run {run}' if run else 'warm-up'}")
                        t0 += 3_600
                        backlog_size = messages if run else warm_up
                        sent = await publish(s, homebases, t0, backlog_size)
                        seconds = await drain(workers, sent * POINTS_PER_MESSAGE)
                        received = await bare_receive(s, sent)  # its session's copies, always
                        if run:
                            setup_rates.append(points / seconds)
                            if count == 1:
                                message_rates.append(sent / seconds)
                                bare.append(points / received)
                                copy_rates.append(await copy_rate(s.database.url, points))
            finally:
                for w in workers:
                    w.stop()
        print(
            f"ingest: {homebase_count} homebases, {sent:,} messages of "
            f"{POINTS_PER_MESSAGE} points per run, {runs} runs after a warm-up of"
            f" {warm_up:,} messages, with 1 `serve ingest` process and with 2 on one shared"
            " subscription"
        )
        report(
            [
                figure(
                    "ingest points/s (MQTT -> DB)", "points/s", one, "raw COPY rows/s", copy_rates
                ),
                figure(
                    "ingest points/s vs bare aiomqtt receive",
                    "points/s",
                    one,
                    "bare aiomqtt receive points/s",
                    bare,
                ),
                figure(
                    "ingest points/s, 2 processes", "points/s", two, "raw COPY rows/s", copy_rates
                ),
                figure("ingest points/s, 2 processes vs 1", "points/s", two, "1 process", one),
                figure(
                    "ingest messages/s",
                    "msg/s",
                    message_rates,
                    "raw COPY rows/s / 50",
                    [c / 50 for c in copy_rates],
                ),
            ]
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--full", action="store_true", help="200 homebases, 2M points a run")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.full, args.runs))
