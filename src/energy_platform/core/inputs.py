"""Checks of input at the edge, one per kind: ids, bounded integers, plain text and instants.

Whatever passes them fits the database column it is meant for, so no input reaches a query
that the database would refuse (a 5xx to the caller): ids and numbers stay inside int4/int8,
text carries no NUL or control character and has a bounded length, instants are real
``timestamptz`` values. The HTTP APIs and the admin commands use the same checks.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated

import msgspec

from energy_platform.core import bounds
from energy_platform.core.errors import InvalidInput, NotFound

INT4_MAX = 2**31 - 1
INT8_MAX = 2**63 - 1

Int4 = Annotated[int, msgspec.Meta(ge=-(2**31), le=INT4_MAX)]
"""Any ``integer`` column."""
NaturalInt4 = Annotated[int, msgspec.Meta(ge=0, le=INT4_MAX)]
"""A channel, medium, device or index: a non-negative ``integer``."""
Id = Annotated[int, msgspec.Meta(ge=1, le=INT8_MAX)]
"""A ``bigint`` identity."""
MAX_REPEATED = 1000
"""How often a repeatable query parameter (``id``, ``channel``, ``type``) may be given."""
Ids = Annotated[list[Id], msgspec.Meta(max_length=MAX_REPEATED)]
Channels = Annotated[list[NaturalInt4], msgspec.Meta(max_length=MAX_REPEATED)]

TITLE_LENGTH = 200
"""Titles, names and units: what a person types."""
URL_LENGTH = 2048

# C0 and C1 control characters and DEL: NUL cannot be stored in text at all, the others break
# logs, terminals and the HTML of notifications.
CONTROL_CHARACTER = re.compile(r"[\x00-\x1f\x7f-\x9f]")
PLAIN_TEXT = r"^[^\x00-\x1f\x7f-\x9f]*$"
"""The same rule as a JSON-schema pattern, for msgspec struct fields."""
Title = Annotated[str, msgspec.Meta(min_length=1, max_length=TITLE_LENGTH, pattern=PLAIN_TEXT)]

SLUG_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
"""A name that is also a path segment and a shell word (a token's name): no escaping anywhere."""
_SLUG = re.compile(SLUG_PATTERN.removeprefix("^").removesuffix("$"))
Slug = Annotated[str, msgspec.Meta(min_length=1, max_length=64, pattern=SLUG_PATTERN)]


def checked_text(value: str, field: str, *, max_length: int = TITLE_LENGTH) -> str:
    """``value`` if it is plain text of at most ``max_length`` characters, else 400."""
    if len(value) > max_length:
        raise InvalidInput(f"{field}: at most {max_length} characters", field=field)
    if CONTROL_CHARACTER.search(value):
        raise InvalidInput(f"{field}: control characters are not allowed", field=field)
    return value


def checked_slug(value: str, field: str) -> str:
    """``value`` if it is a :data:`Slug`, else 400. Whole-string match: a JSON-schema pattern's
    ``$`` (msgspec's check) also passes a name that ends in a newline."""
    if not _SLUG.fullmatch(value):
        raise InvalidInput(
            f"{field}: 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit",
            field=field,
        )
    return value


def parse_id(value: str, what: str) -> int:
    """Ids are strings on the wire and bigints inside; anything else names nothing: 404.

    Only ASCII digits count (``str.isdigit`` also accepts "²" and "٣"), and only what a
    ``bigint`` identity can hold.
    """
    if not (value.isascii() and value.isdigit()) or len(value) > 19:
        raise NotFound(f"no {what} {value[:40]!r}")
    number = int(value)
    if not 1 <= number <= INT8_MAX:
        raise NotFound(f"no {what} {value!r}")
    return number


def parse_instant(value: str, field: str) -> datetime:
    """An ISO 8601 time as an aware UTC datetime; a time without a UTC offset is UTC.

    400 for anything else, control characters and times outside the calendar's range
    (core/bounds.py) included.
    """
    checked_text(value, field, max_length=64)
    if not value.isascii():
        raise InvalidInput(f"{field}: {value!r} is not an ISO 8601 time", field=field)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidInput(f"{field}: {value!r} is not an ISO 8601 time", field=field) from None
    if parsed.tzinfo is None:
        return bounds.check_instant(parsed.replace(tzinfo=UTC), field)
    try:
        return bounds.check_instant(parsed.astimezone(UTC), field)
    except OverflowError:
        raise InvalidInput(
            f"{field}: {value!r} is outside the years 1 to 9999 in UTC", field=field
        ) from None
