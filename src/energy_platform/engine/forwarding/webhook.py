"""One delivery request: POST the body, read the status line, and no body, ever.

Not a general HTTP client on purpose: the forwarder needs only the status code, so it reads
the first line of the answer (at most ``STATUS_LINE_LIMIT`` bytes): no body is read or
decompressed, whatever the customer's server sends. Each request connects to the address
``destinations.resolve`` checked for it, or reuses an idle connection made earlier to that same
checked address (``Connections``): a connection is kept only after an answer that has no body
by definition (204, or a 2xx with ``Content-Length: 0``), whose header block is then read up to
``HEADERS_LIMIT`` bytes to find where the answer ends. Any other answer drops the connection
unread.
"""

from __future__ import annotations

import asyncio
import base64
import re
import ssl
import time
from collections.abc import Sequence

import httpx

from energy_platform.engine.forwarding.destinations import resolve
from energy_platform.settings import IPNetwork

STATUS_LINE_LIMIT = 1024
HEADERS_LIMIT = 4096
STATUS_LINE = re.compile(rb"HTTP/1\.([01]) ([0-9]{3})(?: [^\r\n]*)?\r?\n")
TLS = ssl.create_default_context()
# Kept short: an idle connection the server has closed costs a second connection attempt, and
# common servers close idle connections after 5 s (uvicorn) or more.
IDLE_SECONDS = 2.0
# A budget of its own for the header block of a bodiless answer: its status is already known
# and must not be turned into a timeout by a slow header block (the connection is dropped).
HEADERS_SECONDS = 0.5

Destination = tuple[str, int, bool, str]
"""(checked address, port, TLS, host name): connections are reused only within one."""
Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class BadResponse(Exception):
    """The answer does not start with an HTTP/1.x status line."""


class StaleConnection(Exception):
    """A reused connection ended before any byte of an answer: the server had closed it."""


def basic_auth(username: str, password: str | None) -> str:
    token = base64.b64encode(f"{username}:{password or ''}".encode()).decode("ascii")
    return f"Basic {token}"


class Connections:
    """Idle keep-alive connections by checked destination, each kept ``IDLE_SECONDS``."""

    def __init__(self, per_destination: int = 64) -> None:
        self._per_destination = per_destination
        self._idle: dict[Destination, list[tuple[float, Stream]]] = {}
        self._swept = time.monotonic()

    def take(self, destination: Destination) -> Stream | None:
        idle = self._idle.get(destination)
        now = time.monotonic()
        while idle:
            since, (reader, writer) = idle.pop()
            if now - since < IDLE_SECONDS and _open(reader, writer):
                return reader, writer
            writer.transport.abort()
        return None

    def give(self, destination: Destination, stream: Stream) -> None:
        idle = self._idle.setdefault(destination, [])
        if len(idle) >= self._per_destination:
            stream[1].transport.abort()
        else:
            idle.append((time.monotonic(), stream))
        self._sweep()

    def close(self) -> None:
        for idle in self._idle.values():
            for _, (_, writer) in idle:
                writer.transport.abort()
        self._idle.clear()

    def _sweep(self) -> None:
        """Close the connections idle too long (at most once a second)."""
        now = time.monotonic()
        if now - self._swept < 1.0:
            return
        self._swept = now
        for destination, idle in list(self._idle.items()):
            keep = [(since, s) for since, s in idle if now - since < IDLE_SECONDS]
            for since, (_, writer) in idle:
                if now - since >= IDLE_SECONDS:
                    writer.transport.abort()
            if keep:
                self._idle[destination] = keep
            else:
                del self._idle[destination]


def _open(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
    return not (reader.at_eof() or writer.transport.is_closing())


async def post(
    url: str,
    body: bytes,
    headers: dict[str, str],
    allowed: Sequence[IPNetwork],
    time_limit: float,
    connections: Connections | None = None,
) -> int:
    """POST ``body`` to ``url`` within ``time_limit`` seconds and answer the status code.

    Raises RefusedDestination, BadResponse, OSError or TimeoutError. With ``connections``,
    a bodiless answer's connection is kept there for the next request to the same address."""
    target = httpx.URL(url)
    name = target.raw_host.decode("ascii")  # IDNA-encoded, as DNS and the Host header want it
    secure = target.scheme == "https"
    port = target.port or (443 if secure else 80)
    host = f"[{name}]" if ":" in name else name
    if target.port is not None:
        host = f"{host}:{target.port}"
    lines = [
        f"POST {target.raw_path.decode('ascii')} HTTP/1.1",
        f"Host: {host}",
        "User-Agent: energy-platform-forwarder",
        f"Content-Length: {len(body)}",
        *(() if connections is not None else ("Connection: close",)),
        *(f"{name}: {value}" for name, value in headers.items()),
    ]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
    async with asyncio.timeout(time_limit):
        # Checked at every request, on the address the name resolves to now.
        address = await resolve(name, port, allowed)
        destination = (address, port, secure, name)
        stream = connections.take(destination) if connections is not None else None
        if stream is not None:
            try:
                status, http11 = await _exchange(stream, request, reused=True)
            except (StaleConnection, ConnectionError):
                stream[1].transport.abort()
                stream = None
        if stream is None:
            stream = await asyncio.open_connection(
                address,
                port,
                ssl=TLS if secure else None,
                server_hostname=name if secure else None,
                limit=HEADERS_LIMIT,
            )
            try:
                status, http11 = await _exchange(stream, request, reused=False)
            except BaseException:
                stream[1].transport.abort()
                raise
    if connections is not None and http11 and await _bodiless(stream[0], status):
        connections.give(destination, stream)
    else:
        # Nothing more is read: the connection is dropped, not drained.
        stream[1].transport.abort()
    return status


async def _exchange(stream: Stream, request: bytes, reused: bool) -> tuple[int, bool]:
    """Send the request, read the status line: (status, whether the answer is HTTP/1.1)."""
    reader, writer = stream
    writer.write(request)
    await writer.drain()
    try:
        line = await reader.readuntil(b"\n")
    except asyncio.IncompleteReadError as e:
        if reused and not e.partial:
            raise StaleConnection from None
        raise BadResponse from None
    except asyncio.LimitOverrunError:
        raise BadResponse from None
    match = STATUS_LINE.fullmatch(line) if len(line) <= STATUS_LINE_LIMIT else None
    if match is None:
        raise BadResponse
    return int(match.group(2)), match.group(1) == b"1"


async def _bodiless(reader: asyncio.StreamReader, status: int) -> bool:
    """Whether the answer ends with its header block, which is then read (at most
    ``HEADERS_LIMIT`` bytes, within ``HEADERS_SECONDS``): a 204, or a 2xx with
    ``Content-Length: 0``, without ``Connection: close``."""
    if not 200 <= status < 300:
        return False
    fields: dict[bytes, bytes] = {}
    read = 0
    try:
        async with asyncio.timeout(HEADERS_SECONDS):
            while (line := await reader.readuntil(b"\n")).strip():
                read += len(line)
                if read > HEADERS_LIMIT:
                    return False
                field, colon, value = line.partition(b":")
                if colon:
                    fields[field.strip().lower()] = value.strip().lower()
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, OSError):
        return False
    if b"close" in fields.get(b"connection", b"") or b"transfer-encoding" in fields:
        return False
    return status == 204 or fields.get(b"content-length") == b"0"
