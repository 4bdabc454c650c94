"""`energy-platform admin prices import/list` (CSV and ENTSO-E documents) and tariffs that follow
an area's prices: a file's gaps stay gaps until a later file prices them, a one-row file corrects
one slot, and a document gives the classification sequence asked for."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest

from energy_platform.billing.price_files import parse_prices
from energy_platform.core.settings import Settings
from tests.support.admin import admin_process, admin_refusal, run_admin
from tests.support.engine import Feed, NewFeed, process
from tests.support.entsoe import SAMPLE_DE_LU_2025_10_01, Period, Series, document

BERLIN = ZoneInfo("Europe/Berlin")
QUARTER = timedelta(minutes=15)
DAY_LONG = timedelta(days=1)
DAY = datetime(2026, 1, 15, tzinfo=UTC)
_areas = itertools.count(1)

WriteFile = Callable[..., str]


@pytest.fixture
def area() -> str:
    """An area of the test's own (the module's database is shared by its tests)."""
    return f"T{os.getpid()}-{next(_areas)}"


@pytest.fixture
def write(tmp_path: Path) -> WriteFile:
    names = itertools.count(1)

    def write(*lines: str) -> str:
        path = tmp_path / f"prices-{next(names)}.csv"
        path.write_text("".join(f"{line}\n" for line in lines))
        return str(path)

    return write


def quarter_hours(start: datetime, end: datetime) -> list[datetime]:
    return [start + QUARTER * i for i in range(int((end - start) / QUARTER))]


def rows(starts: list[datetime], price: Callable[[int], float] | float) -> list[str]:
    """CSV rows of ``starts``, priced by their number or all alike."""
    priced = price if callable(price) else lambda i: price
    return [f"{t.isoformat()},{priced(i)!r}" for i, t in enumerate(starts)]


async def set_up(settings: Settings, feed: Feed, area: str, file: str) -> None:
    """The area's first prices from ``file``, and the feed's tariff on them alone from 2026."""
    await run_admin(settings, "prices", "import", area, "--file", file)
    since = "2026-01-01T00:00:00Z"
    await run_admin(
        settings,
        "tariffs",
        "set",
        str(feed.id),
        "--medium",
        "power",
        "--from",
        since,
        "--area",
        area,
    )


async def power_at(feed: Feed, start: datetime, end: datetime) -> None:
    """1 kW on a clamp of channel 1 from ``start`` to ``end``, a sample every 30 s."""
    clamp = await feed.raw_stream(channel=1, medium=1)
    first, last = int(start.timestamp()), int(end.timestamp())
    await feed.ingest(clamp, [(t, 1000.0) for t in range(first, last + 1, 30)])


async def bill(api: httpx.AsyncClient, feed: Feed, first: str, last: str = "") -> Any:
    """The feed's bill of local dates [first, last] as its owner reads it."""
    answer = await api.get(
        f"/feeds/{feed.id}/bill",
        params={"from": first, "to": last or first},
        headers={"Authorization": f"Bearer {feed.owner_token}"},
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


async def listed(settings: Settings, area: str, since: str, until: str) -> Any:
    return await run_admin(settings, "prices", "list", area, "--from", since, "--to", until)


async def stored(settings: Settings, area: str) -> Any:
    """The area's prices of DAY as ``prices list`` answers them."""
    return await listed(settings, area, "2026-01-15T00:00:00Z", "2026-01-16T00:00:00Z")


async def test_a_day_of_quarter_hours_is_imported_and_listed_back(
    settings: Settings, area: str, write: WriteFile
) -> None:
    starts = quarter_hours(DAY, DAY + timedelta(days=1))
    file = write("start,price", *rows(starts, lambda i: i / 100))

    imported = await run_admin(settings, "prices", "import", area, "--file", file)
    day = await listed(settings, area, "2026-01-15T00:00:00Z", "2026-01-16T00:00:00Z")
    # [00:20, 00:40) overlaps the slots starting 00:15 and 00:30.
    part = await listed(settings, area, "2026-01-15T00:20:00Z", "2026-01-15T00:40:00Z")

    assert imported == {
        "area": area,
        "slots": 96,
        "changed": 96,
        "from": "2026-01-15T00:00:00+00:00",
        "to": "2026-01-16T00:00:00+00:00",
    }
    assert len(day) == 96
    assert day[0] == {
        "start": "2026-01-15T00:00:00+00:00",
        "end": "2026-01-15T00:15:00+00:00",
        "price": 0.0,
    }
    # The last slot is as long as the spacing before it: 23:45 to 24:00.
    assert day[-1] == {
        "start": "2026-01-15T23:45:00+00:00",
        "end": "2026-01-16T00:00:00+00:00",
        "price": 0.95,
    }
    assert [s["price"] for s in day] == [i / 100 for i in range(96)]
    assert [s["start"] for s in part] == ["2026-01-15T00:15:00+00:00", "2026-01-15T00:30:00+00:00"]


@pytest.mark.parametrize(
    ("date", "slots"),
    [
        # 02:00 CET becomes 03:00 CEST: a local day of 23 h, 23 x 4 = 92 quarter hours.
        ("2026-03-29", 92),
        # 03:00 CEST becomes 02:00 CET: 02:00 to 03:00 happens twice, 25 x 4 = 100.
        ("2026-10-25", 100),
    ],
)
async def test_a_daylight_saving_day_written_in_local_times_has_its_quarter_hours(
    settings: Settings, area: str, write: WriteFile, date: str, slots: int
) -> None:
    midnight = datetime.fromisoformat(date).replace(tzinfo=BERLIN)
    starts = quarter_hours(midnight.astimezone(UTC), (midnight + timedelta(days=1)).astimezone(UTC))
    local = [t.astimezone(BERLIN) for t in starts]  # written as +01:00 and +02:00
    file = write(*rows(local, lambda i: 0.1))

    imported = await run_admin(settings, "prices", "import", area, "--file", file)
    day = await listed(settings, area, local[0].isoformat(), f"{date}T23:59:59+01:00")

    assert imported["slots"] == slots
    assert len(day) == slots
    assert imported["from"] == midnight.astimezone(UTC).isoformat()
    assert day[-1]["end"] == (midnight + timedelta(days=1)).astimezone(UTC).isoformat()


async def test_prices_per_mwh_are_stored_per_kwh(
    settings: Settings, area: str, write: WriteFile
) -> None:
    file = write("2026-01-15T00:00:00Z,85.5", "2026-01-15T01:00:00Z,-12")

    await run_admin(settings, "prices", "import", area, "--file", file, "--per", "MWh")

    # 85.5 / 1000 and -12 / 1000 per kWh; the last slot is an hour long, as the one before.
    assert await listed(settings, area, "2026-01-15T00:00:00Z", "2026-01-16T00:00:00Z") == [
        {"start": "2026-01-15T00:00:00+00:00", "end": "2026-01-15T01:00:00+00:00", "price": 0.0855},
        {"start": "2026-01-15T01:00:00+00:00", "end": "2026-01-15T02:00:00+00:00", "price": -0.012},
    ]


async def test_importing_the_same_file_again_changes_nothing_and_a_new_price_one_slot(
    settings: Settings, area: str, write: WriteFile
) -> None:
    starts = quarter_hours(DAY, DAY + timedelta(hours=2))
    first = write(*rows(starts, lambda i: 0.2))
    corrected = write(*rows(starts, lambda i: 0.3 if i == 5 else 0.2))

    once = await run_admin(settings, "prices", "import", area, "--file", first)
    again = await run_admin(settings, "prices", "import", area, "--file", first)
    changed = await run_admin(settings, "prices", "import", area, "--file", corrected)

    assert (once["changed"], again["changed"], changed["changed"]) == (8, 0, 1)
    prices = await listed(settings, area, "2026-01-15T00:00:00Z", "2026-01-15T02:00:00Z")
    assert prices[5] == {
        "start": "2026-01-15T01:15:00+00:00",
        "end": "2026-01-15T01:30:00+00:00",
        "price": 0.3,
    }


GOOD = ["2026-01-15T00:00:00Z,9", "2026-01-15T00:15:00Z,9"]


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([*GOOD, "2026-01-15T00:30:00Z,nine"], "line 3: 'nine' is not a price"),
        ([*GOOD, "15.01.2026 00:30,9"], "line 3: '15.01.2026 00:30' is not an ISO 8601 time"),
        ([*GOOD, "2026-01-15T00:30:00,9"], "line 3: '2026-01-15T00:30:00' has no UTC offset"),
        ([*GOOD, "2026-01-15T00:30:00Z,NaN"], "line 3: 'NaN' is not a finite price"),
        ([*GOOD, "2026-01-15T00:30:00Z,inf"], "line 3: 'inf' is not a finite price"),
        # Beyond the bound of prices (core/bounds.py): the engine's cost would not carry it.
        (
            [*GOOD, "2026-01-15T00:30:00Z,1e300"],
            "line 3 (per kWh): 1e+300 is out of bounds: a price is at most 1e8 per kWh",
        ),
        # Back to a slot already in the file: it would overlap the first.
        ([*GOOD, "2026-01-15T00:05:00Z,9"], "line 3: 2026-01-15T00:05:00Z is not after"),
        (
            ["2026-01-15T00:00:00Z,9", "2026-01-15T00:01:00Z,9"],
            "line 1: its slot is 60 s long, not a multiple of 90 s",
        ),
        # Slots of 15 minutes, but the last one cuts the stored 00:30-00:45 at 00:31.
        (
            [*GOOD, "2026-01-15T00:31:00Z,9"],
            'the stored slot ["2026-01-15 00:30:00+00","2026-01-15 00:45:00+00") would keep '
            '["2026-01-15 00:30:00+00","2026-01-15 00:31:00+00") outside the new slots',
        ),
        # One row where no stored slot starts: nothing says how long its slot is.
        (
            ["2026-01-15T00:05:00Z,9"],
            "line 1: a single row says nothing of its slot's length, and the area has no slot "
            "starting then to replace: give --slot-minutes",
        ),
    ],
)
async def test_a_bad_file_is_refused_whole_with_its_line_and_nothing_changes(
    settings: Settings, area: str, write: WriteFile, lines: list[str], message: str
) -> None:
    starts = quarter_hours(DAY, DAY + timedelta(hours=1))
    await run_admin(settings, "prices", "import", area, "--file", write(*rows(starts, float)))
    before = await stored(settings, area)

    # The file's first rows are valid and would change two stored prices (0 and 1 to 9).
    refused = await admin_refusal(settings, "prices", "import", area, "--file", write(*lines))
    assert message in refused
    assert len(refused.strip().splitlines()) == 1
    assert await stored(settings, area) == before


