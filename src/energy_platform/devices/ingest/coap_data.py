"""The CoAP data server: ``POST /data/{sn}``, ``POST /events/{sn}`` and ``GET /clock``.

A device may send when provisioning lists it and assigns it to this data server (else 4.05,
the spec's code) and the cluster has a feed for it (its serial number in ``homebase_sn``), or a
forwarder registration. The data server asks provisioning's API whether a device is assigned to
it (``GET /api/coap-device/{sn}/assignment/``, docs/provisioning.md#cluster-endpoints) and keeps
the answers, unknown devices included, in a bounded cache for ``EP_DEVICES_ROUTE_CACHE_SECONDS``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Literal, NoReturn

import aiocoap
import aiocoap.error
import aiocoap.resource
import msgspec
import structlog

from energy_platform.core.cache import BoundedCache
from energy_platform.core.coap import (
    JSON,
    CoapSite,
    PathResource,
    Resource,
    error_code,
    json_response,
)
from energy_platform.core.codec.format_v4 import RecordError, check_time, decode_coap
from energy_platform.core.db.pool import PoolHolder
from energy_platform.core.errors import (
    BadOption,
    InvalidInput,
    NotFound,
    PayloadTooLarge,
    PlatformError,
    TooManyRequests,
    Unauthorized,
    Unavailable,
)
from energy_platform.core.faults import is_outside_fault
from energy_platform.core.http.clients import http_client
from energy_platform.core.ratelimit import TokenBuckets
from energy_platform.core.serials import checked_serial
from energy_platform.core.settings import Settings
from energy_platform.devices.ingest.drops import DeadLetter, Drops
from energy_platform.devices.ingest.routes import Route, RouteTable
from energy_platform.devices.ingest.store import Accepted, PointStore
from energy_platform.pairing.provisioning_client import ProvisioningClient

log = structlog.get_logger()
PROVISIONING_TIMEOUT = 5.0
Assignment = Literal["here", "elsewhere", "unknown"]

INSERT_EVENT = """
INSERT INTO cluster.device_events (device_sn, ts, event, phases)
VALUES ($1, to_timestamp($2), $3, $4)
ON CONFLICT (device_sn, ts, event) DO NOTHING"""


class PowerChange(msgspec.Struct, forbid_unknown_fields=False):
    timestamp: int
    event: Literal["POWER_CHANGE"]
    phases: tuple[bool, bool, bool]


class Clock(msgspec.Struct):
    time: int


_power_change = msgspec.json.Decoder(PowerChange)


class DataServer:
    """What the three resources share: who may send here, and where their data goes."""

    def __init__(self, settings: Settings) -> None:
        self.database = PoolHolder(settings.database)
        ingest = settings.devices
        self._cluster = settings.pairing
        self._provisioning: ProvisioningClient | None = None
        # Unknown devices are cached too: a flood of made-up serial numbers costs provisioning
        # one request per number and cache lifetime, not one per datagram.
        self._assignments: BoundedCache[str, Assignment] = BoundedCache(
            ingest.cache_size, ingest.route_cache_seconds
        )
        self._address = _own_address(settings)
        self._route_ttl = ingest.route_cache_seconds
        self._cache_size = ingest.cache_size
        self._routes: RouteTable | None = None
        self._store: PointStore | None = None
        self.drops = Drops(ingest.cache_size)
        self.max_body_bytes = ingest.coap_max_body_bytes
        self._rate = TokenBuckets(ingest.coap_requests_per_minute, ingest.coap_burst)

    async def authorised_route(self, raw_sn: str) -> Route:
        sn = checked_serial(raw_sn)
        if not self._rate.take(sn):
            raise TooManyRequests(f"{sn} sends faster than its limit")
        pool = self.database.pool
        assignment = await self._assignment(sn)
        if assignment == "unknown":
            raise NotFound(f"no CoAP device has serial number {sn}")
        if assignment == "elsewhere":
            raise Unauthorized(f"{sn} is assigned to another data server")
        if self._routes is None:
            self._routes = RouteTable(pool, self._route_ttl, self._cache_size)
        route = await self._routes.resolve(sn)
        if route is None:
            raise Unauthorized(f"{sn} has no feed on this cluster")
        return route

    async def _assignment(self, sn: str) -> Assignment:
        known = self._assignments.get(sn)
        if known is not None:
            return known
        if self._provisioning is None:
            raise Unavailable("the data server is not running")
        try:
            here = await self._provisioning.coap_assigned(sn, *self._address)
            assignment: Assignment = "here" if here else "elsewhere"
        except NotFound:
            assignment = "unknown"
        self._assignments.put(sn, assignment)
        return assignment

    @asynccontextmanager
    async def opened(self) -> AsyncIterator[None]:
        """The database pool and the HTTP client to provisioning, while the server runs."""
        async with self.database.opened(), http_client(timeout=PROVISIONING_TIMEOUT) as http:
            self._provisioning = ProvisioningClient(self._cluster, http)
            try:
                yield
            finally:
                self._provisioning = None

    @property
    def store(self) -> PointStore:
        if self._store is None:
            self._store = PointStore(self.database.pool)
        return self._store


Handler = Callable[[DataServer, Route, bytes], Awaitable[None]]


def add_data_resources(site: CoapSite, settings: Settings) -> None:
    """Add the data server's resources to ``site``."""
    server = DataServer(settings)
    site.add(("data",), _DeviceResource(server, _store_data), needs=server.opened)
    site.add(("events",), _DeviceResource(server, _store_event))
    site.add(("clock",), _ClockResource())


