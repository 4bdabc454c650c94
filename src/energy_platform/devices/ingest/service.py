"""The MQTT ingest service.

A persistent MQTT 5 session (``clean_start`` false) on a shared subscription: the broker keeps
what arrives while ingest is away, and several workers share the load. Messages are
acknowledged by hand, only after the transaction holding their points has committed; MQTT's
Receive Maximum bounds how many unacknowledged messages the broker sends, and so ingest's memory.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from urllib.parse import urlsplit

import aiomqtt
import asyncpg
import httpx
import structlog
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from prometheus_client import Counter, Gauge

from energy_platform.db.pool import create_pool
from energy_platform.devices.backoff import Backoff, sleep_unless_stopped
from energy_platform.devices.codec.envelope import EnvelopeError, unseal
from energy_platform.devices.codec.format_v4 import RecordError, decode_batch
from energy_platform.devices.ingest.drops import Drops
from energy_platform.devices.ingest.keys import KeyStore
from energy_platform.devices.ingest.routes import RouteTable
from energy_platform.devices.ingest.store import Accepted, PointStore
from energy_platform.errors import ConfigurationError, NotFound, Unavailable
from energy_platform.provisioning.client import ProvisioningClient
from energy_platform.settings import MqttSettings, Settings

log = structlog.get_logger()
Ack = Callable[[int], None]
TOPIC = re.compile(r"^homebases/([0-9A-F]{16})/(data|status)$")

BROKER_CONNECTED = Gauge("ep_mqtt_connected", "1 while the ingest service holds its broker session")
MESSAGES = Counter("ep_ingest_messages_total", "MQTT messages handled, by outcome", ["outcome"])
READINGS = Counter("ep_ingest_points_total", "Points stored (resent ones included)")
DB_RETRY = 1.0


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
        self._drops = Drops()
        self.subscribed = asyncio.Event()
        """Set while the session is subscribed (the broker queues for it from then on)."""

    async def run(self, stop: asyncio.Event) -> None:
        pool = await create_pool(self._settings.database)
        try:
            async with httpx.AsyncClient(timeout=5.0) as http:
                keys = KeyStore(ProvisioningClient(self._settings.cluster, http))
                routes = RouteTable(pool, self._settings.ingest.route_cache_seconds)
                await self._stay_connected(stop, _Pipeline(self._settings, pool, keys, routes))
        finally:
            await pool.close()

    async def _stay_connected(self, stop: asyncio.Event, pipeline: _Pipeline) -> None:
        backoff = Backoff()
        mqtt = self._settings.mqtt
        while not stop.is_set():
            client = broker_client(
                mqtt, mqtt.client_id, receive_maximum=self._settings.ingest.receive_maximum
            )
            try:
                async with client:
                    BROKER_CONNECTED.set(1)
                    backoff.reset()
                    log.info("broker connected", url=_public(mqtt.url))
                    await pipeline.consume(client, stop, self._drops, self.subscribed)
            except aiomqtt.MqttError as e:
                delay = backoff.next_delay()
                log.warning("broker unreachable; retrying", error=str(e), retry_in=round(delay, 2))
                await sleep_unless_stopped(stop, delay)
            finally:
                BROKER_CONNECTED.set(0)
                self.subscribed.clear()


class _Pipeline:
    """Receive (decrypt, validate) and write (batch, commit, acknowledge) as two tasks."""

    def __init__(
        self, settings: Settings, pool: asyncpg.Pool, keys: KeyStore, routes: RouteTable
    ) -> None:
        self._settings = settings.ingest
        self._share_group = settings.mqtt.share_group
        self._topic_prefix = settings.mqtt.topic_prefix
        self._pool = pool
        self._keys = keys
        self._routes = routes
        self._store = PointStore(pool)

    async def consume(
        self, client: aiomqtt.Client, stop: asyncio.Event, drops: Drops, subscribed: asyncio.Event
    ) -> None:
        paho = client._client  # aiomqtt has no manual-ack option of its own (aiomqtt#345)
        paho.manual_ack_set(True)
        prefix = self._topic_prefix
        await client.subscribe(f"$share/{self._share_group}/{prefix}homebases/+/data", qos=1)
        # Retained presence is not delivered on shared subscriptions: every worker reads it all.
        await client.subscribe(f"{prefix}homebases/+/status", qos=1)
        log.info("subscribed", share_group=self._share_group)
        subscribed.set()
        queue: asyncio.Queue[tuple[Accepted, int]] = asyncio.Queue()

        def ack(mid: int) -> None:
            paho.ack(mid, 1)

        async with asyncio.TaskGroup() as group:
            receiving = group.create_task(
                self._receive(client, queue, drops, ack), name="ingest-receive"
            )
            writing = group.create_task(self._write(queue, ack, stop), name="ingest-write")
            stopping = group.create_task(stop.wait(), name="ingest-stop")
            await asyncio.wait({receiving, writing, stopping}, return_when="FIRST_COMPLETED")
            receiving.cancel()
            stopping.cancel()
            # What was received is written (and acknowledged) before the session closes.
            await queue.join()
            writing.cancel()

    async def _receive(
        self,
        client: aiomqtt.Client,
        queue: asyncio.Queue[tuple[Accepted, int]],
        drops: Drops,
        ack: Ack,
    ) -> None:
        async for message in client.messages:
            topic = TOPIC.match(message.topic.value.removeprefix(self._topic_prefix))
            payload = message.payload if isinstance(message.payload, bytes) else b""
            if topic is None:
                drops.record("bad_topic", "-", message.topic.value)
                ack(message.mid)
                continue
            sn, kind = topic.groups()
            if kind == "status":
                await self._presence(sn, payload)
                ack(message.mid)
                continue
            accepted = await self._accept(sn, payload, drops)
            if accepted is None:
                MESSAGES.labels("dropped").inc()
                ack(message.mid)  # it can never become valid: redelivery would not help
            else:
                await queue.put((accepted, message.mid))

    async def _accept(self, sn: str, payload: bytes, drops: Drops) -> Accepted | None:
        route = await self._routes.resolve(sn)
        if route is None:
            drops.record("unknown_sn", sn, "no feed and no forwarder registration")
            return None
        try:
            plaintext = await self._decrypt(sn, payload)
        except NotFound as e:
            drops.record("unknown_sn", sn, e.detail)
            return None
        except EnvelopeError as e:
            drops.record("undecryptable", sn, str(e))
            return None
        try:
            series, errors = decode_batch(plaintext, time.time())
        except RecordError as e:
            drops.record(e.cause, sn, str(e))
            return None
        for error in errors:
            drops.record(error.cause, sn, str(error))
        return Accepted(route, series) if series else None

    async def _decrypt(self, sn: str, payload: bytes) -> bytes:
        backoff = Backoff(cap=10.0)
        refetched = False
        while True:
            try:
                key = await self._keys.key(sn)
            except Unavailable as e:
                # Provisioning is down: wait, keeping the message unacknowledged meanwhile.
                log.warning("secret unavailable; retrying", sn=sn, error=e.detail)
                await asyncio.sleep(backoff.next_delay())
                continue
            try:
                return unseal(key, sn, payload)
            except EnvelopeError:
                if refetched:
                    raise
                refetched = True
                self._keys.forget(sn)  # the secret may have changed: ask once more

    async def _presence(self, sn: str, payload: bytes) -> None:
        state = payload.strip().lower()
        if state not in (b"online", b"offline"):
            return
        await self._pool.execute(PRESENCE, sn, state == b"online")

    async def _write(
        self, queue: asyncio.Queue[tuple[Accepted, int]], ack: Ack, stop: asyncio.Event
    ) -> None:
        linger = self._settings.batch_linger_ms / 1000
        while True:
            batch = [await queue.get()]
            deadline = time.monotonic() + linger
            while len(batch) < self._settings.batch_messages:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    batch.append(await asyncio.wait_for(queue.get(), remaining))
                except TimeoutError:
                    break
            count = await self._store_until_done([accepted for accepted, _ in batch])
            for _, mid in batch:
                ack(mid)
                queue.task_done()
            MESSAGES.labels("stored").inc(len(batch))
            READINGS.inc(count)

    async def _store_until_done(self, batch: list[Accepted]) -> int:
        backoff = Backoff(cap=10.0)
        while True:
            try:
                return await self._store.write(batch)
            except (OSError, asyncpg.PostgresConnectionError, asyncpg.InterfaceError) as e:
                # Unacknowledged, the batch stays the broker's until it is committed here.
                log.warning("database unavailable; retrying batch", error=type(e).__name__)
                await asyncio.sleep(backoff.next_delay())


PRESENCE = """
INSERT INTO cluster.homebase_presence (homebase_sn, online, changed_at) VALUES ($1, $2, now())
ON CONFLICT (homebase_sn) DO UPDATE
   SET online = EXCLUDED.online,
       changed_at = CASE WHEN homebase_presence.online = EXCLUDED.online
                         THEN homebase_presence.changed_at ELSE now() END"""


def _public(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}:{parts.port or 1883}"
