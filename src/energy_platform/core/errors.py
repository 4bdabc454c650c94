"""One error tree for the whole platform.

Every error knows its HTTP status and its CoAP response code, so each transport renders any of
them without a lookup table (the way aiocoap's errors carry their own code).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import ClassVar


class PlatformError(Exception):
    """Base of every error the platform reports to a caller."""

    status: ClassVar[int] = 500
    coap_code: ClassVar[tuple[int, int]] = (5, 0)
    slug: ClassVar[str] = "internal-error"
    title: ClassVar[str] = "Internal error"
    headers: ClassVar[Mapping[str, str]] = MappingProxyType({})
    """Extra HTTP response headers (a 401's challenge, a 429's Retry-After)."""

    def __init__(self, detail: str, *, field: str | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.field = field


class ConfigurationError(PlatformError):
    """Settings that cannot be used; raised before anything starts."""

    slug = "configuration"
    title = "Invalid configuration"


class InvalidInput(PlatformError):
    status = 400
    coap_code = (4, 0)
    slug = "invalid-input"
    title = "Invalid input"


class OutOfBounds(InvalidInput):
    """A value beyond the bound of its quantity (core/bounds.py): one the engine's arithmetic
    could not carry."""

    slug = "out-of-bounds"
    title = "Value out of bounds"


class BadOption(InvalidInput):
    coap_code = (4, 2)
    slug = "bad-option"
    title = "Invalid option value"


class Unauthorized(PlatformError):
    status = 401
    # The spec answers an unauthorised CoAP device with 4.05.
    coap_code = (4, 5)
    slug = "unauthorized"
    title = "Unauthorized"


class Forbidden(PlatformError):
    status = 403
    coap_code = (4, 3)
    slug = "forbidden"
    title = "Forbidden"


class ReadOnlyToken(Forbidden):
    """A known token whose scope is ``read`` sent with a request that would change something."""

    slug = "read-only-token"
    title = "Read-only token"


class NotFound(PlatformError):
    status = 404
    coap_code = (4, 4)
    slug = "not-found"
    title = "Not found"


class Conflict(PlatformError):
    status = 409
    coap_code = (4, 9)
    slug = "conflict"
    title = "Conflict"


class PayloadTooLarge(PlatformError):
    status = 413
    coap_code = (4, 13)
    slug = "payload-too-large"
    title = "Payload too large"


class TooManyRequests(PlatformError):
    status = 429
    coap_code = (4, 29)
    slug = "too-many-requests"
    title = "Too many requests"


class Unavailable(PlatformError):
    """A fault of the database, the network or a service this one needs: the request may be
    answered when retried."""

    status = 503
    coap_code = (5, 3)
    slug = "unavailable"
    title = "Service unavailable"
    headers = MappingProxyType({"Retry-After": "5"})
