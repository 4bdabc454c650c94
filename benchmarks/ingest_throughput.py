"""Ingest throughput: a backlog of encrypted homebase batches drained from Mosquitto into
TimescaleDB, beside a raw COPY of the same rows into a hypertable in the same run.

The Python publisher cannot outrun the consumer (about 4k QoS 1 messages/s here), so the backlog
is published while the ingest's persistent session is offline; then ingest starts and the clock
runs until every point is committed (its readings counter, incremented after each commit).

    python -m benchmarks.ingest_throughput [--full] [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import secrets
import socket
import time

import asyncpg
import httpx
import msgspec

from benchmarks.support import bench_database, figure, report, tag
from energy_platform.devices.codec.format_v4 import HomebaseRecord
from energy_platform.devices.ingest.service import READINGS, IngestService
from energy_platform.devices.simulator import SimulatedHomebase, data_topic, homebase_client
from energy_platform.services import build_services
from energy_platform.settings import (
    ClusterSettings,
    DeviceSettings,
    HttpSettings,
    MqttSettings,
    ProvisioningSettings,
    Settings,
)
from tests.support.admin import run_admin_async
from tests.support.services import free_port, running

TIMES_PER_MESSAGE = 10
POINTS_PER_TIME = 5  # three phases, a gas meter, a thermometer: 50 points a message


def sizes(full: bool) -> tuple[int, int]:
    """(homebases, messages per run)."""
    return (200, 40_000) if full else (20, 4_000)


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
        devices=DeviceSettings(
            coap_port=free_port(socket.SOCK_DGRAM), tftp_port=free_port(socket.SOCK_DGRAM)
        ),
        provisioning=ProvisioningSettings(secret_key=key),
        mqtt=MqttSettings(
            url=s.mqtt.url,
            accounts_url=s.mqtt.accounts_url,
            client_id=f"bench-{tag()}",
            share_group=f"bench-{tag()}",
            session_expiry=600,
            topic_prefix=f"bench-{tag()}/",
        ),
    )
    cluster = await run_admin_async(
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
        cluster=ClusterSettings(
            provisioning_url=f"http://127.0.0.1:{s.http.provisioning_port}",
            secret=cluster["secret"],
        ),
    )
    user = await run_admin_async(s, "users", "add", f"bench-{tag()}")
    sns = [f"BE{first + i:014X}" for i in range(homebases)]
    out = []
    base = s.cluster.provisioning_url
    async with (
        running(*build_services("provisioning", s), ready_urls=(base + "/healthz",)),
        httpx.AsyncClient(
            base_url=base + "/api", headers={"X-SvcClusterAuth": s.cluster.secret}
        ) as http,
    ):
        for sn in sns:
            await run_admin_async(
                s, "homebases", "add", sn, "--partner", "bench", "--type", "HB", "--generation", "6"
            )
            # A customer registering the serial number: the feed, paired with this cluster.
            await run_admin_async(
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


async def create_session(s: Settings) -> None:
    """Subscribe once, so that the broker queues the backlog for the (then offline) session."""
    stop = asyncio.Event()
    service = IngestService(s)
    task = asyncio.create_task(service.run(stop))
    await asyncio.wait_for(service.subscribed.wait(), 20)
    stop.set()
    await task


async def drain(s: Settings, expected: int) -> float:
    """Seconds from ingest's start until ``expected`` more readings are committed."""
    before = READINGS._value.get()
    stop = asyncio.Event()
    started = time.perf_counter()
    task = asyncio.create_task(IngestService(s).run(stop))
    while READINGS._value.get() - before < expected:
        await asyncio.sleep(0.01)
        if task.done():
            task.result()
    elapsed = time.perf_counter() - started
    stop.set()
    await task
    return elapsed


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
    homebase_count, messages = sizes(full)
    with bench_database() as base_settings:
        s, homebases = await setup(base_settings, homebase_count)
        points = (messages // homebase_count) * homebase_count * TIMES_PER_MESSAGE * POINTS_PER_TIME
        base = s.cluster.provisioning_url
        ingest_rates, message_rates, copy_rates = [], [], []
        async with running(*build_services("provisioning", s), ready_urls=(base + "/healthz",)):
            await create_session(s)
            for run in range(runs + 1):  # run 0 warms up (secrets, stream ids) and is not counted
                t0 = int(time.time()) - 3 * 86_400 + run * 86_400 // (runs + 1)
                batch = backlog(homebases, messages, t0)
                for h in homebases:  # each logged in with its own account, as in the field
                    async with homebase_client(s.mqtt, h.sn, h.secret) as client:
                        topic = data_topic(h.sn, s.mqtt.topic_prefix)
                        for sn, payload in batch:
                            if sn == h.sn:
                                await client.publish(topic, payload, qos=1)
                seconds = await drain(s, points)
                rate = await copy_rate(s.database.url, points)
                if run:
                    ingest_rates.append(points / seconds)
                    message_rates.append(len(batch) / seconds)
                    copy_rates.append(rate)
        print(
            f"ingest: {homebase_count} homebases, {len(batch):,} messages of "
            f"{TIMES_PER_MESSAGE * POINTS_PER_TIME} points per run, {runs} runs after a warm-up"
        )
        report(
            [
                figure(
                    "ingest points/s (MQTT -> DB)",
                    "points/s",
                    ingest_rates,
                    "raw COPY rows/s",
                    copy_rates,
                ),
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
