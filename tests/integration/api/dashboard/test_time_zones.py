"""The page's time-zone arithmetic (static/js/time.js, series.js) run in the browser and checked
against Python's zoneinfo: offsets around every 2026 transition, typed wall times, local days
of 23 and 25 hours summed whole, and the local dates, months and midnights the money panels
ask for."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from tests.support.browser import chromium
from tests.support.page import PageWorld

# Whole-hour DST (Prague), a half-hour zone without DST (Kolkata), a half-hour DST shift
# (Lord Howe), a -3:30 zone with DST (St John's).
ZONES = ("Europe/Prague", "Asia/Kolkata", "Australia/Lord_Howe", "America/St_Johns")
YEAR = int(datetime(2026, 1, 1, tzinfo=UTC).timestamp())

RUN = """
const [cases, walls, hours, done] = arguments;
const modules = [import('/static/js/time.js'), import('/static/js/series.js')];
Promise.all(modules).then(([time, series]) => {
  const offsets = cases.map(([zone, t]) => time.offsetAt(zone, t));
  const cached = cases.map(([zone, t]) => time.offsetsOf(zone)(t));
  const typed = walls.map(([zone, wall]) => time.wallToUnix(zone, wall));
  const shown = walls.map(([zone, wall]) => time.unixToWall(zone, time.wallToUnix(zone, wall)));
  const prague = time.offsetsOf('Europe/Prague');
  const days = series.bucketed(hours, hours.map(() => 1), 86400, prague, true);
  done({ offsets, cached, typed, shown, days });
}).catch((error) => done(String(error)));
"""


def offset(zone: str, t: int) -> int:
    return int(datetime.fromtimestamp(t, ZoneInfo(zone)).utcoffset().total_seconds())  # type: ignore[union-attr]


def instants() -> list[tuple[str, int]]:
    """Every 15 minutes of each day in 2026 on which the zone's offset changes, and each noon."""
    cases = []
    for zone in ZONES:
        for day in range(365):
            start = YEAR + day * 86_400
            cases.append((zone, start + 43_200))
            if offset(zone, start) != offset(zone, start + 86_400):
                cases += [(zone, start + k * 900) for k in range(96)]
    return cases


def browse(url: str, cases: list[Any], walls: list[Any], hours: list[int]) -> Any:
    with chromium() as driver:
        driver.get(url + "/")
        return driver.execute_async_script(RUN, cases, walls, hours)


async def test_offsets_wall_times_and_local_days_follow_the_zone(page_world: PageWorld) -> None:
    cases = instants()
    prague = ZoneInfo("Europe/Prague")
    walls = [
        ("Europe/Prague", "2026-01-15T08:30:00"),
        ("Europe/Prague", "2026-07-15T08:30:00"),
        ("Asia/Kolkata", "2026-07-15T08:30"),
        ("Australia/Lord_Howe", "2026-01-15T23:59:59"),
        ("Europe/Prague", "2026-03-29T02:30:00"),  # skipped by the clocks: resolves forward
        ("Europe/Prague", "2026-10-25T02:30:00"),  # happens twice: the later one
    ]
    # Every hour of three local days around each of Prague's 2026 transitions.
    spring = int(datetime(2026, 3, 28, tzinfo=prague).timestamp())
    autumn = int(datetime(2026, 10, 24, tzinfo=prague).timestamp())
    hours = [spring + h * 3600 for h in range(3 * 24)] + [autumn + h * 3600 for h in range(3 * 24)]

    seen = await asyncio.to_thread(browse, page_world.url, cases, walls, hours)

    assert not isinstance(seen, str), seen
    expected = [offset(zone, t) for zone, t in cases]
    assert seen["offsets"] == expected
    assert seen["cached"] == expected
    # PEP 495: fold=0 reads a skipped time with the offset before the change (forward, 02:30
    # CET = 03:30 CEST); fold=1 picks the later of a time that happens twice.
    folds = [0, 0, 0, 0, 0, 1]
    expected_typed = [
        int(datetime.fromisoformat(wall).replace(tzinfo=ZoneInfo(zone), fold=fold).timestamp())
        for (zone, wall), fold in zip(walls, folds, strict=True)
    ]
    assert seen["typed"] == expected_typed
    assert seen["shown"][:4] == [
        "2026-01-15T08:30:00",
        "2026-07-15T08:30:00",
        "2026-07-15T08:30:00",
        "2026-01-15T23:59:59",
    ]
    assert seen["shown"][4:] == ["2026-03-29T03:30:00", "2026-10-25T02:30:00"]
    # 72 hours from local midnight of 28 March: 24 + 23 (29 March) + 24 + 1 into 31 March;
    # 72 from 24 October: 24 + 25 (25 October) + 23 into 26 October.
    days = [(3, 28), (3, 29), (3, 30), (3, 31), (10, 24), (10, 25), (10, 26)]
    midnights = [int(datetime(2026, m, d, tzinfo=prague).timestamp()) for m, d in days]
    assert seen["days"]["times"] == midnights
    assert seen["days"]["values"] == [24, 23, 24, 1, 24, 25, 23]


