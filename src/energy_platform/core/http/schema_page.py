"""The ``/schema`` page: Swagger UI served by the service itself, so it works offline.

Litestar's render plugins load their scripts, styles and favicon from a CDN by default; a
machine without internet then shows a blank page. The assets come from the installed
``openapi-ui-bundles`` package (Swagger UI 5, which reads OpenAPI 3.1) under ``/schema/assets``.
"""

from __future__ import annotations

from litestar.openapi.plugins import SwaggerRenderPlugin
from litestar.router import Router
from litestar.static_files import create_static_files_router
from openapi_ui_bundles import swagger_ui

ASSETS = "/schema/assets"


def schema_page() -> SwaggerRenderPlugin:
    """Swagger UI at ``/schema`` (and ``/schema/swagger``), every asset from ``ASSETS``."""
    return SwaggerRenderPlugin(
        path=["/", "/swagger"],
        js_url=f"{ASSETS}/swagger-ui-bundle.js",
        css_url=f"{ASSETS}/swagger-ui.css",
        standalone_preset_js_url=f"{ASSETS}/swagger-ui-standalone-preset.js",
        favicon=f"<link rel='icon' type='image/png' href='{ASSETS}/favicon-32x32.png'>",
    )


def schema_assets() -> Router:
    """The Swagger UI files of the installed package."""
    return create_static_files_router(
        path=ASSETS,
        directories=[swagger_ui.static_path],
        include_in_schema=False,
        cache_control=None,
        name="schema-assets",
    )
