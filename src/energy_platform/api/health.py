"""Liveness and readiness probes, the same on every HTTP service."""

from __future__ import annotations

import msgspec
from litestar import get

from energy_platform.api.database import Database
from energy_platform.api.openapi import problems
from energy_platform.db.pool import check_database


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
