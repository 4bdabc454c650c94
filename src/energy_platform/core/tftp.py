"""A read-only TFTP server (RFC 1350 with the blksize and tsize options) as a platform service.

tftpy does the protocol; it is a blocking select loop, so it runs in a worker thread. Files never
come from the filesystem: every read request asks ``source`` (a coroutine run on the service's
event loop) for the bytes of a name, and ``None`` means "file not found". Write requests are
refused. tftpy serves from a root directory; it gets an empty private one that stays empty.
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
import threading
from collections.abc import Callable, Coroutine
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import Any, BinaryIO

import structlog
import tftpy

log = structlog.get_logger()

FileSource = Callable[[str], Coroutine[Any, Any, bytes | None]]
"""Bytes of a requested file name, or None when it is not served."""

LOOKUP_TIMEOUT = 10.0


class TftpService:
    """Serves ``source`` over TFTP on ``host:port`` until stopped.

    ``poll_interval`` bounds how long stopping takes (tftpy checks for it between selects) and is
    also tftpy's retransmission timeout.
    """

    def __init__(
        self,
        name: str,
        host: str,
        port: int,
        source: FileSource,
        *,
        resources: Callable[[], AbstractAsyncContextManager[Any]] | None = None,
        poll_interval: float = 1.0,
    ) -> None:
        self.name = name
        self.host = host
        self.port = port
        self._source = source
        self._resources = resources
        self._poll_interval = poll_interval

    async def run(self, stop: asyncio.Event) -> None:
        # tftpy logs each session at info and a refused name as an error; ours replace them.
        logging.getLogger("tftpy").setLevel(logging.CRITICAL)
        resources = self._resources() if self._resources else nullcontext()
        async with resources:
            with tempfile.TemporaryDirectory(prefix="ep-tftp-") as root:
                await self._serve(root, stop)

    async def _serve(self, root: str, stop: asyncio.Event) -> None:
        server = tftpy.TftpServer(
            root,
            dyn_file_func=self._opener(asyncio.get_running_loop()),
            upload_open=_refuse,
        )
        listening = asyncio.create_task(
            asyncio.to_thread(server.listen, self.host, self.port, self._poll_interval),
            name=f"{self.name}-tftp",
        )
        try:
            await _started(server.is_running, listening)
            log.info("listening", url=f"tftp://{self.host}:{self.port}")
            stopping = asyncio.create_task(stop.wait())
            await asyncio.wait({listening, stopping}, return_when=asyncio.FIRST_COMPLETED)
            stopping.cancel()
        finally:
            # Open transfers are dropped; a homebase retries its download after its next boot.
            server.stop(now=True)
            await listening

    def _opener(self, loop: asyncio.AbstractEventLoop) -> Callable[..., BinaryIO | None]:
        def open_file(name: str, raddress: str = "", rport: int = 0, **_: Any) -> BinaryIO | None:
            future = asyncio.run_coroutine_threadsafe(self._source(name), loop)
            try:
                content = future.result(timeout=LOOKUP_TIMEOUT)
            except Exception as e:
                log.warning("tftp lookup failed", file=name, error=type(e).__name__)
                return None
            if content is None:
                log.info("tftp file refused", file=name, client=raddress)
                return None
            log.info("tftp file served", file=name, client=raddress, size=len(content))
            return _memory_file(content)

        return open_file


def _memory_file(content: bytes) -> BinaryIO:
    """``content`` as a file with a descriptor, in memory.

    tftpy 0.8.7's server advisory-locks every file it serves (its ``flock`` option does not reach
    the server's sessions), which needs a real descriptor: an anonymous memory file has one.
    """
    if hasattr(os, "memfd_create"):
        file: BinaryIO = os.fdopen(os.memfd_create("ep-tftp", os.MFD_CLOEXEC), "w+b")
    else:  # not Linux
        file = tempfile.TemporaryFile()  # noqa: SIM115 - tftpy closes it when the session ends
    file.write(content)
    file.seek(0)
    return file


def _refuse(*_: Any) -> None:
    return None  # tftpy answers an upload with "access violation"


async def _started(running: threading.Event, listening: asyncio.Task[None]) -> None:
    """Return once tftpy's socket is bound; raise what stopped it if it failed first."""
    while not running.is_set():
        if listening.done():
            listening.result()  # raises the bind error
            raise RuntimeError("the TFTP server stopped before it listened")
        await asyncio.sleep(0.01)
