"""One delivery request: POST the body, read the status line, close.

Not a general HTTP client on purpose: the forwarder needs only the status code, so it reads
the first line of the answer (at most ``STATUS_LINE_LIMIT`` bytes) and nothing else: no
headers, no body, nothing decompressed, whatever the customer's server sends. Each request has
its own connection, made to the address ``destinations.resolve`` checked.
"""

from __future__ import annotations

import asyncio
import base64
import re
import ssl
from collections.abc import Sequence

import httpx

from energy_platform.core.settings import IPNetwork
from energy_platform.forwarder.destinations import resolve

STATUS_LINE_LIMIT = 1024
STATUS_LINE = re.compile(rb"HTTP/1\.[01] ([0-9]{3})(?: [^\r\n]*)?\r?\n")
TLS = ssl.create_default_context()


class BadResponse(Exception):
    """The answer does not start with an HTTP/1.x status line."""


def basic_auth(username: str, password: str | None) -> str:
    token = base64.b64encode(f"{username}:{password or ''}".encode()).decode("ascii")
    return f"Basic {token}"


async def post(
    url: str,
    body: bytes,
    headers: dict[str, str],
    allowed: Sequence[IPNetwork],
) -> int:
    """POST ``body`` to ``url`` and answer the status code.

    Raises RefusedDestination, BadResponse or OSError; the caller bounds the time."""
    target = httpx.URL(url)
    name = target.raw_host.decode("ascii")  # IDNA-encoded, as DNS and the Host header want it
    secure = target.scheme == "https"
    port = target.port or (443 if secure else 80)
    address = await resolve(name, port, allowed)
    reader, writer = await asyncio.open_connection(
        address,
        port,
        ssl=TLS if secure else None,
        server_hostname=name if secure else None,
        limit=STATUS_LINE_LIMIT,
    )
    try:
        host = f"[{name}]" if ":" in name else name
        if target.port is not None:
            host = f"{host}:{target.port}"
        lines = [
            f"POST {target.raw_path.decode('ascii')} HTTP/1.1",
            f"Host: {host}",
            "User-Agent: energy-platform-forwarder",
            f"Content-Length: {len(body)}",
            "Connection: close",
            *(f"{name}: {value}" for name, value in headers.items()),
        ]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        await writer.drain()
        try:
            line = await reader.readuntil(b"\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            raise BadResponse from None
        match = STATUS_LINE.fullmatch(line)
        if match is None:
            raise BadResponse
        return int(match.group(1))
    finally:
        # Nothing more is read: the connection is dropped, not drained.
        writer.transport.abort()
