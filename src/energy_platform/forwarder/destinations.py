"""Which addresses a delivery may go to: public ones, and those an operator allowed.

A customer's URL must never make the forwarder reach the platform itself or a private network.
The host is resolved here (the system resolver also reads integer and short IPv4 forms such as
``2130706433`` or ``127.1``), every address it resolves to is checked, and the delivery then
connects to the checked address, so a name that changes its answer between the check and the
connection (DNS rebinding) gains nothing. ``POST /config`` runs the same check.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Sequence
from ipaddress import IPv4Address, IPv6Address, ip_address

from energy_platform.core.settings import IPNetwork

IPAddress = IPv4Address | IPv6Address
RESOLVE_TIMEOUT = 5.0


class AllowedNetworks:
    """The networks an operator opened to deliveries (``EP_FORWARDER_ALLOWED_NETWORKS``)."""

    def __init__(self, networks: Sequence[IPNetwork]) -> None:
        self.networks = tuple(networks)


class RefusedDestination(Exception):
    """The host is, or resolves to, an address deliveries may not go to."""


def _embedded(address: IPv6Address) -> IPv4Address | None:
    """The IPv4 address an IPv6 one carries: mapped, 6to4, Teredo, NAT64 (64:ff9b::/96)."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    if int(address) >> 32 == 0x0064FF9B << 64:
        return IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def is_allowed(address: IPAddress, allowed: Sequence[IPNetwork]) -> bool:
    """Inside an allowed network, or public: global unicast, and so is any IPv4 it embeds."""
    if any(address in network for network in allowed):
        return True
    if address.is_multicast or not address.is_global:
        return False
    if isinstance(address, IPv6Address):
        inner = _embedded(address)
        if inner is not None:
            return is_allowed(inner, allowed)
    return True


async def resolve(host: str, port: int, allowed: Sequence[IPNetwork]) -> str:
    """The address to connect to for ``host``; RefusedDestination unless every address the
    host resolves to is allowed."""
    host = host.strip("[]")
    try:
        literal = ip_address(host)
    except ValueError:
        pass  # a name, or an integer or short IPv4 form: the resolver reads those
    else:
        if not is_allowed(literal, allowed):
            raise RefusedDestination(f"{host} is not a public address")
        return host
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(RESOLVE_TIMEOUT):
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, TimeoutError, UnicodeError):
        raise RefusedDestination(f"the host {host!r} does not resolve") from None
    addresses = [ip_address(str(info[4][0]).partition("%")[0]) for info in infos]
    if not addresses:
        raise RefusedDestination(f"the host {host!r} does not resolve")
    for address in addresses:
        if not is_allowed(address, allowed):
            raise RefusedDestination(
                f"the host {host!r} is, or resolves to, {address}, which is not a public address"
            )
    return str(addresses[0])