async def _store_data(server: DataServer, route: Route, payload: bytes) -> None:
    try:
        series = decode_coap(payload, time.time())
    except RecordError as e:
        await _refuse(server, route, "/data", e, payload)
    accepted = Accepted(route, series, f"/data/{route.sn}", payload, "coap")
    await server.store.write([accepted])


async def _store_event(server: DataServer, route: Route, payload: bytes) -> None:
    try:
        event = _power_change.decode(payload)
        check_time(event.timestamp, time.time())
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        await _refuse(server, route, "/events", RecordError("invalid_event", str(e)), payload)
    except RecordError as e:
        await _refuse(server, route, "/events", e, payload)
    await server.database.pool.execute(
        INSERT_EVENT, route.sn, event.timestamp, event.event, list(event.phases)
    )


async def _refuse(
    server: DataServer, route: Route, path: str, error: RecordError, payload: bytes
) -> NoReturn:
    """Count and keep a refused request as a dead letter, then answer 4.00."""
    server.drops.record(error.cause, route.sn, str(error))
    letter = DeadLetter.of(
        "coap", route.sn, f"{path}/{route.sn}", error.cause, str(error), payload, sealed=False
    )
    await server.store.write([], [letter])
    raise InvalidInput(str(error))


def _own_address(settings: Settings) -> tuple[str, int]:
    configured = settings.devices.coap_data_server
    if configured:
        host, _, port = configured.rpartition(":")
        return host, int(port)
    return settings.devices.host, settings.devices.coap_port


class _DeviceResource(PathResource):
    """``POST /{data|events}/{sn}``: 2.04 with no payload, or the error's own code."""

    def __init__(self, server: DataServer, handle: Handler) -> None:
        super().__init__()
        self._server = server
        self._handle = handle

    async def needs_blockwise_assembly(self, request: aiocoap.Message) -> bool:
        # Refuse a block-wise upload as soon as it announces (Size1) or reaches the cap, so
        # that no device makes the server assemble an unbounded body.
        block1, cap = request.opt.block1, self._server.max_body_bytes
        if block1 is not None and (
            (request.opt.size1 or 0) > cap or block1.start + len(request.payload) > cap
        ):
            raise aiocoap.error.RequestEntityTooLarge()
        return True

    async def render_post(self, request: aiocoap.Message) -> aiocoap.Message:
        try:
            await self._serve(request)
        except Exception as e:
            error = e
            if not isinstance(error, PlatformError):
                if not is_outside_fault(error):
                    raise
                # The database is away: 5.03, and the device sends again later.
                log.warning("coap data not stored; database unavailable", error=type(e).__name__)
                error = Unavailable("the database is unavailable")
            if error.status >= 500:
                log.warning("coap request failed", error=error.detail)
            return aiocoap.Message(code=error_code(error))
        return aiocoap.Message(code=aiocoap.CHANGED)

    async def _serve(self, request: aiocoap.Message) -> None:
        path = request.opt.uri_path
        if len(path) != 1:
            raise InvalidInput("the path is /data/{sn} or /events/{sn}")
        route = await self._server.authorised_route(path[0])
        if request.opt.content_format is None:
            raise InvalidInput("the Content-Format option is missing")
        if request.opt.content_format != JSON:
            raise BadOption(f"Content-Format must be {JSON} (application/json)")
        if not request.payload:
            raise InvalidInput("the payload is missing")
        if len(request.payload) > self._server.max_body_bytes:
            raise PayloadTooLarge(f"the body is over {self._server.max_body_bytes} bytes")
        await self._handle(self._server, route, request.payload)


class _ClockResource(Resource):
    async def render_get(self, request: aiocoap.Message) -> aiocoap.Message:
        return json_response(Clock(int(time.time())))