async def test_an_entsoe_document_is_imported_and_listed_back(
    settings: Settings, area: str
) -> None:
    sample = str(SAMPLE_DE_LU_2025_10_01)

    imported = await run_admin(settings, "prices", "import", area, "--file", sample)
    # The Berlin day: 2025-10-01T00:00+02:00 to 2025-10-02T00:00+02:00.
    day = await listed(settings, area, "2025-09-30T22:00:00Z", "2025-10-01T22:00:00Z")

    assert imported == {
        "area": area,
        "slots": 96,
        "changed": 96,
        "from": "2025-09-30T22:00:00+00:00",
        "to": "2025-10-01T22:00:00+00:00",
    }
    assert day[0] == {
        "start": "2025-09-30T22:00:00+00:00",
        "end": "2025-09-30T22:15:00+00:00",
        "price": 84.66 / 1000,
    }
    # Positions 6 and 7 are left out of the document (curve type A03): position 5's price.
    assert [s["price"] for s in day[4:7]] == [86.08 / 1000] * 3
    assert day[-1] == {
        "start": "2025-10-01T21:45:00+00:00",
        "end": "2025-10-01T22:00:00+00:00",
        "price": 86.61 / 1000,  # position 96, left out too: 95's
    }
    assert day == [
        {"start": s.start.isoformat(), "end": s.end.isoformat(), "price": s.price}
        for s in parse_prices(SAMPLE_DE_LU_2025_10_01.read_text()).slots()
    ]
    # The sample is sequence 1 (SDAC): asking for it takes the same prices.
    again = await run_admin(settings, "prices", "import", area, "--file", sample, "--sequence", "1")
    assert (again["slots"], again["changed"]) == (96, 0)


