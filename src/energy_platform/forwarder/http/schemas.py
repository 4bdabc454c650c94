"""The forwarder API's wire format: the configuration (spec: "Forwarder configuration")."""

from __future__ import annotations

import re
from typing import Annotated, Literal

import httpx
import msgspec

from energy_platform.core.codec import obis as obis_codes
from energy_platform.core.errors import InvalidInput
from energy_platform.core.inputs import (
    MAX_REPEATED,
    PLAIN_TEXT,
    URL_LENGTH,
    NaturalInt4,
    checked_text,
)

SN_PATTERN = re.compile(r"[0-9A-F]{16}")
Interval = Annotated[int, msgspec.Meta(ge=1, le=60)]
Url = Annotated[str, msgspec.Meta(max_length=URL_LENGTH, pattern=PLAIN_TEXT)]
Obis = Annotated[str, msgspec.Meta(max_length=obis_codes.MAX_LENGTH)]


class Filter(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """A stream matches when every field given matches; at least one must be given."""

    medium: NaturalInt4 | None = None
    index: Annotated[list[NaturalInt4], msgspec.Meta(min_length=1, max_length=64)] | None = None
    """Only together with ``medium``."""
    obis: Obis | None = None


class ForwarderConfig(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """Request body of ``POST /config`` and response of ``GET``/``POST /config``."""

    interval: Interval
    """Minutes between deliveries, 1..60."""
    url: Url
    """Absolute http(s) URL; ``user:password@`` credentials are sent as HTTP Basic."""
    format: Literal["json"]
    mode: Literal["all", "aggregated"]
    allow_list: Annotated[list[Filter], msgspec.Meta(max_length=MAX_REPEATED)] | None = None
    deny_list: Annotated[list[Filter], msgspec.Meta(max_length=MAX_REPEATED)] | None = None


def decode_config(body: bytes) -> ForwarderConfig:
    """Strict decoding (``"5"`` is not an interval); 400 with the offending field's path."""
    try:
        return msgspec.json.decode(body, type=ForwarderConfig, strict=True)
    except msgspec.ValidationError as e:
        message, _, path = str(e).rpartition(" - at `$")
        if not message:
            raise InvalidInput(str(e)) from None
        field = path.rstrip("`").lstrip(".")
        raise InvalidInput(f"{field}: {message}", field=field) from None
    except msgspec.DecodeError:
        raise InvalidInput("the body is not a JSON object") from None


class Destination(msgspec.Struct, frozen=True):
    """Where deliveries go: the URL without credentials, and the credentials apart."""

    url: str
    username: str | None
    password: str | None

    def __repr__(self) -> str:
        # Kept out of tracebacks and logs.
        password = None if self.password is None else "<set>"
        return f"Destination(url={self.url!r}, username={self.username!r}, password={password})"

    def with_credentials(self) -> str:
        """The URL as the customer gave it (``GET /config`` shows it to that customer only)."""
        if self.username is None:
            return self.url
        url = httpx.URL(self.url).copy_with(username=self.username, password=self.password)
        return str(url)


def destination(url: str) -> Destination:
    """Split a configured URL; 400 unless it is an absolute http(s) URL with a host."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError):
        raise InvalidInput("url: not a valid URL", field="url") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise InvalidInput("url: must be an absolute http:// or https:// URL", field="url")
    if parsed.fragment:
        raise InvalidInput("url: must not have a fragment", field="url")
    # The user info arrives percent-encoded: "%00" is a NUL once decoded.
    username = checked_text(parsed.username, "url", max_length=URL_LENGTH) or None
    password = checked_text(parsed.password, "url", max_length=URL_LENGTH) or None
    if password is not None and username is None:
        raise InvalidInput("url: a password needs a user name", field="url")
    bare = str(parsed.copy_with(username=None, password=None))
    return Destination(bare, username, password)


def checked_filters(config: ForwarderConfig) -> tuple[str | None, list[Filter]]:
    """Which list is in use and its filters (OBIS codes normalised); 400 for invalid ones."""
    if config.allow_list and config.deny_list:
        raise InvalidInput(
            "allow_list and deny_list cannot both be given; use one of them", field="deny_list"
        )
    kind: str | None = None
    filters: list[Filter] = []
    if config.allow_list:
        kind, filters = "allow", config.allow_list
    elif config.deny_list:
        kind, filters = "deny", config.deny_list
    out = []
    for n, f in enumerate(filters):
        field = f"{kind}_list[{n}]"
        if f.medium is None and f.index is None and f.obis is None:
            raise InvalidInput(f"{field}: give medium, index with medium, or obis", field=field)
        if f.index is not None and f.medium is None:
            raise InvalidInput(f"{field}.index: only together with medium", field=f"{field}.index")
        obis = f.obis
        if obis is not None:
            if not obis_codes.is_code(obis):
                raise InvalidInput(f"{field}.obis: not an OBIS code", field=f"{field}.obis")
            obis = obis_codes.normalise(obis)
        out.append(Filter(f.medium, f.index, obis))
    return kind, out


class Registered(msgspec.Struct):
    """``GET /register``: the serial numbers registered to the calling customer."""

    registered: list[str]


class Registration(msgspec.Struct):
    """``POST /register/{sn}``: the registration, new (201) or already the caller's (200)."""

    sn: str
    registered_at: int
    """Unix time the registration took effect in the database; ingest follows within ~10 s."""


class Unregistration(msgspec.Struct):
    """``DELETE /register/{sn}``."""

    sn: str
    unregistered_at: int
    """Unix time; no point measured at or after it is delivered."""


class Delivery(msgspec.Struct):
    """One batch of ``GET /deliveries``: what was sent and how its last attempt went."""

    id: str
    """The batch id (its ``Idempotency-Key``)."""
    from_: int = msgspec.field(name="from")
    """Start of the batch's interval, Unix seconds."""
    to: int
    """End of the batch's interval, Unix seconds."""
    points: int | None
    """Points in the batch; null while a pending batch has not been attempted yet."""
    attempts: int
    """Attempts so far."""
    outcome: Literal["pending", "delivered", "dropped"]
    """pending: not yet answered 2xx or 4xx (being sent, or waiting for its retry)."""
    status: int | None
    """HTTP status of the last attempt; null when none answered (see ``error``)."""
    error: str | None
    """Why the last attempt got no status: timeout, refused_destination (the host is or
    resolves to an address that is not public), bad_response, or a connection error."""
    attempted_at: int | None
    """Unix time of the last attempt."""
    next_retry: int | None
    """Unix time of the next attempt of a pending batch that failed; null otherwise."""


class Deliveries(msgspec.Struct):
    """``GET /deliveries``: the caller's latest batches, the pending one first, newest first."""

    deliveries: list[Delivery]
