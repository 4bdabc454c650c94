"""``GET``/``POST /config``: the calling customer's delivery configuration."""

from __future__ import annotations

import httpx
from litestar import Controller, Request, get, post
from litestar.datastructures import State
from litestar.di import NamedDependency, Provide

from energy_platform.core.db.pool import Connection
from energy_platform.core.errors import InvalidInput, NotFound
from energy_platform.core.http.database import Database
from energy_platform.core.http.openapi import problems
from energy_platform.forwarder.destinations import (
    AllowedNetworks,
    RefusedDestination,
    resolve,
)
from energy_platform.forwarder.http import queries
from energy_platform.forwarder.http.auth import Customer, authenticate
from energy_platform.forwarder.http.schemas import (
    Destination,
    Filter,
    ForwarderConfig,
    checked_filters,
    decode_config,
    destination,
)

Authenticated = NamedDependency[Customer]


class ConfigController(Controller):
    path = "/config"
    dependencies = {"customer": Provide(authenticate)}  # noqa: RUF012 - Litestar's own convention
    tags = ["forwarder configuration"]  # noqa: RUF012

    @get(summary="The stored configuration (404 when none was posted)", opt=problems(404))
    async def read(self, customer: Authenticated, pool: Database) -> ForwarderConfig:
        async with pool.acquire() as conn:
            config = await _load(conn, customer.id)
        if config is None:
            raise NotFound("no configuration yet: POST /config first")
        return config

    @post(status_code=200, summary="Replace the configuration; answers the stored one")
    async def write(
        self,
        request: Request[object, object, State],
        customer: Authenticated,
        allowed_networks: NamedDependency[AllowedNetworks],
        pool: Database,
    ) -> ForwarderConfig:
        data = decode_config(await request.body())
        target = destination(data.url)
        await _public(target, allowed_networks)
        kind, filters = checked_filters(data)
        async with pool.acquire() as conn, conn.transaction():
            await conn.execute(
                queries.UPSERT_CONFIG,
                customer.id,
                data.interval,
                target.url,
                target.username,
                target.password,
                data.format,
                data.mode,
                kind,
            )
            await conn.execute(queries.DELETE_FILTERS, customer.id)
            await conn.executemany(
                queries.INSERT_FILTER,
                [(customer.id, n, f.medium, f.index, f.obis) for n, f in enumerate(filters)],
            )
            await conn.execute(queries.START_DELIVERIES, customer.id, data.interval)
            config = await _load(conn, customer.id)
        assert config is not None  # noqa: S101 - written just above, in this transaction
        return config


async def _public(target: Destination, allowed: AllowedNetworks) -> None:
    """400 unless the host is, and resolves only to, public or allowed addresses."""
    url = httpx.URL(target.url)
    try:
        port = url.port or (443 if url.scheme == "https" else 80)
        await resolve(url.raw_host.decode("ascii"), port, allowed.networks)
    except RefusedDestination as e:
        raise InvalidInput(f"url: {e}", field="url") from None


async def _load(conn: Connection, customer_id: int) -> ForwarderConfig | None:
    row = await conn.fetchrow(queries.CONFIG, customer_id)
    if row is None:
        return None
    filters = [
        Filter(f["medium"], f["indexes"], f["obis"])
        for f in await conn.fetch(queries.FILTERS, customer_id)
    ]
    url = Destination(row["url"], row["username"], row["password"]).with_credentials()
    kind = row["filter_list"]
    return ForwarderConfig(
        interval=row["interval_minutes"],
        url=url,
        format=row["format"],
        mode=row["mode"],
        allow_list=filters if kind == "allow" else None,
        deny_list=filters if kind == "deny" else None,
    )
