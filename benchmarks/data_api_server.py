"""The data API as `serve api` runs it, plus one idle route returning 100 ready-made points:
the same server (EP_HTTP_SERVER), middleware and settings without the database, the limit the
data endpoint is held to; the process's garbage-collection pauses (`/bench/gc`) and the data
requests' own time in the server (`/bench/latency`)."""

from __future__ import annotations

import asyncio
import gc
import os
import statistics
import time
from array import array
from typing import Any

from litestar import get
from litestar.enums import ScopeType
from litestar.types import ASGIApp, Receive, Scope, Send

from energy_platform.api.app import create_app
from energy_platform.core.http.server import HttpService
from energy_platform.core.lifecycle import freeze_startup_objects, run_services
from energy_platform.core.logs import configure_logging
from energy_platform.core.settings import Settings

IDLE_POINTS = [(1_790_000_000 + 5 * i, 230.0 + i) for i in range(100)]


@get("/bench/idle", include_in_schema=False)
async def idle() -> list[tuple[int, float]]:
    return IDLE_POINTS


class GcPauses:
    """How long the process's garbage collections stopped its event loop: a full collection of
    an unfrozen heap took 24-184 ms here, longer than the data endpoint's p99 goal."""

    def __init__(self) -> None:
        self._started = 0.0
        self.longest_ms = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.longest_ms = max(self.longest_ms, (time.perf_counter() - self._started) * 1000)


PAUSES = GcPauses()


@get("/bench/gc", include_in_schema=False)
async def gc_pauses() -> dict[str, float]:
    """The longest pause since the last call."""
    answer = {"longest_ms": PAUSES.longest_ms}
    PAUSES.longest_ms = 0.0
    return answer


class ServerTimes:
    """Each data request's time in the app (its ASGI call, as the platform's own metrics time
    it), without the time on the wire: wrk's figure adds that, and its correction for
    coordinated omission. A flat array keeps nothing alive for the GC to walk."""

    def __init__(self) -> None:
        self.ms = array("d")

    def around(self, app: ASGIApp) -> ASGIApp:
        async def timed(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != ScopeType.HTTP or not scope["path"].startswith("/feeds/"):
                await app(scope, receive, send)
                return
            started = time.perf_counter()
            try:
                await app(scope, receive, send)
            finally:
                self.ms.append((time.perf_counter() - started) * 1000)

        return timed


TIMES = ServerTimes()


@get("/bench/latency", include_in_schema=False)
async def server_latency() -> dict[str, float]:
    """The data requests' p99 in the app since the last call (0 for fewer than two)."""
    times, TIMES.ms = TIMES.ms, array("d")
    return {"p99_ms": statistics.quantiles(times, n=100)[98] if len(times) > 1 else 0.0}


@get("/bench/pid", include_in_schema=False)
async def pid() -> int:
    """Which process answered: the benchmark waits until every one of several has."""
    return os.getpid()


def main() -> None:
    settings = Settings.from_env(os.environ)
    configure_logging(settings.log)
    app = create_app(settings)
    for handler in (idle, pid, gc_pauses, server_latency):
        app.register(handler)
    app.asgi_handler = TIMES.around(app.asgi_handler)
    service = HttpService.configured("api", app, settings.http, settings.http.api_port)
    freeze_startup_objects()  # as `serve` does
    gc.callbacks.append(PAUSES)
    asyncio.run(run_services([service], shutdown_timeout=5))


if __name__ == "__main__":
    main()
