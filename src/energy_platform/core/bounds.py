"""The values the platform takes in: one named bound per quantity, and the one check of them.

Every entry (MQTT and AMQP ingest, CoAP, the HTTP and admin imports of history, price files,
tariffs) refuses a value the engine's arithmetic cannot carry, where it enters: once a value is
stored, the engine multiplies, sums and prices it for every feed in one statement, and a float8
that overflows (SQLSTATE 22003) stops that statement for all of them (issue 46: one homebase's
1e308 W stopped processing for every tenant). docs/devices.md and docs/api.md have the
table.

How the bounds were chosen. Each is far above what any real meter or contract reaches, and far
below where the arithmetic breaks:

- The engine's largest products (sql/functions/20_engine.sql): a trapezoid is seconds (at most
  90 in a bucket) times a value on the line between two samples, via their difference (at most
  twice the bound); a register's rise (at most twice its bound) may land whole in one bucket; a
  cost is kWh x (factor x area price + band price). Worst case at the bounds: a register rising
  by 2e15 Wh = 2e12 kWh in every bucket (a reset between each) at 1e3 x 1e8 + 1e8 ~ 1e11 per
  kWh is 2e23 a bucket, 350,640 buckets a year: 7e28 a year, 7e30 a century; standing charges
  1e10 a day, 3.7e14 a century. float8 overflows at 1.8e308: 277 orders of magnitude to spare.
  Even a stream configured as another medium (a register processed as power and priced) with
  every value at the largest bound, 1e15, gives 1e15 x 90 s x 1e11 ~ 1e28 a bucket, 3e35 a
  century.
- The largest bound, 1e15, is below 2^53 (9.0e15), where a float8 still holds every integer:
  a 12-digit kWh register in Wh keeps its last Wh (a float8's step there is 0.125).
- Products of non-zero values that round to 0 are an error too in PostgreSQL ("value out of
  range: underflow", also 22003): 5e-324 W / 3600 raises it. So a non-zero magnitude below
  :data:`SMALLEST` is refused as well; 0 itself is a value like any other. Signs are never
  refused: power is signed where a meter exports, temperatures and prices may be negative.

The calendar has bounds too (:data:`FIRST_DAY` to :data:`LAST_DAY`): every date and instant a
user sends (HTTP parameters and bodies, admin options and files) lies in that one range, or is
400 naming its field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, date, datetime
from types import MappingProxyType
from typing import Final

import msgspec

from energy_platform.core.codec import obis
from energy_platform.core.errors import OutOfBounds

# The calendar: whatever a period's arithmetic does with a date in this range (a day or a month
# added, a year before it, a local day's end in any time zone) stays far inside what Python's
# dates (years 1 to 9999) and PostgreSQL's timestamptz hold. At the calendar's own ends a bill
# or a price curve of one day ran 65 s into the statement timeout, then 500 (issue 59): its
# functions step past 9999-12-31 or before 0001-01-01. Devices send times from 2000 on
# (core/codec/format_v4.py); history older than 1970 is not metered electricity anyone imports.
FIRST_DAY: Final = date(1970, 1, 1)
"""The first date a user may name (a local date, or the UTC date of an instant)."""
LAST_DAY: Final = date(9000, 1, 1)
"""The last date a user may name; an instant may be at most its midnight UTC."""
EARLIEST: Final = 0
"""Unix seconds of :data:`FIRST_DAY`'s midnight UTC: the earliest instant a user may send."""
LATEST: Final = 221_845_392_000
"""Unix seconds of :data:`LAST_DAY`'s midnight UTC: the latest instant a user may send."""
CALENDAR: Final = f"{FIRST_DAY.isoformat()} to {LAST_DAY.isoformat()}"
"""The range as messages and docs name it."""
_FIRST_INSTANT: Final = datetime.fromtimestamp(EARLIEST, UTC)
_LAST_INSTANT: Final = datetime.fromtimestamp(LATEST, UTC)


class Bound(msgspec.Struct, frozen=True):
    """The largest magnitude a value of one quantity may have."""

    quantity: str
    unit: str
    limit: float


