"""``GET /`` (the page) and ``/static/...`` (its modules, styles and uPlot), outside the schema."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from types import MappingProxyType

import structlog
from litestar import Router, get
from litestar.datastructures import CacheControlHeader
from litestar.response import File
from litestar.static_files import create_static_files_router
from litestar.types import ControllerRouterHandler

STATIC = Path(str(resources.files("energy_platform.api.dashboard"))) / "static"
UPLOT = STATIC / "vendor" / "uplot" / "uPlot.esm.js"
log = structlog.get_logger()

# The page talks only to this origin; notification HTML is sanitised by the page, and no inline
# script runs even if some slipped through. uPlot positions its elements with inline styles.
SECURITY_HEADERS = MappingProxyType(
    {
        "Content-Security-Policy": (
            "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
            "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
            "form-action 'none'; frame-ancestors 'none'"
        ),
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
    }
)
# Revalidate every time (ETag / Last-Modified): an upgraded platform serves its new page at once.
REVALIDATE = CacheControlHeader(no_cache=True)


@get("/", include_in_schema=False, cache_control=REVALIDATE)
async def page() -> File:
    return File(
        STATIC / "index.html",
        content_disposition_type="inline",
        media_type="text/html; charset=utf-8",
        headers=dict(SECURITY_HEADERS),
    )


def dashboard_routes() -> list[ControllerRouterHandler]:
    """The page and its static files, for the data API's app."""
    if not UPLOT.is_file():
        # The API works without it; the page then says what is missing.
        log.warning("the page's chart library is missing: run make setup", path=str(UPLOT))
    static: Router = create_static_files_router(
        path="/static",
        directories=[STATIC],
        name="dashboard-static",
        include_in_schema=False,
        cache_control=REVALIDATE,
    )
    return [page, static]