DATES = """
const [instants, shifts, months, midnights, done] = arguments;
import('/static/js/time.js').then((time) => done({
  dates: instants.map(([zone, t]) => time.localDate(zone, t)),
  shifted: shifts.map(([date, days]) => time.addDays(date, days)),
  months: months.map((date) => time.monthOf(date)),
  midnights: midnights.map(([zone, date]) => time.midnight(zone, date)),
})).catch((error) => done(String(error)));
"""


def browse_dates(url: str, *cases: list[Any]) -> Any:
    with chromium() as driver:
        driver.get(url + "/")
        return driver.execute_async_script(DATES, *cases)


async def test_local_dates_months_and_midnights_follow_the_zone(page_world: PageWorld) -> None:
    # A second either side of local midnight in zones far from UTC, and of New Year.
    instants = [
        (zone, int(datetime(2026, 12, 31, tzinfo=ZoneInfo(zone)).timestamp()) + delta)
        for zone in ("Pacific/Kiritimati", "Pacific/Pago_Pago", "Asia/Kolkata", "UTC")
        for delta in (-1, 0, 86_400 - 1, 86_400)
    ]
    shifts = [("2026-12-31", 1), ("2028-02-28", 1), ("2026-03-01", -1), ("2026-10-25", 2)]
    months = ["2028-02-10", "2026-02-28", "2026-12-01", "2026-04-30"]
    # Santiago's clocks skip its midnight of 6 September 2026: that day starts at 01:00 -03.
    midnights = [
        ("America/Santiago", "2026-09-06"),
        ("America/Santiago", "2026-09-07"),
        ("Europe/Prague", "2026-10-25"),
        ("Pacific/Kiritimati", "2026-11-01"),
    ]

    seen = await asyncio.to_thread(
        browse_dates, page_world.url, instants, shifts, months, midnights
    )

    assert not isinstance(seen, str), seen
    assert seen["dates"] == [
        datetime.fromtimestamp(t, ZoneInfo(zone)).date().isoformat() for zone, t in instants
    ]
    assert seen["shifted"] == ["2027-01-01", "2028-02-29", "2026-02-28", "2026-10-27"]
    assert seen["months"] == [
        {"first": "2028-02-01", "last": "2028-02-29"},
        {"first": "2026-02-01", "last": "2026-02-28"},
        {"first": "2026-12-01", "last": "2026-12-31"},
        {"first": "2026-04-01", "last": "2026-04-30"},
    ]
    # zoneinfo reads a skipped wall time with the offset before the change (PEP 495, fold=0):
    # 00:00 -04 is the instant of 01:00 -03, the day's first.
    assert seen["midnights"] == [
        int(datetime.fromisoformat(date).replace(tzinfo=ZoneInfo(zone)).timestamp())
        for zone, date in midnights
    ]
    assert seen["midnights"][0] == 1_788_667_200
