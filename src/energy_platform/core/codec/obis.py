"""OBIS codes we understand, mapped to (medium ID, index); see docs/devices.md."""

from __future__ import annotations

import re
from typing import Final

# ``A-B:C.D.E`` or the short ``C.D.E``, optionally ``*F``: ASCII digits (``\d`` would take "٣"
# too) and separators, nothing else. The one pattern: ingest and the forwarder's filters.
PATTERN: Final = re.compile(
    r"(?:[0-9]{1,3}-[0-9]{1,3}:)?[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}(?:\*[0-9]{1,3})?"
)
MAX_LENGTH: Final = 32

KNOWN: dict[str, tuple[int, int | None]] = {
    "1-0:1.7.0": (12, None),
    "1-0:2.7.0": (13, None),
    "1-0:21.7.0": (12, 1),
    "1-0:41.7.0": (12, 2),
    "1-0:61.7.0": (12, 3),
    "1-0:22.7.0": (13, 1),
    "1-0:42.7.0": (13, 2),
    "1-0:62.7.0": (13, 3),
    # Energy registers: the total, then tariffs 1..4 (DSMR meters report only 1.8.1 and 1.8.2).
    "1-0:1.8.0": (22, None),
    "1-0:2.8.0": (23, None),
    **{f"1-0:1.8.{n}": (22, n) for n in range(1, 5)},
    **{f"1-0:2.8.{n}": (23, n) for n in range(1, 5)},
    "1-0:32.7.0": (2, 1),
    "1-0:52.7.0": (2, 2),
    "1-0:72.7.0": (2, 3),
    "1-0:31.7.0": (3, 1),
    "1-0:51.7.0": (3, 2),
    "1-0:71.7.0": (3, 3),
    "1-0:14.7.0": (4, None),
    "7-0:3.0.0": (7, None),
    "8-0:1.0.0": (8, None),
}


def normalise(code: str) -> str:
    """Short forms (``1.8.0``) mean electricity, channel 0 (``1-0:1.8.0``)."""
    return code if ":" in code else f"1-0:{code}"


def lookup(code: str) -> tuple[int, int | None] | None:
    """(medium, index) for a known code, else None (it becomes a system stream)."""
    return KNOWN.get(normalise(code))


def is_code(text: str) -> bool:
    """Whether ``text`` is an OBIS code in one of the forms ingest stores."""
    return PATTERN.fullmatch(text) is not None
