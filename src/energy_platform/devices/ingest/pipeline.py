"""What becomes of a homebase's message, whichever broker delivered it: one :class:`Pipeline`
judges (decrypts, validates), batches, stores and acknowledges after the commit, for the MQTT
session (:mod:`.service`) and the AMQP queue (:mod:`.amqp`) alike."""

import asyncio
import re
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable

import asyncpg
import msgspec
import structlog
from prometheus_client import Counter, Gauge

from energy_platform.core.background import Backoff
from energy_platform.core.codec.envelope import EnvelopeError, unseal
from energy_platform.core.codec.format_v4 import MAX_PAYLOAD_BYTES, RecordError, decode_batch
from energy_platform.core.errors import NotFound
from energy_platform.core.faults import blames_the_data, is_outside_fault
from energy_platform.core.settings import Settings
from energy_platform.devices.ingest.drops import DeadLetter, Drops
from energy_platform.devices.ingest.keys import KeyStore
from energy_platform.devices.ingest.routes import RouteTable
from energy_platform.devices.ingest.store import Accepted, PointStore

log = structlog.get_logger()
Ack = Callable[[int], Awaitable[None]]
"""Acknowledges the delivery of that tag (an MQTT packet id, an AMQP delivery tag)."""
TOPIC = re.compile(r"^homebases/([0-9A-F]{16})/(data|status)$")


BROKER_CONNECTED = Gauge("ep_mqtt_connected", "1 while the ingest service holds its broker session")
MESSAGES = Counter("ep_ingest_messages_total", "MQTT messages handled, by outcome", ["outcome"])
READINGS = Counter("ep_ingest_points_total", "Points stored (resent ones included)")


class Delivery(msgspec.Struct, frozen=True):
    """A message as the broker delivered it, whichever the broker."""

    topic: str
    """``[prefix]homebases/{SN}/data|status``: the MQTT topic the homebase published to."""
    payload: bytes
    tag: int
    """What acknowledges it (:data:`Ack`)."""


class _Held(Exception):
    """A fault outside the message (database, provisioning): the message waits for it."""


Item = Accepted | DeadLetter


