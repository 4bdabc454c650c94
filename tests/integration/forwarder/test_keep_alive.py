"""Keep-alive: a connection is reused only after a bodiless answer, to the address checked for
each request; anything else drops it unread. Real servers on loopback, no database."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from ipaddress import ip_network

import pytest

from energy_platform.engine.forwarding.destinations import RefusedDestination
from energy_platform.engine.forwarding.webhook import Connections, post

LOOPBACK = (ip_network("127.0.0.0/8"),)
HEADERS = {"Content-Type": "application/json", "Idempotency-Key": "k"}


class Server:
    def __init__(self, answer: bytes, close_after: bool) -> None:
        self.answer = answer
        self.close_after = close_after
        self.connections = 0
        self.requests = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                await reader.readexactly(length)
                self.requests += 1
                writer.write(self.answer)
                await writer.drain()
                if self.close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()


@asynccontextmanager
async def serving(answer: bytes, close_after: bool = False) -> AsyncIterator[tuple[Server, str]]:
    server = Server(answer, close_after)
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    try:
        yield server, f"http://127.0.0.1:{port}/in"
    finally:
        listener.close()


async def three_posts(url: str, connections: Connections) -> list[int]:
    out = []
    for _ in range(3):
        out.append(await post(url, b"{}", HEADERS, LOOPBACK, 5.0, connections))
        await asyncio.sleep(0.05)  # a server's close, if any, arrives in between
    return out


async def test_a_204_answer_keeps_the_connection_for_the_next_request() -> None:
    connections = Connections()
    async with serving(b"HTTP/1.1 204 No Content\r\nServer: t\r\n\r\n") as (server, url):
        assert await three_posts(url, connections) == [204, 204, 204]
        assert (server.connections, server.requests) == (1, 3)
    connections.close()


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
        b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n",
        b"HTTP/1.0 204 No Content\r\n\r\n",
        b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n",
    ],
)
async def test_an_answer_that_may_have_a_body_drops_the_connection(answer: bytes) -> None:
    connections = Connections()
    status = int(answer.split(b" ")[1])
    async with serving(answer) as (server, url):
        assert await three_posts(url, connections) == [status] * 3
        assert (server.connections, server.requests) == (3, 3)
    connections.close()


async def test_a_connection_the_server_closed_is_replaced_without_a_failed_attempt() -> None:
    connections = Connections()
    async with serving(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", close_after=True) as (
        server,
        url,
    ):
        assert await three_posts(url, connections) == [200, 200, 200]
        assert (server.connections, server.requests) == (3, 3)
    connections.close()


async def test_a_kept_connection_does_not_skip_the_destination_check() -> None:
    connections = Connections()
    async with serving(b"HTTP/1.1 204 No Content\r\n\r\n") as (server, url):
        assert await post(url, b"{}", HEADERS, LOOPBACK, 5.0, connections) == 204
        with pytest.raises(RefusedDestination):
            await post(url, b"{}", HEADERS, (), 5.0, connections)
        assert server.requests == 1
    connections.close()
