"""What every HTTP service shares: probes, metrics, OpenAPI, problem JSON and the database pool."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import msgspec
from litestar import Litestar
from litestar.openapi import OpenAPIConfig
from litestar.types import ControllerRouterHandler

from energy_platform.core.db.backups import backup_age
from energy_platform.core.db.pool import create_pool
from energy_platform.core.gauges import Watch
from energy_platform.core.http.database import POOL
from energy_platform.core.http.health import healthz, readyz
from energy_platform.core.http.metrics import http_metrics
from energy_platform.core.http.openapi import Authentication, document_problems
from energy_platform.core.http.problems import EXCEPTION_HANDLERS
from energy_platform.core.http.schema_page import schema_assets, schema_page
from energy_platform.core.http.watch import metrics_controller
from energy_platform.core.settings import Settings


def build_app(
    *,
    name: str,
    title: str,
    settings: Settings,
    route_handlers: Sequence[ControllerRouterHandler],
    description: str = "",
    authenticating: Mapping[str, Authentication] | None = None,
    stateless_queries: bool = False,
    lifespan: Sequence[Callable[[Litestar], AbstractAsyncContextManager[None]]] = (),
    read_replica: bool = False,
    watches: Sequence[Watch] = (),
    session: Mapping[str, str] | None = None,
) -> Litestar:
    """A Litestar app for service ``name`` with the platform's common parts.

    ``authenticating`` names the dependencies that authenticate a caller, with their scheme and
    the statuses they answer (``{"caller": bearer(...)}``): the OpenAPI document lists them on
    every operation that uses one (see ``openapi.document_problems``).
    ``stateless_queries``: see :func:`create_pool`. Handlers get the pool as the dependency
    ``pool`` (``core/http/database.py``). ``lifespan``: the app's own resources, opened after the
    pool. ``read_replica``: the dependency ``reads`` is a pool on ``EP_DATABASE_READ_URL`` when
    that is set (else it is ``pool``). ``watches``: the service's gauges that only the
    database knows, computed at each scrape of ``/metrics`` (``core/http/watch.py``), besides the
    backup age every service reports. ``session``: PostgreSQL settings of every connection of
    its pools (see :func:`create_pool`).
    """

    @asynccontextmanager
    async def database(app: Litestar) -> AsyncIterator[None]:
        app.state.db = await create_pool(
            settings.database, stateless_queries=stateless_queries, session=session
        )
        replica = settings.database.read_url if read_replica else ""
        app.state.read_db = app.state.db
        try:
            if replica:
                replica_settings = msgspec.structs.replace(settings.database, url=replica)
                app.state.read_db = await create_pool(
                    replica_settings, stateless_queries=stateless_queries, session=session
                )
            yield
        finally:
            if app.state.read_db is not app.state.db:
                await app.state.read_db.close()
            await app.state.db.close()

    metrics = metrics_controller([backup_age, *watches])
    handlers: list[Any] = [healthz, readyz, metrics, schema_assets(), *route_handlers]
    app = Litestar(
        route_handlers=handlers,
        lifespan=[database, *lifespan],
        dependencies=POOL,
        middleware=[http_metrics(name)],
        exception_handlers=EXCEPTION_HANDLERS,
        openapi_config=OpenAPIConfig(
            title=title,
            version="1",
            description=description,
            path="/schema",
            render_plugins=[schema_page()],
        ),
        request_max_body_size=settings.http.max_body_bytes,
        state=None,
        debug=False,
        logging_config=None,  # the platform configures logging once, in configure_logging
    )
    document_problems(app, authenticating or {})
    return app
