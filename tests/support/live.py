"""A client of ``GET /feeds/{id}/live`` for tests: the events as a browser's parser reads them
(text/event-stream), a client that connects and then reads nothing, and a homebase that
publishes what they follow."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import asyncpg
import httpx
import msgspec

from energy_platform.core.codec.format_v4 import HomebaseRecord
from energy_platform.devices.simulator.homebase import (
    SimulatedHomebase,
    data_topic,
    homebase_client,
)
from tests.support.http import http_client
from tests.support.platform import Platform, publish_as
from tests.support.services import eventually


@dataclass
class SseEvent:
    id: str | None
    event: str
    data: Any


class LiveStream:
    """An open live stream: its events in order, and the comment lines seen. Read by a task of
    its own, so that a test may wait for an event with a timeout without breaking the read."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.events: list[SseEvent] = []
        self.comments = 0
        self.last_id: str | None = None
        self._queue: asyncio.Queue[SseEvent | None] = asyncio.Queue()
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        name, data, seen_id = "message", [], None
        try:
            async for line in self.response.aiter_lines():
                if line == "":
                    if seen_id is not None:
                        self.last_id = seen_id
                    if data:
                        event = SseEvent(seen_id, name, msgspec.json.decode("\n".join(data)))
                        self.events.append(event)
                        self._queue.put_nowait(event)
                    name, data, seen_id = "message", [], None
                    continue
                key, _, value = line.partition(":")
                value = value.removeprefix(" ")
                if key == "":
                    self.comments += 1
                elif key == "id":
                    seen_id = value
                elif key == "event":
                    name = value
                elif key == "data":
                    data.append(value)
        except httpx.HTTPError:
            pass
        finally:
            self._queue.put_nowait(None)

    async def close(self) -> None:
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader

    async def next(self, within: float = 30.0) -> SseEvent | None:
        """The next event (an id alone moves ``last_id`` and is no event); None at the end
        (and ever after)."""
        async with asyncio.timeout(within):
            event = await self._queue.get()
        if event is None:
            self._queue.put_nowait(None)
        return event

    async def until(self, done: Any, within: float = 30.0) -> list[SseEvent]:
        """Events until ``done(events so far)`` holds; fails after ``within`` seconds."""
        got: list[SseEvent] = []
        async with asyncio.timeout(within):
            while not done(got):
                event = await self.next(within)
                assert event is not None, f"the stream ended after {got}"
                got.append(event)
        return got

    async def ended(self, within: float = 30.0) -> list[SseEvent]:
        """Read to the end of the stream (the server closed it); the events read on the way."""
        got: list[SseEvent] = []
        async with asyncio.timeout(within):
            while (event := await self.next(within)) is not None:
                got.append(event)
        return got


@asynccontextmanager
async def live(
    api: str, feed: str, token: str, *, last_id: str | None = None, **params: Any
) -> AsyncIterator[LiveStream]:
    """Follow ``feed`` live as ``token``; the response is checked to be a 200 event stream."""
    headers = {"Authorization": f"Bearer {token}"}
    if last_id is not None:
        headers["Last-Event-ID"] = last_id
    async with (
        http_client(base_url=api, timeout=httpx.Timeout(10, read=None)) as http,
        http.stream("GET", f"/feeds/{feed}/live", params=params, headers=headers) as response,
    ):
        if response.status_code != 200:
            await response.aread()
            raise AssertionError(f"{response.status_code}: {response.text}")
        assert response.headers["content-type"].startswith("text/event-stream")
        stream = LiveStream(response)
        try:
            yield stream
        finally:
            await stream.close()


def points_of(events: list[SseEvent], kind: str = "points") -> list[tuple[str, int, float]]:
    """Every (stream, time, value) of the ``kind`` events, in the order received."""
    return [
        (e.data["stream"], t, v) for e in events if e.event == kind for t, v in e.data["points"]
    ]