SMALLEST: Final = 1e-30
"""The smallest non-zero magnitude of any value: 1e-30 times the smallest factors the engine
applies (1/3600, 1/1000, a microsecond's share of a 300 s segment, a price and a factor of
1e-30 each) stays above 1e-105, far from float8's 2.2e-308; no meter resolves anything near."""

# Measured quantities: what raw and system streams hold (media ids of docs/devices.md).
POWER: Final = Bound("power", "W, var or VA", 1e10)
"""10 GW: more than any single grid connection or generating unit (the largest are ~1.75 GW)."""
VOLTAGE: Final = Bound("voltage", "V", 1e7)
"""10 MV: the highest transmission lines run at 1.1 MV."""
CURRENT: Final = Bound("current", "A", 1e6)
"""1 MA: an aluminium smelter's potline, the largest current anyone meters, draws ~0.5 MA."""
FREQUENCY: Final = Bound("frequency", "Hz", 1e6)
"""Grids run at 50 or 60 Hz, aircraft at 400 Hz."""
TEMPERATURE: Final = Bound("temperature", "°C", 1e4)
"""Hotter than any furnace; covers absolute zero (-273.15) with room."""
HUMIDITY: Final = Bound("relative humidity", "%", 1e3)
"""At most 100 %; a sensor's overshoot or error code (255) still passes."""
VOLUME: Final = Bound("a gas or water meter reading", "m³", 1e12)
"""A 12-digit register; a city's gas for a year is ~1e9 m³."""
HEAT: Final = Bound("a heat meter reading", "kWh", 1e12)
"""A 12-digit kWh register."""
ENERGY: Final = Bound("an energy register", "Wh, varh or VAh", 1e15)
"""A 12-digit kWh register (999,999,999,999 kWh) in Wh; below 2^53, so its last Wh is kept."""
SIGNAL: Final = Bound("signal strength", "dBm", 1e3)
"""Receivers see -174 dBm at the noise floor; +60 dBm is a kilowatt transmitter."""
BATTERY: Final = Bound("battery charge", "%", 1e4)
"""At most 100 %; room for a device that reports its millivolts instead."""
UNKNOWN: Final = Bound("a value of an unknown medium or OBIS code", "", 1e15)
"""Any register a meter may report under a code we do not know: the largest measured bound."""

INTERVAL: Final = Bound("an import interval", "s", 31 * 86_400.0)
"""The length of each value of a history by the interval: portals export 15 minutes, hours or
days; a month's energy as one value is the longest a register's reading pair should span."""

MAX_RATE: Final = Bound("a meter's fastest rise", "W, m³/h or kW", 1e10)
"""A stream's own limit on its meter counters' rise (``admin streams configure --max-rate``):
as much as the largest power a grid connection carries, in the counter's unit per hour."""

# Money: in the cost streams' currency (EP_BILLING_CURRENCY).
PRICE: Final = Bound("a price", "per kWh or m³", 1e8)
"""The exchanges' caps are 4 (day-ahead) and 10 (intraday) EUR/kWh; 1e8 holds them in a
currency of a million units a euro, ten times over. Price files and tariff bands alike."""
FACTOR: Final = Bound("a tariff factor", "", 1e3)
"""What an area's price is multiplied by: VAT (1.19) or a share; 1,000 is room for any."""
STANDING: Final = Bound("a standing charge", "per day or month", 1e10)
"""A grid connection's fee, ~1e4 EUR a day at most, in a currency of a million units a euro."""
VAT: Final = Bound("a VAT rate", "%", 1e3)
"""Rates run from 0 to 27 % (Hungary); a tariff's VAT multiplies its price by at most 11."""
KWH_PER_M3: Final = Bound("a gas tariff's kWh per m³", "kWh per m³", 1e3)
"""Calorific value (~8 to 13 kWh per m³ of natural gas) times a correction factor near 1."""

MEDIA: Final[Mapping[int, Bound]] = MappingProxyType(
    {
        1: POWER,
        2: VOLTAGE,
        3: CURRENT,
        4: FREQUENCY,
        5: TEMPERATURE,
        6: HUMIDITY,
        7: VOLUME,
        8: VOLUME,
        9: HEAT,
        12: POWER,
        13: POWER,
        14: POWER,
        18: POWER,
        22: ENERGY,
        23: ENERGY,
        24: ENERGY,
        28: ENERGY,
        40: SIGNAL,
        41: BATTERY,
    }
)
"""The bound of each medium id (docs/devices.md); any other medium is :data:`UNKNOWN`."""


def of_medium(medium: int | None) -> Bound:
    """The bound of a medium id's values (None, or one we do not know: :data:`UNKNOWN`)."""
    return UNKNOWN if medium is None else MEDIA.get(medium, UNKNOWN)


def of_obis(code: str) -> Bound:
    """The bound of an OBIS code's values: its medium's, :data:`UNKNOWN` for an unknown code."""
    known = obis.lookup(code)
    if known is not None:
        return of_medium(known[0])
    if obis.signed(code) is not None:
        return of_medium(obis.IMPORT_POWER)
    mbus = obis.mbus(code)
    # Gas, water and heat readings share one bound, so the device type need not be known.
    return of_medium(obis.GAS) if mbus is not None and not mbus.is_type else UNKNOWN


def within(bound: Bound, value: float) -> bool:
    """Whether the arithmetic can carry ``value`` as ``bound``'s quantity (False for NaN and
    infinities too)."""
    magnitude = abs(value)
    return magnitude <= bound.limit and (magnitude >= SMALLEST or value == 0)


def check(bound: Bound, value: float, where: str) -> float:
    """``value`` when the arithmetic can carry it as ``bound``'s quantity; else OutOfBounds
    (400, 4.00) saying ``where`` it is, and naming the value and the bound."""
    if within(bound, value):
        return value
    magnitude = abs(value)
    if not math.isfinite(value):
        raise OutOfBounds(f"{where}: {value} is not a finite number")
    if magnitude > bound.limit:
        unit = f" {bound.unit}" if bound.unit else ""
        raise OutOfBounds(
            f"{where}: {value!r} is out of bounds: {bound.quantity} is at most "
            f"{_shown(bound.limit)}{unit} in magnitude"
        )
    raise OutOfBounds(
        f"{where}: {value!r} is too small to compute with: a magnitude other than 0 is at "
        f"least {_shown(SMALLEST)}"
    )


def _shown(limit: float) -> str:
    """A bound as people write it: 1e10, not 1e+10 or 10000000000.0."""
    return f"{limit:g}".replace("e+0", "e").replace("e+", "e").replace("e-0", "e-")


def check_day(day: date, field: str) -> date:
    """``day`` when it lies in the calendar's range (both ends included), else OutOfBounds
    (400) naming ``field``."""
    if FIRST_DAY <= day <= LAST_DAY:
        return day
    raise OutOfBounds(f"{field}: {day} is outside the calendar, {CALENDAR}", field=field)


def in_calendar(at: datetime) -> bool:
    """Whether the aware instant ``at`` lies from :data:`EARLIEST` to :data:`LATEST`."""
    return _FIRST_INSTANT <= at <= _LAST_INSTANT


def check_instant(at: datetime, field: str) -> datetime:
    """``at`` (aware) when it lies from :data:`EARLIEST` to :data:`LATEST`, else OutOfBounds
    (400) naming ``field``."""
    if in_calendar(at):
        return at
    raise OutOfBounds(
        f"{field}: {at.isoformat()} is outside the calendar, {CALENDAR} (UTC)", field=field
    )


def check_seconds(seconds: float, field: str) -> float:
    """Unix ``seconds`` when they lie from :data:`EARLIEST` to :data:`LATEST` (False for NaN
    and infinities too), else OutOfBounds (400) naming ``field``."""
    if EARLIEST <= seconds <= LATEST:
        return seconds
    raise OutOfBounds(
        f"{field}: {seconds!r} is outside the calendar, {CALENDAR} (Unix seconds"
        f" {EARLIEST} to {LATEST})",
        field=field,
    )
