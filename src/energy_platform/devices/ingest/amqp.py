"""Ingest on RabbitMQ: the workers consume the one durable ingest queue over AMQP 0-9-1.

Each worker takes at most ``EP_DEVICES_RECEIVE_MAXIMUM`` unacknowledged messages (the prefetch),
which bounds its memory; RabbitMQ spreads the queue over the workers and sends a dead worker's
unacknowledged messages to the others. The serial number comes from the routing key (the
homebase's topic); judging, storing and acknowledging after the commit are the
:class:`~energy_platform.devices.ingest.service.Pipeline`'s, as on Mosquitto.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import aio_pika
import aiormq
import structlog
from aio_pika.abc import AbstractChannel, AbstractQueue

from energy_platform.core.background import Backoff, sleep_unless_stopped
from energy_platform.core.errors import ConfigurationError
from energy_platform.core.settings import MqttSettings, Settings
from energy_platform.devices.ingest.pipeline import BROKER_CONNECTED, Delivery, Pipeline
from energy_platform.pairing.rabbitmq import EXCHANGE, QUEUE_ARGUMENTS, binding_keys, topic_of

log = structlog.get_logger()


class ConnectionLost(Exception):
    """The broker closed the channel: what is unacknowledged is its to send again."""


async def declare_ingest_queue(channel: AbstractChannel, mqtt: MqttSettings) -> AbstractQueue:
    """The durable quorum queue and its bindings (the same as the accounts side declares)."""
    queue = await channel.declare_queue(mqtt.share_group, durable=True, arguments=QUEUE_ARGUMENTS)
    for key in binding_keys(mqtt):
        await queue.bind(EXCHANGE, key)
    return queue


async def consume_queue(
    settings: Settings, pipeline: Pipeline, stop: asyncio.Event, subscribed: asyncio.Event
) -> None:
    """Consume the ingest queue until ``stop``, reconnecting with backoff."""
    mqtt = settings.mqtt
    if not mqtt.amqp_url.startswith(("amqp://", "amqps://")):
        raise ConfigurationError("EP_MQTT_AMQP_URL must look like amqp://user:password@host:5672/")
    backoff = Backoff()
    while not stop.is_set():
        try:
            connection = await aio_pika.connect(mqtt.amqp_url, timeout=10)
            async with connection:
                channel = await connection.channel()
                await channel.set_qos(prefetch_count=settings.devices.receive_maximum)
                queue = await declare_ingest_queue(channel, mqtt)
                BROKER_CONNECTED.set(1)
                backoff.reset()
                url = urlsplit(mqtt.amqp_url)  # logged without its account
                log.info(
                    "broker connected", url=f"{url.scheme}://{url.hostname}:{url.port or 5672}"
                )
                await _consume(queue, channel, pipeline, stop, subscribed)
        # A lost connection surfaces from the pipeline's task group as a group; an
        # acknowledgement on the channel it closed is the same loss (the message stays
        # unacknowledged and the broker delivers it again).
        except* (
            ConnectionLost,
            aiormq.exceptions.AMQPError,
            aiormq.exceptions.ChannelInvalidStateError,
            OSError,
            TimeoutError,
        ) as group:
            delay = backoff.next_delay()
            error = repr(group.exceptions[0])
            log.warning("broker unreachable; retrying", error=error, retry_in=round(delay, 2))
            await sleep_unless_stopped(stop, delay)
        finally:
            BROKER_CONNECTED.set(0)
            subscribed.clear()


async def _consume(
    queue: AbstractQueue,
    channel: AbstractChannel,
    pipeline: Pipeline,
    stop: asyncio.Event,
    subscribed: asyncio.Event,
) -> None:
    underlay = await channel.get_underlay_channel()

    async def ack(tag: int) -> None:
        await underlay.basic_ack(tag)

    async with queue.iterator() as messages:
        log.info("subscribed", queue=queue.name)
        subscribed.set()

        async def deliveries() -> AsyncIterator[Delivery]:
            async for message in messages:
                tag = message.delivery_tag
                if tag is None:  # only a basic.get without ack has none
                    continue
                yield Delivery(topic_of(message.routing_key or ""), message.body, tag)
            raise ConnectionLost("the broker closed the channel")

        await pipeline.run(deliveries(), ack, stop)
