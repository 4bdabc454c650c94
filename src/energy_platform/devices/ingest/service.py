"""The ingest service: homebases' messages from the broker into the database.

On Mosquitto, a persistent MQTT 5 session (``clean_start`` false) on a shared subscription: the
broker keeps what arrives while ingest is away, and several workers share the load. On RabbitMQ,
the workers consume one durable queue over AMQP (:mod:`.amqp`). Either way a message is
acknowledged only after the transaction holding its points has committed, and the broker sends
at most ``EP_DEVICES_RECEIVE_MAXIMUM`` unacknowledged messages at once (MQTT's Receive Maximum,
AMQP's prefetch), which bounds ingest's memory. What becomes of a message does not depend on
the broker: one :class:`Pipeline` judges, batches, stores and acknowledges for both.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import aiomqtt
import asyncpg
import structlog
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from energy_platform.core.background import Backoff, sleep_unless_stopped
from energy_platform.core.db.pool import create_pool
from energy_platform.core.errors import ConfigurationError
from energy_platform.core.faults import is_outside_fault
from energy_platform.core.http.clients import http_client
from energy_platform.core.settings import MqttSettings, Settings
from energy_platform.devices.ingest.drops import Drops
from energy_platform.devices.ingest.keys import KeyStore
from energy_platform.devices.ingest.pipeline import BROKER_CONNECTED, Delivery, Pipeline
from energy_platform.devices.ingest.routes import RouteTable
from energy_platform.pairing.provisioning_client import ProvisioningClient

log = structlog.get_logger()


def broker_client(
    settings: MqttSettings, identifier: str, *, receive_maximum: int | None = None
) -> aiomqtt.Client:
    """An MQTT 5 client for ``settings.url`` (``mqtt://[user:password@]host[:port]``)."""
    url = urlsplit(settings.url)
    if url.scheme != "mqtt" or not url.hostname:
        raise ConfigurationError(f"EP_MQTT_URL must look like mqtt://host:port, got {url.scheme!r}")
    properties = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]  # paho
    properties.SessionExpiryInterval = settings.session_expiry
    if receive_maximum is not None:
        properties.ReceiveMaximum = receive_maximum
    return aiomqtt.Client(
        url.hostname,
        url.port or 1883,
        username=url.username,
        password=url.password,
        identifier=identifier,
        protocol=aiomqtt.ProtocolVersion.V5,
        clean_start=False,
        properties=properties,
    )


class IngestService:
    name = "ingest"

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._drops = Drops(settings.devices.cache_size)
        self.subscribed = asyncio.Event()
        """Set while the session is subscribed (the broker queues for it from then on)."""

    async def run(self, stop: asyncio.Event) -> None:
        pool = await create_pool(self._settings.database)
        ingest = self._settings.devices
        try:
            async with http_client(timeout=5.0) as http, asyncio.TaskGroup() as group:
                keys = KeyStore(ProvisioningClient(self._settings.pairing, http), ingest.cache_size)
                routes = RouteTable(pool, ingest.route_cache_seconds, ingest.cache_size)
                pipeline = Pipeline(self._settings, pool, keys, routes, self._drops)
                group.create_task(expire_dead_letters(pool, ingest.dead_letter_days, stop))
                if self._settings.mqtt.broker == "rabbitmq":
                    # Imported here: a Mosquitto cluster never loads the AMQP client.
                    from energy_platform.devices.ingest.amqp import consume_queue

                    await consume_queue(self._settings, pipeline, stop, self.subscribed)
                else:
                    await self._stay_connected(stop, pipeline)
        finally:
            await pool.close()

    async def _stay_connected(self, stop: asyncio.Event, pipeline: Pipeline) -> None:
        backoff = Backoff()
        mqtt = self._settings.mqtt
        while not stop.is_set():
            client = broker_client(
                mqtt, mqtt.client_id, receive_maximum=self._settings.devices.receive_maximum
            )
            try:
                async with client:
                    BROKER_CONNECTED.set(1)
                    backoff.reset()
                    log.info("broker connected", url=_public(mqtt.url))
                    await self._consume(client, pipeline, stop)
            # A lost connection surfaces from the pipeline's task group as a group.
            except* aiomqtt.MqttError as group:
                delay = backoff.next_delay()
                error = str(group.exceptions[0])
                log.warning("broker unreachable; retrying", error=error, retry_in=round(delay, 2))
                await sleep_unless_stopped(stop, delay)
            finally:
                BROKER_CONNECTED.set(0)
                self.subscribed.clear()

    async def _consume(
        self, client: aiomqtt.Client, pipeline: Pipeline, stop: asyncio.Event
    ) -> None:
        paho = client._client  # aiomqtt has no manual-ack option of its own (aiomqtt#345)
        paho.manual_ack_set(True)
        mqtt = self._settings.mqtt
        prefix = mqtt.topic_prefix
        await client.subscribe(f"$share/{mqtt.share_group}/{prefix}homebases/+/data", qos=1)
        # Retained presence is not delivered on shared subscriptions: every worker reads it all.
        await client.subscribe(f"{prefix}homebases/+/status", qos=1)
        log.info("subscribed", share_group=mqtt.share_group)
        self.subscribed.set()

        async def ack(mid: int) -> None:
            paho.ack(mid, 1)

        async def deliveries() -> AsyncIterator[Delivery]:
            async for message in client.messages:
                payload = message.payload if isinstance(message.payload, bytes) else b""
                yield Delivery(message.topic.value, payload, message.mid)

        await pipeline.run(deliveries(), ack, stop)


async def expire_dead_letters(pool: asyncpg.Pool, days: int, stop: asyncio.Event) -> None:
    """Delete dead letters older than ``days``, once an hour (a database fault waits an hour)."""
    while not stop.is_set():
        try:
            deleted = await pool.execute(EXPIRE_DEAD_LETTERS, days)
            log.debug("dead letters expired", result=deleted)
        except Exception as e:
            if not is_outside_fault(e):
                raise
            log.warning("dead letters not expired", error=type(e).__name__)
        await sleep_unless_stopped(stop, 3600)


EXPIRE_DEAD_LETTERS = """
DELETE FROM cluster.dead_letters WHERE received_at < now() - make_interval(days => $1)"""


def _public(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}:{parts.port or 1883}"