class SlowClient:
    """A client that asks for a live stream (or any streamed answer) over a socket with a small
    receive buffer and then reads nothing, until the test reads everything the server sent, to
    the close."""

    def __init__(self, sock: socket.socket, head: bytes) -> None:
        self._sock, self._head = sock, head
        self.raw = b""
        """The body as it came so far (chunked: its final chunk, if any, once read to the
        close)."""

    @classmethod
    async def open(cls, port: int, feed: str, token: str) -> SlowClient:
        """Connect and read the answer's head: from then on the server is sending events."""
        return await cls.get(port, f"/feeds/{feed}/live", token)

    @classmethod
    async def get(cls, port: int, path: str, token: str, last_id: str | None = None) -> SlowClient:
        """``GET path`` (with ``Last-Event-ID: last_id``), read up to the answer's head, then
        nothing more."""
        resume = "" if last_id is None else f"Last-Event-ID: {last_id}\r\n"

        def connect() -> SlowClient:
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.settimeout(30)
            sock.connect(("127.0.0.1", port))
            sock.sendall(
                f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"Authorization: Bearer {token}\r\n{resume}Connection: close\r\n\r\n".encode()
            )
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = sock.recv(1)
                assert chunk, "closed before the answer's head"
                head += chunk
            return cls(sock, head)

        return await asyncio.to_thread(connect)

    def close(self) -> None:
        """Go away without reading the rest."""
        self._sock.close()

    async def read_until(self, done: Callable[[bytes], bool], within: float = 60.0) -> bytes:
        """Read on (after what was read before) until ``done(the body so far, de-chunked)``
        holds; that body."""

        def read() -> bytes:
            deadline = time.monotonic() + within
            while not done(body := _dechunked(self.raw)):
                self._sock.settimeout(max(0.01, deadline - time.monotonic()))
                chunk = self._sock.recv(65536)
                assert chunk, "the server closed the stream first"
                self.raw += chunk
                if time.monotonic() > deadline:
                    raise TimeoutError("what the test waits for did not come")
            return body

        return await asyncio.to_thread(read)

    async def read_to_close(self, within: float = 60.0) -> bytes:
        """Everything until the server closes the connection (its body, de-chunked)."""

        def read() -> bytes:
            deadline = time.monotonic() + within
            parts = []
            try:
                while True:
                    self._sock.settimeout(max(0.01, deadline - time.monotonic()))
                    chunk = self._sock.recv(65536)
                    if not chunk:
                        return b"".join(parts)
                    parts.append(chunk)
                    if time.monotonic() > deadline:
                        raise TimeoutError("the server did not close the stream")
            finally:
                self._sock.close()

        self.raw += await asyncio.to_thread(read)
        head = self._head
        assert head.startswith(b"HTTP/1.1 200"), head
        return _dechunked(self.raw) if b"chunked" in head.lower() else self.raw


def _dechunked(body: bytes) -> bytes:
    out, rest = [], body
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out.append(rest[:size])
        rest = rest[size + 2 :]
    return b"".join(out)


class Home:
    """A paired homebase with a feed, publishing as the real one does."""

    def __init__(self, platform: Platform, sn: str, secret: bytes, feed: str) -> None:
        self.platform, self.sn, self.feed = platform, sn, feed
        self.device = SimulatedHomebase(sn, secret)
        self.secret = secret

    async def publish(self, t: int, phases: tuple[float, float, float]) -> None:
        """One message: the three phases' power (medium 1) at ``t``."""
        record = HomebaseRecord(4, t, 3, 1, 1, {"1": list(phases)})
        await publish_as(self.platform, self.sn, self.secret, self.device.encrypt([record]))

    async def publish_many(
        self, times: list[int], value: Callable[[int], float], per_message: int = 10
    ) -> None:
        """The three phases at ``times`` (phase 1 varies), ``per_message`` times a message, on
        one session, as fast as the broker acknowledges."""
        records = [HomebaseRecord(4, t, 3, 1, 1, {"1": [value(t), 2.0, 3.0]}) for t in times]
        mqtt = self.platform.settings.mqtt
        async with homebase_client(mqtt, self.sn, self.secret, will=False) as client:
            for n in range(0, len(records), per_message):
                message = self.device.encrypt(records[n : n + per_message])
                await client.publish(data_topic(self.sn, mqtt.topic_prefix), message, qos=1)


async def stored(db: asyncpg.Connection, home: Home, t: int) -> None:
    """Wait until ingest has stored the feed's points at ``t`` (the broker's ack comes first)."""

    async def there() -> bool:
        return bool(
            await db.fetchval(
                "SELECT count(*) FROM cluster.raw_points p JOIN cluster.streams s"
                " ON s.id = p.stream_id WHERE s.feed_id = $1 AND p.ts = to_timestamp($2)",
                int(home.feed),
                t,
            )
        )

    await eventually(there, within=30, every=0.05)
