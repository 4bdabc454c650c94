"""The data API as `serve api` runs it, plus one idle route returning 100 ready-made points:
the same server (EP_HTTP_SERVER), middleware and settings without the database, the limit the
data endpoint is held to."""

from __future__ import annotations

import asyncio
import os

from litestar import get

from energy_platform.api.app import create_app
from energy_platform.core.http.server import HttpService
from energy_platform.core.lifecycle import run_services
from energy_platform.core.logs import configure_logging
from energy_platform.core.settings import Settings

IDLE_POINTS = [(1_790_000_000 + 5 * i, 230.0 + i) for i in range(100)]


@get("/bench/idle", include_in_schema=False)
async def idle() -> list[tuple[int, float]]:
    return IDLE_POINTS


@get("/bench/pid", include_in_schema=False)
async def pid() -> int:
    """Which process answered: the benchmark waits until every one of several has."""
    return os.getpid()


def main() -> None:
    settings = Settings.from_env(os.environ)
    configure_logging(settings.log)
    app = create_app(settings)
    app.register(idle)
    app.register(pid)
    service = HttpService.configured("api", app, settings.http, settings.http.api_port)
    asyncio.run(run_services([service], shutdown_timeout=5))


if __name__ == "__main__":
    main()
