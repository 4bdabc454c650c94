"""Liveness and readiness probes, the same on every HTTP service."""

from __future__ import annotations

import msgspec
from litestar import get

from energy_platform.core.db.pool import check_database
from energy_platform.core.http.database import Database
from energy_platform.core.http.openapi import problems


class Health(msgspec.Struct):
    status: str


@get("/healthz", tags=["operations"], summary="The process is up")
async def healthz() -> Health:
    return Health("ok")


@get(
    "/readyz",
    tags=["operations"],
    summary="The database answers (else 503 problem JSON)",
    opt=problems(503),
)
async def readyz(pool: Database) -> Health:
    await check_database(pool)
    return Health("ready")
