"""Bearer tokens on HTTP: the one reading of ``Authorization: Bearer <token>`` and its 401.

Both token APIs (data users, forwarder customers) read the header here and look the digest up
in their own table with their own query; the data endpoint's one-round-trip query takes the
digest itself and reports an unknown token with :func:`unknown_token`.
"""

from __future__ import annotations

from types import MappingProxyType

from litestar import Request
from litestar.datastructures import State

from energy_platform.core.errors import Unauthorized
from energy_platform.core.tokens import token_digest


class BearerRequired(Unauthorized):
    # One realm for both APIs: they are served on different origins, and a protection space is
    # the origin together with the realm (RFC 9110, 11.5), so their tokens never mix.
    headers = MappingProxyType({"WWW-Authenticate": 'Bearer realm="energy-platform"'})


def bearer_digest(request: Request[object, object, State]) -> bytes:
    """The SHA-256 of the request's bearer token, as tokens are looked up by; 401 without one."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise BearerRequired("send Authorization: Bearer <token>")
    return token_digest(token.strip())


def unknown_token() -> BearerRequired:
    """The 401 for a token that names no one (never issued, or revoked)."""
    return BearerRequired("unknown or revoked token")