class Pipeline:
    """Receive (decrypt, validate) and write (batch, commit, acknowledge) as two tasks, for
    deliveries from either broker.

    A message that meets a fault outside itself is held, with every later message of its SN,
    in that SN's lane, retried with backoff, while other homebases' messages go on.
    """

    def __init__(
        self,
        settings: Settings,
        pool: asyncpg.Pool,
        keys: KeyStore,
        routes: RouteTable,
        drops: Drops,
    ) -> None:
        self._settings = settings.devices
        self._topic_prefix = settings.mqtt.topic_prefix
        self._pool = pool
        self._keys = keys
        self._routes = routes
        self._drops = drops
        self._store = PointStore(pool)
        self._held: dict[str, deque[Delivery]] = {}
        self._lanes: list[asyncio.Task[None]] = []

    async def run(self, deliveries: AsyncIterator[Delivery], ack: Ack, stop: asyncio.Event) -> None:
        """Handle ``deliveries`` until ``stop`` or until they fail (a lost connection: what
        is unacknowledged then is the broker's to send again)."""
        queue: asyncio.Queue[tuple[Item, int]] = asyncio.Queue()
        # A new session: the broker sends the unacknowledged (held) ones again.
        self._held.clear()
        self._lanes.clear()

        async with asyncio.TaskGroup() as group:
            receiving = group.create_task(
                self._receive(deliveries, queue, ack, group), name="ingest-receive"
            )
            writing = group.create_task(self._write(queue, ack), name="ingest-write")
            stopping = group.create_task(stop.wait(), name="ingest-stop")
            await asyncio.wait({receiving, writing, stopping}, return_when="FIRST_COMPLETED")
            receiving.cancel()
            stopping.cancel()
            for task in self._lanes:
                task.cancel()  # held messages stay unacknowledged: the broker keeps them
            # What was received is written (and acknowledged) before the session closes.
            await queue.join()
            writing.cancel()

    async def _receive(
        self,
        deliveries: AsyncIterator[Delivery],
        queue: asyncio.Queue[tuple[Item, int]],
        ack: Ack,
        group: asyncio.TaskGroup,
    ) -> None:
        async for message in deliveries:
            sn = self._sn(message)
            lane = self._held.get(sn) if sn is not None else None
            if lane is not None:
                lane.append(message)  # behind the held one: a homebase's order is kept
            elif sn is not None and not await self._handle(message, queue, ack):
                self._held[sn] = deque([message])
                self._lanes = [t for t in self._lanes if not t.done()]
                self._lanes.append(
                    group.create_task(self._retry_held(sn, queue, ack), name=f"held-{sn}")
                )
            elif sn is None:
                await self._handle(message, queue, ack)

    def _sn(self, message: Delivery) -> str | None:
        topic = TOPIC.match(message.topic.removeprefix(self._topic_prefix))
        return None if topic is None else topic.group(1)

    async def _retry_held(self, sn: str, queue: asyncio.Queue[tuple[Item, int]], ack: Ack) -> None:
        backoff = Backoff(cap=10.0)
        lane = self._held[sn]
        while lane:
            await asyncio.sleep(backoff.next_delay())
            while lane and await self._handle(lane[0], queue, ack):
                lane.popleft()
                backoff.reset()
        del self._held[sn]

    async def _handle(
        self, message: Delivery, queue: asyncio.Queue[tuple[Item, int]], ack: Ack
    ) -> bool:
        """Judge ``message`` and pass it on; False when a fault outside it holds it."""
        try:
            item = await self._judge(message)
        except _Held as e:
            log.warning("message held; retrying", sn=self._sn(message), error=str(e))
            return False
        if item is None:
            await ack(message.tag)
        else:
            await queue.put((item, message.tag))
        return True

    async def _judge(self, message: Delivery) -> Item | None:
        """What to store for ``message``: its points, its dead letter, or nothing at all."""
        topic = message.topic.removeprefix(self._topic_prefix)
        payload = message.payload
        match = TOPIC.match(topic)
        if match is None:
            return self._dead(None, topic, "bad_topic", "not homebases/{SN}/data|status", payload)
        sn, kind = match.groups()
        try:
            if kind == "status":
                await self._presence(sn, payload)
                MESSAGES.labels("presence").inc()
                return None
            return await self._accept(sn, topic, payload)
        except Exception as e:
            if is_outside_fault(e):
                raise _Held(f"{type(e).__name__}: {e}") from e
            # A bug met by one message must not stop everyone's ingest: keep it, and say so.
            log.exception("message could not be judged", sn=sn)
            return self._dead(sn, topic, "unexpected", type(e).__name__, payload)

    def _dead(
        self,
        sn: str | None,
        topic: str,
        cause: str,
        detail: str,
        payload: bytes,
        *,
        sealed: bool = True,
    ) -> DeadLetter:
        self._drops.record(cause, sn or "-", detail)
        MESSAGES.labels("dead_letter").inc()
        return DeadLetter.of("mqtt", sn, topic, cause, detail, payload, sealed=sealed)

    async def _accept(self, sn: str, topic: str, payload: bytes) -> Item | None:
        if len(payload) > MAX_PAYLOAD_BYTES:
            detail = f"{len(payload)} bytes, over {MAX_PAYLOAD_BYTES}"
            return self._dead(sn, topic, "too_large", detail, payload)
        route = await self._routes.resolve(sn)
        if route is None:
            return self._dead(
                sn, topic, "unknown_sn", "no feed and no forwarder registration", payload
            )
        try:
            plaintext = await self._decrypt(sn, payload)
        except NotFound as e:
            return self._dead(sn, topic, "unknown_sn", e.detail, payload)
        except EnvelopeError as e:
            return self._dead(sn, topic, "undecryptable", str(e), payload)
        try:
            decoded = decode_batch(plaintext, time.time())
        except RecordError as e:
            return self._dead(sn, topic, e.cause, str(e), plaintext, sealed=False)
        if not decoded.series and not decoded.refused:
            MESSAGES.labels("empty").inc()
            return None
        refused = []
        for r in decoded.refused:
            # A refused record costs only itself: the others are stored beside its dead letter.
            self._drops.record(r.cause, sn, r.detail, r.count)
            refused.append(
                DeadLetter.of("mqtt", sn, topic, r.cause, r.detail, r.payload, sealed=False)
            )
        if not decoded.series:
            MESSAGES.labels("dead_letter").inc()
        return Accepted(route, decoded.series, topic, plaintext, refused=refused)

    async def _decrypt(self, sn: str, payload: bytes) -> bytes:
        key = await self._keys.key(sn)
        try:
            return unseal(key, sn, payload)
        except EnvelopeError:
            # The secret may have changed: ask provisioning again, at most once a minute.
            if not self._keys.may_refresh(sn):
                raise
        return unseal(await self._keys.key(sn), sn, payload)

    async def _presence(self, sn: str, payload: bytes) -> None:
        state = payload.strip().lower()
        if state not in (b"online", b"offline"):
            return
        await self._pool.execute(PRESENCE, sn, state == b"online")

    async def _write(self, queue: asyncio.Queue[tuple[Item, int]], ack: Ack) -> None:
        linger = self._settings.batch_linger_ms / 1000
        while True:
            batch = [await queue.get()]
            deadline = time.monotonic() + linger
            while len(batch) < self._settings.batch_messages:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                # Not asyncio.wait_for: on Python 3.11 it can swallow a cancellation that meets
                # the timeout, and a writer that outlives its lost connection stalls ingest (the
                # broker SIGKILL test met it). asyncio.timeout keeps the cancellation.
                try:
                    async with asyncio.timeout(remaining):
                        batch.append(await queue.get())
                except TimeoutError:
                    break
            count = await store_until_done(self._store, [i for i, _ in batch], self._drops)
            for _, tag in batch:
                await ack(tag)
                queue.task_done()
            MESSAGES.labels("stored").inc(
                sum(isinstance(i, Accepted) and bool(i.series) for i, _ in batch)
            )
            READINGS.inc(count)


