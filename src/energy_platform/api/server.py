"""An ASGI app served by uvicorn as a platform service (several can share one process)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager

import structlog
import uvicorn
from litestar import Litestar

from energy_platform.settings import TlsFiles

log = structlog.get_logger()


class _Server(uvicorn.Server):
    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        # Signals belong to run_services, which stops every service, not just this server.
        yield


class HttpService:
    """Serves ``app`` on ``host:port`` until stopped; open requests get a grace period.

    With ``tls`` (``EP_HTTP_TLS_CERT``/``_KEY``) it speaks HTTPS only on that port.
    """

    def __init__(
        self, name: str, app: Litestar, host: str, port: int, *, tls: TlsFiles | None = None
    ) -> None:
        self.name = name
        self.url = f"{'https' if tls else 'http'}://{host}:{port}"
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_config=None,
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=5,
            server_header=False,
            ssl_certfile=tls.cert if tls else None,
            ssl_keyfile=tls.key if tls else None,
        )
        self._server = _Server(config)

    async def run(self, stop: asyncio.Event) -> None:
        log.info("listening", url=self.url)
        serving = asyncio.create_task(self._server.serve(), name=f"{self.name}-uvicorn")
        stopping = asyncio.create_task(stop.wait(), name=f"{self.name}-stop")
        await asyncio.wait({serving, stopping}, return_when=asyncio.FIRST_COMPLETED)
        self._server.should_exit = True
        stopping.cancel()
        try:
            await serving
        except SystemExit as e:  # uvicorn exits the process when it cannot bind
            raise RuntimeError(f"{self.name}: HTTP server on {self.url} could not start") from e
        if not self._server.started and not stop.is_set():
            raise RuntimeError(f"{self.name}: HTTP server on {self.url} could not start")