async def test_a_document_of_two_sequences_gives_the_one_asked_for(
    settings: Settings, area: str, tmp_path: Path
) -> None:
    # DE-LU's day twice: SDAC's quarter hours (sequence 1) and EXAA's hours (sequence 2).
    end = DAY + timedelta(days=1)
    sdac = [(q + 1, str(40 + q % 4)) for q in range(96)]
    exaa = [(h + 1, str(90 + h)) for h in range(24)]
    file = tmp_path / "two-sequences.xml"
    file.write_text(
        document(
            Series([Period(DAY, end, "PT15M", sdac)], curve="A01", sequence=1),
            Series([Period(DAY, end, "PT60M", exaa)], curve="A01", sequence=2),
        )
    )

    imported = await run_admin(
        settings, "prices", "import", area, "--file", str(file), "--sequence", "2"
    )

    assert (imported["slots"], imported["from"], imported["to"]) == (
        24,
        "2026-01-15T00:00:00+00:00",
        "2026-01-16T00:00:00+00:00",
    )
    assert [(s["start"], s["end"], s["price"]) for s in await stored(settings, area)] == [
        (
            (DAY + timedelta(hours=h)).isoformat(),
            (DAY + timedelta(hours=h + 1)).isoformat(),
            (90 + h) / 1000,
        )
        for h in range(24)
    ]


