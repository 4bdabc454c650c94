"""Public holidays that a tariff's bands count as weekend days (``--holidays NL``,
``--holidays DE-BY``), from the maintained ``holidays`` package, never a table of our own.

The engine prices in SQL, which cannot call the package: the dates are computed here when a
tariff is set and stored with it (``cluster.tariff_holidays``) for a span of local years
(``cluster.tariffs.holiday_years``); a bucket outside them gets no price until the tariff is
set again (docs/decisions.md, "Public holidays in SQL")."""

from __future__ import annotations

import functools
import re
from datetime import date, datetime

import holidays as calendars
import msgspec

from energy_platform.core.errors import InvalidInput

CALENDAR = re.compile(r"^(?P<country>[A-Z]{2})(?:-(?P<subdivision>[A-Za-z0-9]{1,10}))?$")
FIRST_YEAR = 2000
"""Holidays of a tariff without a start (all time) are stored from this year on: history a
household imports rarely goes further back. A tariff with a start gets them from its start."""
YEARS_AHEAD = 10
"""...and up to this many years after the current one (or the tariff's start, if later)."""


class Holidays(msgspec.Struct, frozen=True):
    """A calendar's public holidays over local years ``first``..``last`` (both inclusive)."""

    calendar: str
    first: int
    last: int
    days: list[date]
    names: list[str]


def known_calendar(calendar: str, field: str = "--holidays") -> tuple[str, str | None]:
    """The country and subdivision of a calendar the holidays package knows (NL, DE-BY), else
    400 naming ``field``."""
    match = CALENDAR.match(calendar)
    if match is None:
        raise InvalidInput(
            f"{field} {calendar[:40]!r}: a country code, or country-subdivision (NL, DE-BY)",
            field=field,
        )
    country, subdivision = match["country"], match["subdivision"]
    supported = calendars.list_supported_countries()
    if country not in supported:
        raise InvalidInput(
            f"{field} {calendar!r}: the holidays package knows no {country}", field=field
        )
    if subdivision is not None and subdivision not in supported[country]:
        known = ", ".join(supported[country]) or "none"
        raise InvalidInput(
            f"{field} {calendar!r}: {country} has no subdivision {subdivision!r} (known: {known})",
            field=field,
        )
    return country, subdivision


def public_holidays(calendar: str, since: datetime | None, today: date) -> Holidays:
    """The public holidays of ``calendar`` (a country, or country-subdivision, as the holidays
    package names them) for the years a tariff from ``since`` (None: all time) needs."""
    country, subdivision = known_calendar(calendar)
    # From the tariff's own start: a tariff from the far future needs no holidays of the years
    # before it, and the package computes every year asked for (NL's years 2000 to 2999 took
    # 1.7 s here; 2000 to a tariff of 8999 would be seven times that). ``since`` lies in the
    # calendar's range (core/bounds.py): at most 1970 to today's year, and ten years more.
    first = since.year if since is not None else FIRST_YEAR
    last = max(today.year, first) + YEARS_AHEAD
    found = _years(country, subdivision, first, last)
    return Holidays(calendar, first, last, [d for d, _ in found], [n for _, n in found])


def holidays_between(calendar: str, first: date, last: date) -> list[date]:
    """The public holidays of ``calendar`` from ``first`` to ``last`` (both inclusive), as
    what-if prices a range by them: only the range's years, each computed once a process (the
    package took 6.7 ms a call for CZ's twelve years of a tariff's span)."""
    country, subdivision = known_calendar(calendar)
    found = _years(country, subdivision, first.year, last.year)
    return [d for d, _ in found if first <= d <= last]


@functools.lru_cache(maxsize=256)
def _years(
    country: str, subdivision: str | None, first: int, last: int
) -> tuple[tuple[date, str], ...]:
    """Each public holiday of the years ``first``..``last`` with its name, in date order: the
    package's one computation, kept per process (its data does not change while it runs)."""
    found = calendars.country_holidays(country, subdiv=subdivision, years=range(first, last + 1))
    return tuple((day, str(found.get(day))) for day in sorted(found) if first <= day.year <= last)
