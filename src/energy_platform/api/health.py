"""Liveness and readiness probes, the same on every HTTP service."""

from __future__ import annotations

import asyncpg
import msgspec
from litestar import get
from litestar.datastructures import State

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
async def readyz(state: State) -> Health:
    pool: asyncpg.Pool = state.db
    await check_database(pool)
    return Health("ready")
