"""The CoAP endpoint of a process (UDP, aiocoap) and the resources domains add to it.

The spec puts the provisioning server and the data server each on CoAP port 5683 of its own
host; when both run in one process there is one endpoint, so each domain adds its resources to
one :class:`CoapSite` and one :class:`CoapService` serves them all.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import TYPE_CHECKING, Any

import aiocoap
import aiocoap.resource
import msgspec
import structlog
from aiocoap.numbers.codes import Code
from aiocoap.util.linkformat import Link, LinkFormat

from energy_platform.core.errors import PlatformError

log = structlog.get_logger()

JSON = 50  # Content-Format application/json, as the spec requires


class CoapSite:
    """Resources of one CoAP endpoint, and what they need open while it serves."""

    def __init__(self) -> None:
        self.root = aiocoap.resource.Site()
        self.paths: list[tuple[str, ...]] = []
        self._resources: list[Callable[[], AbstractAsyncContextManager[Any]]] = []
        # Resource discovery (RFC 6690): what this endpoint serves, in link-format. No
        # implementation link: nothing about the server's software is given away.
        self.root.add_resource(
            (".well-known", "core"),
            aiocoap.resource.WKCResource(self.root.get_resources_as_linkheader, impl_info=None),
        )

    def add(
        self,
        path: tuple[str, ...],
        resource: Any,
        *,
        needs: Callable[[], AbstractAsyncContextManager[Any]] | None = None,
    ) -> None:
        """Serve ``resource`` at ``path``; ``needs`` is entered while the endpoint runs."""
        self.root.add_resource(path, resource)
        self.paths.append(path)
        if needs is not None:
            self._resources.append(needs)

    def __bool__(self) -> bool:
        return bool(self.paths)

    async def open(self, stack: AsyncExitStack) -> None:
        for opened in self._resources:
            await stack.enter_async_context(opened())


class CoapService:
    """Serves a :class:`CoapSite` over UDP on ``host:port`` until stopped."""

    def __init__(self, name: str, host: str, port: int, site: CoapSite) -> None:
        self.name = name
        self.host = host
        self.port = port
        self._site = site

    async def run(self, stop: asyncio.Event) -> None:
        async with AsyncExitStack() as stack:
            await self._site.open(stack)
            context = await aiocoap.Context.create_server_context(
                self._site.root, bind=(self.host, self.port), transports=["udp6"]
            )
            try:
                paths = ["/" + "/".join(p) for p in self._site.paths]
                log.info("listening", url=f"coap://{self.host}:{self.port}", paths=paths)
                await stop.wait()
            finally:
                await context.shutdown()


def error_code(error: PlatformError) -> Code:
    klass, detail = error.coap_code
    return Code(klass << 5 | detail)


def json_response(value: Any) -> aiocoap.Message:
    """2.05 Content with ``value`` as JSON (Content-Format 50)."""
    return aiocoap.Message(
        code=aiocoap.CONTENT, payload=msgspec.json.encode(value), content_format=JSON
    )


if TYPE_CHECKING:  # aiocoap has no type information; to mypy the bases are plain classes

    class _PathCapable:
        pass

    class Resource:
        pass

else:
    _PathCapable = aiocoap.resource.PathCapable
    Resource = aiocoap.resource.Resource


class PathResource(Resource, _PathCapable):
    """A resource that is handed the rest of the path (aiocoap routes by this base), listed in
    resource discovery by its own path (a device appends its serial number)."""

    def get_resources_as_linkheader(self) -> LinkFormat:
        return LinkFormat([Link("")])


class SerialResource(PathResource):
    """``/{prefix}/{sn}``: one path segment after where it is added, handed to ``get``.

    Any :class:`PlatformError` becomes its own CoAP code with an empty payload.
    """

    def __init__(self, get: Callable[[str, aiocoap.Message], Awaitable[aiocoap.Message]]) -> None:
        super().__init__()
        self._get = get

    async def render_get(self, request: aiocoap.Message) -> aiocoap.Message:
        path = request.opt.uri_path
        if len(path) != 1:
            return aiocoap.Message(code=aiocoap.NOT_FOUND)
        try:
            return await self._get(path[0], request)
        except PlatformError as e:
            if e.status >= 500:
                log.exception("coap request failed", error=e.detail)
            return aiocoap.Message(code=error_code(e))


def client_address(request: aiocoap.Message) -> str:
    """The sender's IP address (without the IPv4-mapped IPv6 prefix)."""
    host = str(getattr(request.remote, "hostinfo", "") or "")
    sockaddr = getattr(request.remote, "sockaddr", None)
    if sockaddr:
        host = str(sockaddr[0])
    return host.removeprefix("::ffff:")
