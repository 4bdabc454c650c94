"""An ASGI app served by uvicorn or granian as a platform service (several can share one process).

Both run inside the services' event loop, so ``serve all`` stays one process with one loop:
uvicorn as a Python server task, granian in its embedded mode (its HTTP handling runs in Rust
threads and hands each request to the app on this loop). EP_HTTP_SERVER chooses; the figures
behind the choice are in benchmarks/README.md and docs/decisions.md.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import structlog
import uvicorn
from granian.constants import HTTPModes, Interfaces, SSLProtocols
from granian.server.embed import Server as GranianServer
from granian.utils.proxies import wrap_asgi_with_proxy_headers
from litestar import Litestar

from energy_platform.core.settings import HttpServer, HttpSettings, TlsFiles

log = structlog.get_logger()
# Seconds open requests get to finish once the service is asked to stop.
GRACE = 5


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
        self,
        name: str,
        app: Litestar,
        host: str,
        port: int,
        *,
        tls: TlsFiles | None = None,
        server: HttpServer | None = None,
        reuse_port: bool = False,
    ) -> None:
        self.name = name
        self.url = f"{'https' if tls else 'http'}://{host}:{port}"
        self._app, self._host, self._port, self._tls = app, host, port, tls
        self._reuse_port = reuse_port
        # Without a choice, the platform's default server (one default: HttpSettings').
        server = server or HttpSettings().server
        self._serve = self._granian if server == "granian" else self._uvicorn

    @classmethod
    def configured(cls, name: str, app: Litestar, http: HttpSettings, port: int) -> HttpService:
        """``app`` on ``port`` as the settings say: their host, TLS files and server."""
        return cls(
            name, app, http.host, port, tls=http.tls, server=http.server, reuse_port=http.reuse_port
        )

    async def run(self, stop: asyncio.Event) -> None:
        log.info("listening", url=self.url)
        await self._serve(stop)

    async def _uvicorn(self, stop: asyncio.Event) -> None:
        config = uvicorn.Config(
            self._app,
            host=self._host,
            port=self._port,
            log_config=None,
            access_log=False,
            lifespan="on",
            # httptools (C) parses and writes a request in about half of h11's time: the idle
            # handler served 6,600 req/s against 3,600 (docs/scaling.md, the data endpoint's tail).
            http="httptools",
            timeout_graceful_shutdown=GRACE,
            server_header=False,
            ssl_certfile=self._tls.cert if self._tls else None,
            ssl_keyfile=self._tls.key if self._tls else None,
        )
        server = _Server(config)
        sockets = [self._shared_socket()] if self._reuse_port else None
        serving = asyncio.create_task(server.serve(sockets), name=f"{self.name}-uvicorn")
        stopping = asyncio.create_task(stop.wait(), name=f"{self.name}-stop")
        await asyncio.wait({serving, stopping}, return_when=asyncio.FIRST_COMPLETED)
        server.should_exit = True
        stopping.cancel()
        try:
            await serving
        except SystemExit as e:  # uvicorn exits the process when it cannot bind
            raise RuntimeError(f"{self.name}: HTTP server on {self.url} could not start") from e
        if not server.started and not stop.is_set():
            raise RuntimeError(f"{self.name}: HTTP server on {self.url} could not start")

    def _shared_socket(self) -> socket.socket:
        try:
            return shared_port_socket(self._host, self._port)
        except OSError as e:
            raise RuntimeError(f"{self.name}: HTTP server on {self.url} could not start") from e

    async def _granian(self, stop: asyncio.Event) -> None:
        server = GranianServer(
            # As uvicorn's default: X-Forwarded-For/-Proto count when the peer is a local proxy.
            wrap_asgi_with_proxy_headers(self._app, trusted_hosts="127.0.0.1"),
            address=self._host,
            port=self._port,
            interface=Interfaces.ASGI,  # with lifespan, as uvicorn's lifespan="on"
            http=HTTPModes.http1,
            websockets=False,
            log_enabled=False,  # its logger still propagates to ours; no config of its own
            ssl_cert=Path(self._tls.cert) if self._tls else None,
            ssl_key=Path(self._tls.key) if self._tls else None,
            ssl_protocol_min=SSLProtocols.tls12,  # as uvicorn's default context
        )
        server.workers_kill_timeout = GRACE
        serving = asyncio.create_task(server.serve(), name=f"{self.name}-granian")
        stopping = asyncio.create_task(stop.wait(), name=f"{self.name}-stop")
        try:
            await asyncio.wait({serving, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            if not serving.done():
                server.stop()  # type: ignore[no-untyped-call]  # granian leaves it unannotated
        try:
            await serving
        except OSError as e:  # the port is taken or the address is not ours
            raise RuntimeError(f"{self.name}: HTTP server on {self.url} could not start") from e
        if not stop.is_set():
            raise RuntimeError(f"{self.name}: HTTP server on {self.url} stopped by itself")


def shared_port_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` that other processes may bind too (SO_REUSEPORT):
    the kernel spreads new connections among them. Not listening yet: the server does that."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP by name: asyncio sets TCP_NODELAY only on sockets that say so, and without
    # it a response's head and body meet Nagle and the delayed ACK (40 ms a response).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock
