"""The bounds of values (core/bounds.py): every medium and OBIS code we know has its quantity's
bound, a value passes exactly when the arithmetic can carry it, and a refusal names the value
and the bound."""

from __future__ import annotations

import math
import sys
from datetime import UTC, datetime, time, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from energy_platform.core import bounds
from energy_platform.core.codec import obis
from energy_platform.core.codec.format_v4 import BATTERY, RAW_MEDIA, SIGNAL
from energy_platform.core.errors import OutOfBounds

MEASURED = [bounds.of_medium(m) for m in bounds.MEDIA] + [bounds.UNKNOWN]
MONEY = [bounds.PRICE, bounds.FACTOR, bounds.STANDING, bounds.VAT, bounds.KWH_PER_M3]


def test_every_medium_and_obis_code_we_know_has_its_quantitys_bound() -> None:
    assert set(bounds.MEDIA) == {*RAW_MEDIA, SIGNAL, BATTERY}
    assert bounds.of_medium(1) is bounds.of_medium(12) is bounds.POWER
    assert bounds.of_medium(22) is bounds.of_medium(28) is bounds.ENERGY
    for code, (medium, _) in obis.KNOWN.items():
        assert bounds.of_obis(code) is bounds.of_medium(medium) is not bounds.UNKNOWN
    assert bounds.of_obis("1.8.0") is bounds.ENERGY  # a short form is electricity's
    assert bounds.of_obis("1-0:99.9.9") is bounds.of_medium(99) is bounds.of_medium(None)
    assert bounds.of_medium(None) is bounds.UNKNOWN


def test_the_engines_worst_arithmetic_at_the_bounds_stays_far_from_overflow() -> None:
    # Every value keeps its integers (a register's last Wh): below 2^53.
    assert max(b.limit for b in MEASURED) < 2**53
    # The largest product the engine forms: a value's swing (2x) over a 90 s bucket, priced at
    # (factor x area price + band price) x (1 + VAT), a gas m³ as kWh, in every bucket of a
    # century, with standing charges and their VAT.
    vat = 1 + bounds.VAT.limit / 100
    price = (bounds.FACTOR.limit * bounds.PRICE.limit + bounds.PRICE.limit) * vat
    buckets = 100 * 366 * 960
    worst = 2 * max(b.limit for b in MEASURED) * 90 * price * bounds.KWH_PER_M3.limit * buckets
    worst += bounds.STANDING.limit * vat * 100 * 366
    assert worst < 1e40 < sys.float_info.max
    # The smallest: a tiny value through 1/3600, 1/1000, a microsecond of 300 s, price, factor.
    assert bounds.SMALLEST**3 / 3600 / 1000 * (1e-6 / 300) > 1e-200 > sys.float_info.min


def shown(limit: float) -> str:
    return f"{limit:g}".replace("e+", "e").replace("e0", "e")


BOUNDS = st.sampled_from(MEASURED + MONEY)


@given(BOUNDS, st.floats(allow_nan=True, allow_infinity=True))
def test_a_value_passes_exactly_when_its_magnitude_is_within_the_bound(
    bound: bounds.Bound, value: float
) -> None:
    if value == 0 or bounds.SMALLEST <= abs(value) <= bound.limit:
        assert bounds.check(bound, value, "here") == value
        return
    with pytest.raises(OutOfBounds) as refused:
        bounds.check(bound, value, "here")
    assert (refused.value.status, refused.value.coap_code) == (400, (4, 0))
    detail = refused.value.detail
    if not math.isfinite(value):
        assert detail == f"here: {value} is not a finite number"
    elif abs(value) > bound.limit:
        assert detail.startswith(f"here: {value!r} is out of bounds: ")
        assert f"{bound.quantity} is at most {shown(bound.limit)}" in detail
    else:
        assert detail.startswith(f"here: {value!r} is too small to compute with")


@pytest.mark.parametrize("value", [-1e10, -1.0, -0.0, 0.0, 1e-30, 1e10])
def test_signs_are_never_refused(value: float) -> None:
    assert bounds.check(bounds.POWER, value, "medium 13") == value


def test_the_calendars_instants_are_its_dates_midnights_and_both_ends_pass() -> None:
    first = datetime.combine(bounds.FIRST_DAY, time(), UTC)
    last = datetime.combine(bounds.LAST_DAY, time(), UTC)
    assert (first.timestamp(), last.timestamp()) == (bounds.EARLIEST, bounds.LATEST)
    assert bounds.check_instant(first, "t") == first
    assert bounds.check_instant(last, "t") == last
    assert bounds.check_seconds(bounds.LATEST, "t") == bounds.LATEST
    assert bounds.check_day(bounds.LAST_DAY, "d") == bounds.LAST_DAY


@pytest.mark.parametrize(
    "outside",
    [
        lambda: bounds.check_day(bounds.FIRST_DAY - timedelta(days=1), "from"),
        lambda: bounds.check_day(bounds.LAST_DAY + timedelta(days=1), "from"),
        lambda: bounds.check_instant(datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC), "from"),
        lambda: bounds.check_instant(datetime(9000, 1, 1, 0, 0, 1, tzinfo=UTC), "from"),
        lambda: bounds.check_seconds(-1, "from"),
        lambda: bounds.check_seconds(bounds.LATEST + 1, "from"),
        lambda: bounds.check_seconds(math.nan, "from"),
        lambda: bounds.check_seconds(math.inf, "from"),
    ],
)
def test_outside_the_calendar_is_out_of_bounds_naming_the_field(outside: Any) -> None:
    with pytest.raises(OutOfBounds, match="outside the calendar, 1970-01-01 to 9000-01-01") as e:
        outside()
    assert e.value.field == "from"
    assert e.value.status == 400