async def store_until_done(store: PointStore, items: list[Item], drops: Drops) -> int:
    """Store ``items`` whatever it takes: a fault outside them is waited out; data the database
    refuses is split until the guilty message alone is dead-lettered. Returns points stored."""
    backoff = Backoff(cap=10.0)
    while True:
        accepted = [i for i in items if isinstance(i, Accepted)]
        # In the order they came: a message's refused records where the message stood.
        dead = [d for i in items for d in (i.refused if isinstance(i, Accepted) else [i])]
        try:
            return await store.write(accepted, dead)
        except Exception as e:
            if blames_the_data(e) and accepted:
                if len(items) > 1:
                    half = len(items) // 2
                    first = await store_until_done(store, items[:half], drops)
                    return first + await store_until_done(store, items[half:], drops)
                detail = f"{type(e).__name__}: {e}"
                guilty = accepted[0]
                drops.record("rejected_by_database", guilty.route.sn, detail)
                items = [guilty.dead_letter("rejected_by_database", detail), *guilty.refused]
                continue
            if not is_outside_fault(e):
                raise
            # Unacknowledged, the batch stays the broker's until it is committed here.
            log.warning("database unavailable; retrying batch", error=type(e).__name__)
            await asyncio.sleep(backoff.next_delay())


PRESENCE = """
INSERT INTO cluster.homebase_presence (homebase_sn, online, changed_at) VALUES ($1, $2, now())
ON CONFLICT (homebase_sn) DO UPDATE
   SET online = EXCLUDED.online,
       changed_at = CASE WHEN homebase_presence.online = EXCLUDED.online
                         THEN homebase_presence.changed_at ELSE now() END"""
