"""OBIS codes we understand, mapped to (medium ID, index); see docs/devices.md."""

from __future__ import annotations

import functools
import re
from typing import Final, NamedTuple

# ``A-B:C.D.E`` or the short ``C.D.E``, optionally ``*F``: ASCII digits (``\d`` would take "٣"
# too) and separators, nothing else: the form codes are stored in (:func:`canonical` brings the
# other forms meters write to it). The one pattern: ingest and the forwarder's filters.
PATTERN: Final = re.compile(
    r"(?:[0-9]{1,3}-[0-9]{1,3}:)?[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}(?:\*[0-9]{1,3})?"
)
# What readers write beside it: IEC 62056-21 (D0) letters in C, D and E (``0-0:C.1.0``,
# ``0-0:F.F.0``), F after a dot (``1-0:1.8.0.255``) and all six groups dotted
# (``1.0.1.8.0.255``). Groups: a, b, c, d, e, f (f may be absent).
_GROUP = r"([0-9]{1,3}|[CFLP])"
_WRITTEN: Final = (
    re.compile(
        rf"(?:([0-9]{{1,3}})-([0-9]{{1,3}}):)?{_GROUP}\.{_GROUP}\.{_GROUP}(?:[*.]([0-9]{{1,3}}))?"
    ),
    re.compile(rf"([0-9]{{1,3}})\.([0-9]{{1,3}})\.{_GROUP}\.{_GROUP}\.{_GROUP}\.([0-9]{{1,3}})"),
)
LETTERS: Final = {"C": "96", "F": "97", "L": "98", "P": "99"}
"""IEC 62056-21's letters in OBIS groups C to E: the numbers they stand for."""
MAX_LENGTH: Final = 32
CURRENT: Final = 255
"""``*255``: the current value, the same as no ``*F`` at all (SML readers write it)."""
CHANNELS: Final = range(1, 65)
"""Value group B of electricity (``1-b:``): the meter's measurement channel, 1 to 64; its codes
read as ``1-0:`` (Kamstrup's Norwegian meters write ``1-1:1.8.0``)."""

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

IMPORT_POWER, EXPORT_POWER = 12, 13
SIGNED: Final[dict[str, int | None]] = {
    "1-0:16.7.0": None,
    "1-0:36.7.0": 1,
    "1-0:56.7.0": 2,
    "1-0:76.7.0": 3,
}
"""SML's signed active power, all phases and L1..L3 (code to index): a positive value is import
power (medium 12), a negative one export power (13). ``15.7.0``, the absolute value, has no
direction and is a system stream."""

# DSMR's M-Bus devices (gas, water, heat meters wired to the electricity meter): channel n of
# the meter, 1..4, in group B. 24.2.1 is the reading (24.2.3 in Belgium, 24.3.0 the hourly
# capture of DSMR 2.2 and 3), 24.1.0 the type.
MBUS: Final = re.compile(r"0-([1-4]):24\.(2\.1|2\.3|3\.0|1\.0)")
MBUS_CHANNELS: Final = 1000
"""M-Bus device n of a meter read on channel c is channel ``n * 1000 + c`` (c < 1000)."""
GAS: Final = 7
MBUS_MEDIA: Final[dict[float, int]] = {3: GAS, 7: 8, 4: 9, 12: 9}
"""M-Bus device type (``0-n:24.1.0``) to the medium of its reading: gas, water, heat (4 is a
heat meter on the outlet, 12 on the inlet). A reading without a known type is gas."""


class Mbus(NamedTuple):
    """An M-Bus code: the device's channel on the meter, and whether it is the device type
    (``0-n:24.1.0``) rather than the reading."""

    n: int
    is_type: bool


# Cached: ingest asks for a record's few codes several times each, for every record.
@functools.lru_cache(maxsize=4096)
def canonical(code: str) -> str | None:
    """``code`` in the stored form (:data:`PATTERN`): letters as their numbers, F after ``*``;
    None for a code that is no OBIS code in any form readers write."""
    if len(code) > MAX_LENGTH:
        return None
    for written in _WRITTEN:
        match = written.fullmatch(code)
        if match is not None:
            a, b, c, d, e, f = match.groups()
            name = ".".join(LETTERS.get(x, x) for x in (c, d, e))
            name = name if a is None else f"{a}-{b}:{name}"
            return name if f is None else f"{name}*{f}"
    return None


def normalise(code: str) -> str:
    """The stored form (:func:`canonical`); short forms (``1.8.0``) mean electricity, channel 0
    (``1-0:1.8.0``); ``*255`` is the same as no suffix, so it is dropped."""
    code = canonical(code) or code
    full = code if ":" in code else f"1-0:{code}"
    name, star, f = full.partition("*")
    return name if star and f.isdigit() and int(f) == CURRENT else full


def is_past(code: str) -> bool:
    """Whether ``code`` names a past value: an ``*F`` other than 255 (a billing period's)."""
    return "*" in normalise(code)


def _meaning(code: str) -> str:
    # Electricity's measurement channels 1..64 (group B) mean what channel 0's codes do.
    name = normalise(code)
    a, dash, rest = name.partition("-")
    b, colon, cde = rest.partition(":")
    if a == "1" and dash and colon and b.isdigit() and int(b) in CHANNELS:
        return f"1-0:{cde}"
    return name


def lookup(code: str) -> tuple[int, int | None] | None:
    """(medium, index) for a known code, else None (it becomes a system stream). A past
    value is never a register or a measurement: None. M-Bus readings are :func:`mbus`'s,
    signed power :func:`signed`'s."""
    return KNOWN.get(_meaning(code))


class Signed(NamedTuple):
    """Signed power's index, its phase (None: all phases)."""

    phase: int | None


def signed(code: str) -> Signed | None:
    """The index of a signed power code (:data:`SIGNED`), else None."""
    meaning = _meaning(code)
    return Signed(SIGNED[meaning]) if meaning in SIGNED else None


def mbus(code: str) -> Mbus | None:
    """The M-Bus device a current ``0-n:24.2.1``, ``24.2.3`` or ``24.1.0`` names, else None."""
    match = MBUS.fullmatch(normalise(code))
    if match is None:
        return None
    return Mbus(int(match.group(1)), match.group(2) == "1.0")


def mbus_channel(reader: int, n: int) -> int | None:
    """The channel of M-Bus device ``n`` of the meter read on channel ``reader``; None when
    the reader's channel is too high for one (its codes are then system streams)."""
    return n * MBUS_CHANNELS + reader if reader < MBUS_CHANNELS else None


def mbus_medium(device_type: float | None) -> int | None:
    """The medium of an M-Bus reading whose device has ``device_type`` (None: unknown, gas);
    None for a type that is none of gas, water or heat (a system stream)."""
    return GAS if device_type is None else MBUS_MEDIA.get(device_type)


def is_code(text: str) -> bool:
    """Whether ``text`` is an OBIS code in one of the forms readers write."""
    return canonical(text) is not None
