"""Local dates as the bill and what-if take them: ``YYYY-MM-DD`` on the calendar, within the
supported range (core/bounds.py), a range in order and of a bounded length."""

from __future__ import annotations

import re
from datetime import date

from energy_platform.core import bounds
from energy_platform.core.errors import InvalidInput

MAX_DAYS = 366
LOCAL_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def parse_local_date(value: str, name: str) -> date:
    """A ``YYYY-MM-DD`` calendar date within the calendar's range (core/bounds.py), else 400
    naming the parameter."""
    try:
        if LOCAL_DATE.match(value):
            return bounds.check_day(date.fromisoformat(value), name)
    except ValueError:
        pass
    raise InvalidInput(f"{name}: {value[:40]!r} is not a date (YYYY-MM-DD)", field=name)


def date_range(
    start: str, end: str, most: int = MAX_DAYS, names: tuple[str, str] = ("from", "to")
) -> tuple[date, date]:
    """The inclusive range [start, end]: in order and at most ``most`` days, else 400 naming
    ``names``."""
    first, last = parse_local_date(start, names[0]), parse_local_date(end, names[1])
    if first > last:
        raise InvalidInput(f"from ({first}) is after to ({last})", field=names[0])
    if (last - first).days + 1 > most:
        raise InvalidInput(f"at most {most} days: from {first} to {last} is more", field=names[1])
    return first, last
