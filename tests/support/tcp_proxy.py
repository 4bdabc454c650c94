"""A TCP relay to a real server that a test can cut and restore, as an outage would."""

from __future__ import annotations

import asyncio
import contextlib


class TcpProxy:
    def __init__(self, target_host: str, target_port: int, listen_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = listen_port
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", self.port)

    async def cut(self) -> None:
        """Refuse new connections and break the open ones."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # Known before the upstream connection is open: a cut meanwhile breaks this one too.
        # Joined only once connected, a relay accepted just before a cut outlived it and
        # carried on through the outage, and a test waiting for the outage's failures waited
        # in vain.
        self._writers.add(writer)
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            self._writers.discard(writer)
            return
        if writer not in self._writers:  # cut while it connected
            up_writer.transport.abort()
            return
        self._writers.add(up_writer)
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            self._writers -= {writer, up_writer}


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    writer.transport.abort()