async def test_a_one_row_file_corrects_the_slot_it_replaces_and_reprices_it(
    new_feed: NewFeed, api: httpx.AsyncClient, settings: Settings, area: str, write: WriteFile
) -> None:
    feed = await new_feed("UTC")
    await power_at(feed, DAY, DAY + timedelta(minutes=12))  # inside 00:00-00:15
    await set_up(settings, feed, area, write(*rows(quarter_hours(DAY, DAY + DAY_LONG), 0.20)))
    await process(feed.db)
    before = await bill(api, feed, "2026-01-15")

    corrected = await run_admin(
        settings, "prices", "import", area, "--file", write("2026-01-15T00:00:00Z,0.40")
    )
    await process(feed.db)
    after = await bill(api, feed, "2026-01-15")

    assert corrected == {
        "area": area,
        "slots": 1,
        "changed": 1,
        "from": "2026-01-15T00:00:00+00:00",
        "to": "2026-01-15T00:15:00+00:00",  # the quarter hour it replaces
    }
    day = await stored(settings, area)
    assert len(day) == 96
    assert day[0] == {
        "start": "2026-01-15T00:00:00+00:00",
        "end": "2026-01-15T00:15:00+00:00",
        "price": 0.40,
    }
    assert {s["price"] for s in day[1:]} == {0.20}
    used = before["lines"][0]["quantity"]
    assert used > 0
    assert (before["complete"], after["complete"]) == (True, True)
    assert before["lines"][0]["energy"] == pytest.approx(used * 0.20)
    assert after["lines"][0]["energy"] == pytest.approx(used * 0.40)


async def test_a_slot_inside_a_longer_stored_one_leaves_the_rest_of_it_priced(
    settings: Settings, area: str, write: WriteFile
) -> None:
    await run_admin(
        settings, "prices", "import", area, "--file",
        write("2026-01-15T00:00:00Z,0.1", "2026-01-15T01:00:00Z,0.2"),
    )  # fmt: skip

    # A quarter hour inside the first hour: the hour's other three quarters keep 0.1.
    corrected = await run_admin(
        settings, "prices", "import", area, "--file", write("2026-01-15T00:15:00Z,0.5"),
        "--slot-minutes", "15",
    )  # fmt: skip

    assert corrected["changed"] == 1
    assert [
        (s["start"][11:16], s["end"][11:16], s["price"]) for s in await stored(settings, area)
    ] == [
        ("00:00", "00:15", 0.1),
        ("00:15", "00:30", 0.5),
        ("00:30", "01:00", 0.1),
        ("01:00", "02:00", 0.2),
    ]


