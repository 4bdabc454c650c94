"""The ingest queue's type on RabbitMQ: quorum against lazy classic, on one node of its own
(tests/support/rabbitmq.py), in the same run.

Per type and run: a durable queue bound to ``amq.topic``; 4 MQTT 3.1.1 clients publish 2 KB
messages (the size of a 50-point batch) at QoS 1 as fast as the broker acknowledges them
(msg/s from the first publish to the last PUBACK); the node's memory (RSS) with that backlog
queued;
then one AMQP consumer (aio-pika, prefetch 1000, acking each, as ingest does) drains it (msg/s).

    python -m benchmarks.rabbitmq_queues [--full] [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import time
from pathlib import Path
from typing import Any

import aio_pika
import aiomqtt

from benchmarks.support import figure, report
from tests.support.rabbitmq import USER, RabbitCluster, RabbitNode

TYPES: dict[str, dict[str, Any]] = {
    "quorum": {"x-queue-type": "quorum"},
    "lazy classic": {"x-queue-type": "classic", "x-queue-mode": "lazy"},
}
PUBLISHERS = 4
PAYLOAD = secrets.token_bytes(2048)


def rss_mb(node: RabbitNode) -> float:
    total = 0.0
    for pid in node.pids():
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) / 1024
        except OSError:
            continue
    return total


async def publish(node: RabbitNode, topic: str, messages: int) -> float:
    """Msg/s of ``PUBLISHERS`` clients publishing ``messages`` in all, QoS 1."""

    async def one(count: int) -> None:
        async with aiomqtt.Client(
            "127.0.0.1",
            node.mqtt_port,
            username=USER,
            password=node.password,
            identifier=f"bench-{secrets.token_hex(4)}",
            protocol=aiomqtt.ProtocolVersion.V311,
        ) as client:
            for _ in range(count):
                await client.publish(topic, PAYLOAD, qos=1, timeout=60)

    started = time.perf_counter()
    await asyncio.gather(*(one(messages // PUBLISHERS) for _ in range(PUBLISHERS)))
    return (messages // PUBLISHERS * PUBLISHERS) / (time.perf_counter() - started)


async def consume(channel: aio_pika.abc.AbstractChannel, queue_name: str, messages: int) -> float:
    queue = await channel.get_queue(queue_name)
    received = 0
    started = time.perf_counter()
    async with queue.iterator() as iterator:
        async for message in iterator:
            await message.ack()
            received += 1
            if received == messages:
                break
    return messages / (time.perf_counter() - started)


async def main(full: bool, runs: int) -> None:
    messages = 20_000 if full else 8_000
    rates: dict[str, dict[str, list[float]]] = {
        t: {"publish": [], "consume": [], "memory": []} for t in TYPES
    }
    with RabbitCluster(1) as cluster:
        node = cluster.nodes[0]
        url = f"amqp://{USER}:{node.password}@127.0.0.1:{node.amqp_port}/"
        async with await aio_pika.connect(url) as connection:
            channel = await connection.channel()
            await channel.set_qos(prefetch_count=1000)
            for run in range(runs):
                for kind, arguments in TYPES.items():  # alternated: drift hits both alike
                    name = f"bench-{kind.replace(' ', '-')}-{run}"
                    queue = await channel.declare_queue(name, durable=True, arguments=arguments)
                    await queue.bind("amq.topic", name.replace("-", "."))
                    rate = await publish(node, name.replace("-", "/"), messages)
                    rates[kind]["publish"].append(rate)
                    rates[kind]["memory"].append(rss_mb(node))
                    rates[kind]["consume"].append(await consume(channel, name, messages))
                    await queue.delete(if_unused=False, if_empty=False)
    print(
        f"rabbitmq queue types: {messages:,} messages of {len(PAYLOAD)} bytes from"
        f" {PUBLISHERS} MQTT publishers (QoS 1), then one AMQP consumer; {runs} runs;"
        f" {os.cpu_count()} cores"
    )
    quorum, lazy = rates["quorum"], rates["lazy classic"]
    report(
        [
            figure(
                "queue publish msg/s, quorum",
                "msg/s",
                quorum["publish"],
                "lazy classic",
                lazy["publish"],
            ),
            figure(
                "queue consume msg/s, quorum",
                "msg/s",
                quorum["consume"],
                "lazy classic",
                lazy["consume"],
            ),
            figure(
                "node memory with the backlog queued, quorum",
                "MB",
                quorum["memory"],
                "lazy classic",
                lazy["memory"],
                better="low",
            ),
        ]
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--full", action="store_true", help="20,000 messages a run")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    asyncio.run(main(args.full, args.runs))
