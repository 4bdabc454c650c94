"""The socket several API processes share (EP_HTTP_REUSE_PORT, docs/scaling.md)."""

from __future__ import annotations

import asyncio
import socket

from energy_platform.core.http.server import shared_port_socket
from tests.support.services import free_port


async def test_connections_on_a_shared_port_send_without_delay() -> None:
    # Without TCP_NODELAY a response's head and body wait for the client's delayed ACK: every
    # response then took 40 ms more, and two processes served a quarter of what one did.
    port = free_port()
    accepted: asyncio.Future[asyncio.StreamWriter] = asyncio.get_running_loop().create_future()

    async def on_connection(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.set_result(writer)

    first, second = shared_port_socket("127.0.0.1", port), shared_port_socket("127.0.0.1", port)
    server = await asyncio.start_server(on_connection, sock=first)
    try:
        _, client = await asyncio.open_connection("127.0.0.1", port)
        served = (await asyncio.wait_for(accepted, 5)).get_extra_info("socket")
        assert served.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
        client.close()
    finally:
        server.close()
        second.close()
        await server.wait_closed()