async def test_a_missing_day_stays_unpriced_until_imported_and_no_slot_loses_its_price(
    new_feed: NewFeed, api: httpx.AsyncClient, settings: Settings, area: str, write: WriteFile
) -> None:
    feed = await new_feed("UTC")
    jan_1 = datetime(2026, 1, 1, tzinfo=UTC)
    hours = [jan_1 + timedelta(hours=h) for h in range(72)]
    # Used in the last hour of 1 January, in the morning of the 2nd and the first hour of 3rd.
    for hour in (23, 34, 48):
        await power_at(feed, hours[hour], hours[hour] + timedelta(minutes=30))
    # Hours of 1 and 3 January, priced 0.10 and 0.30; the 2nd is missing from the file.
    await set_up(settings, feed, area, write(*rows(hours[:24], 0.10), *rows(hours[48:], 0.30)))
    await process(feed.db)
    gap = await listed(settings, area, "2026-01-01T00:00:00Z", "2026-01-04T00:00:00Z")
    before = {d: await bill(api, feed, d) for d in ("2026-01-01", "2026-01-02", "2026-01-03")}

    # The missing day arrives, priced 0.20.
    await run_admin(settings, "prices", "import", area, "--file", write(*rows(hours[24:48], 0.20)))
    await process(feed.db)
    full = await listed(settings, area, "2026-01-01T00:00:00Z", "2026-01-04T00:00:00Z")
    after = {d: await bill(api, feed, d) for d in ("2026-01-01", "2026-01-02", "2026-01-03")}
    whole = await bill(api, feed, "2026-01-01", "2026-01-03")

    # 1 January 23:00 is an hour long, not 25: the 2nd has no price, and its bill says so.
    assert len(gap) == 48
    assert gap[23] == {
        "start": "2026-01-01T23:00:00+00:00",
        "end": "2026-01-02T00:00:00+00:00",
        "price": 0.10,
    }
    assert [before[d]["complete"] for d in before] == [True, False, True]
    assert before["2026-01-02"]["lines"][0]["energy"] == 0.0
    # Then every hour of the three days has its price, 1 January 23:00 still 0.10.
    assert [(s["start"], s["end"], s["price"]) for s in full] == [
        (t.isoformat(), (t + timedelta(hours=1)).isoformat(), [0.10, 0.20, 0.30][i // 24])
        for i, t in enumerate(hours)
    ]
    assert [after[d]["complete"] for d in after] == [True, True, True]
    for day, price in zip(after, (0.10, 0.20, 0.30), strict=True):
        used = after[day]["lines"][0]["quantity"]
        assert used > 0
        assert after[day]["lines"][0]["energy"] == pytest.approx(used * price)
    assert after["2026-01-01"]["lines"] == before["2026-01-01"]["lines"]
    assert whole["complete"] is True
    assert whole["lines"][0]["energy"] == pytest.approx(
        sum(after[d]["lines"][0]["energy"] for d in after)
    )


@pytest.mark.parametrize(
    ("options", "content", "message"),
    [
        (
            (),
            document(
                Series([Period(DAY, DAY + timedelta(days=1), "PT60M", [(1, "9")])], sequence=1),
                Series([Period(DAY, DAY + timedelta(days=1), "PT15M", [(1, "8")])], sequence=2),
            ),
            "the document holds the classification sequences 1, 2 (DE-LU and AT: 1 is SDAC's "
            "auction, 2 EXAA's): choose one with --sequence",
        ),
        (
            ("--sequence", "3"),
            document(
                Series([Period(DAY, DAY + timedelta(days=1), "PT60M", [(1, "9")])], sequence=1),
                Series([Period(DAY, DAY + timedelta(days=1), "PT15M", [(1, "8")])], sequence=2),
            ),
            "--sequence 3: the document holds only sequences 1, 2",
        ),
        (
            ("--sequence", "2"),
            SAMPLE_DE_LU_2025_10_01.read_text(),
            "--sequence 2: the document holds only sequence 1",
        ),
        (
            ("--per", "kWh"),
            document(Series([Period(DAY, DAY + QUARTER, "PT15M", [(1, "9")])])),
            "--per kWh: an ENTSO-E document's prices are per MWh",
        ),
        # A row of 23 bytes and 9,999,978 blanks: 10,000,001 bytes, one over the limit.
        ((), "2026-01-15T00:00:00Z,9\n" + " " * 9_999_978, "over 10,000,000 bytes"),
    ],
)
async def test_a_bad_document_or_too_large_a_file_is_refused_whole_and_nothing_changes(
    settings: Settings,
    area: str,
    tmp_path: Path,
    options: tuple[str, ...],
    content: str,
    message: str,
) -> None:
    starts = quarter_hours(DAY, DAY + timedelta(hours=1))
    file = tmp_path / "day-ahead.xml"
    file.write_text(document(Series([Period(DAY, DAY + timedelta(hours=1), "PT15M", [(1, "1")])])))
    await run_admin(settings, "prices", "import", area, "--file", str(file))
    before = await stored(settings, area)
    file.write_text(content)

    refused = await admin_refusal(settings, "prices", "import", area, "--file", str(file), *options)

    assert len(before) == len(starts)
    assert message in refused
    assert len(refused.strip().splitlines()) == 1
    assert await stored(settings, area) == before


async def test_what_the_database_refuses_is_reported_with_the_area(
    settings: Settings, write: WriteFile
) -> None:
    refused = await admin_refusal(settings, "prices", "import", "no area", "--file", write(*GOOD))
    missing = await admin_refusal(
        settings, "prices", "list", "NOWHERE", "--from", "2026-01-01", "--to", "2027-01-01"
    )
    unreadable = await admin_refusal(
        settings, "prices", "import", "X", "--file", "/nonexistent.csv"
    )
    assert "price area 'no area': a name is letters, digits" in refused
    assert "no price area 'NOWHERE'" in missing
    assert "/nonexistent.csv: No such file or directory" in unreadable


async def test_a_tariff_on_an_area_prices_buckets_by_its_slots_and_a_corrected_price_reprices(
    new_feed: NewFeed, settings: Settings, area: str, write: WriteFile
) -> None:
    feed = await new_feed("UTC")
    fid = str(feed.id)
    clamp = await feed.raw_stream(channel=1, medium=1)
    t = int(DAY.timestamp())
    await feed.ingest(clamp, [(t + s, 1000.0) for s in range(0, 91, 5)])
    first = write("2026-01-15T00:00:00Z,0.20", "2026-01-15T00:15:00Z,0.20")
    corrected = write("2026-01-15T00:00:00Z,0.40", "2026-01-15T00:15:00Z,0.20")

    on_area = ("tariffs", "set", fid, "--medium", "power", "--from", "2026-01-01T00:00:00Z")
    no_prices = await admin_refusal(settings, *on_area, "--area", area)
    await run_admin(settings, "prices", "import", area, "--file", first)
    tariffs = await run_admin(
        settings, *on_area, "--area", area, "--factor", "1.19", "--price", "0.05"
    )
    await process(feed.db)
    priced = await feed.points("Electricity cost, channel 1")
    await run_admin(settings, "prices", "import", area, "--file", corrected)
    await process(feed.db)
    repriced = await feed.points("Electricity cost, channel 1")
    assert f"price area {area!r} has no prices" in no_prices
    assert tariffs == [
        {
            "medium": "power",
            "valid_from": "2026-01-01T00:00:00+00:00",
            "valid_to": None,
            "area": area,
            "factor": 1.19,
            "standing": 0.0,
            "bands": [{"starts": "00:00", "ends": "24:00", "price": 0.05}],
        }
    ]
    # 1000 W for 90 s = 25 Wh = 0.025 kWh, at 1.19 x 0.20 + 0.05 = 0.288, then at
    # 1.19 x 0.40 + 0.05 = 0.526.
    assert priced == {t: pytest.approx(0.025 * 0.288)}
    assert repriced == {t: pytest.approx(0.025 * 0.526)}


@pytest.mark.parametrize("minutes", ["0", "44641", "99999999999999999999"])
async def test_a_slot_length_outside_a_minute_to_31_days_is_refused_and_stores_nothing(
    settings: Settings, area: str, write: WriteFile, minutes: str
) -> None:
    file = write(*rows(quarter_hours(DAY, DAY + timedelta(hours=1)), 0.1))
    done = admin_process(
        settings.database.url, "prices", "import", area, "--file", file, "--slot-minutes", minutes
    )
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert "--slot-minutes" in done.stderr
    # Nothing stored: the area was never made.
    listing = await admin_refusal(
        settings, "prices", "list", area, "--from", "2026-01-15T00:00:00Z", "--to", "2026-01-16"
    )
    assert f"no price area '{area}'" in listing
