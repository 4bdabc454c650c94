"""Serial numbers of homebases and CoAP devices: ``[0-9A-F]{16}`` everywhere."""

from __future__ import annotations

import re

from energy_platform.core.errors import InvalidInput

SERIAL_NUMBER = re.compile(r"[0-9A-F]{16}")
VERSION = re.compile(r"[0-9A-Za-z._-]{1,32}")
COMPONENTS = ("avr", "bl", "msp")


def checked_serial(value: str, *, field: str = "sn") -> str:
    """``value`` if it is a serial number, else :class:`InvalidInput` (400, CoAP 4.00)."""
    if SERIAL_NUMBER.fullmatch(value) is None:
        raise InvalidInput(f"{field}: a serial number is 16 characters [0-9A-F]", field=field)
    return value


def checked_version(value: str | None, *, field: str) -> str | None:
    """A firmware version as reported or uploaded: 1 to 32 characters ``[0-9A-Za-z._-]``."""
    if value is not None and VERSION.fullmatch(value) is None:
        raise InvalidInput(f"{field}: a version is 1 to 32 characters [0-9A-Za-z._-]", field=field)
    return value
