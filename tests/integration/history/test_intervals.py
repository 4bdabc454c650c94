"""History by the interval (issue 48, item 4): a portal's energy per quarter hour, imported with
``admin import --interval`` and ``POST .../data?interval=``, becomes an energy register's
readings (a running total: before each quarter the total so far, after it that plus the
quarter's Wh), chained file to file, unchanged when sent again, refused where the stream holds
readings already; read back as stored readings and as day totals through the data API."""

from __future__ import annotations

from itertools import accumulate
from pathlib import Path

import httpx
import pytest

from energy_platform.core.settings import Settings
from tests.support.admin import admin_refusal, run_admin
from tests.support.data import T0
from tests.support.engine import Feed, NewFeed, api_buckets, process
from tests.support.history import points_json, points_of, send

DAY, QUARTER = 86_400, 900
JAN_2, JAN_3, JAN_4 = T0 + DAY, T0 + 2 * DAY, T0 + 3 * DAY  # UTC midnights, bucket starts
ENERGY = "Electricity, channel 1"
COST = "Electricity cost, channel 1"
READER = "7"


def quarters(day: int, first: float = 100.0, last: float = 0.0) -> dict[int, float]:
    """A day's 96 quarter hours: {start: Wh used in it}, ``first`` and 25, 50, 75 Wh more in
    turn, and ``last`` in 23:45 to 24:00. Until a register's rise is spread over its gap (part
    B), a rise lands in the bucket of its later reading, and the last one of a stream (on a
    bucket's start) lies outside the register's span and counts nowhere: with 0 Wh there, a
    day's total is the same whether each quarter lands in its own buckets or the next's."""
    used = {day + n * QUARTER: first + (n % 4) * 25.0 for n in range(96)}
    return used | {day + 95 * QUARTER: last}


def register(used: dict[int, float], base: float = 0.0) -> dict[int, float]:
    """The readings ``used`` makes from ``base``: at each quarter's start the total before
    it, at its end the total after (contiguous quarters share their edge)."""
    starts = sorted(used)
    totals = list(accumulate((used[t] for t in starts), initial=base))
    return {**dict(zip(starts, totals, strict=False)), starts[-1] + QUARTER: totals[-1]}


def csv_file(tmp_path: Path, name: str, used: dict[int, float]) -> str:
    path = tmp_path / name
    path.write_text("time,value\n" + "".join(f"{t},{v}\n" for t, v in used.items()))
    return str(path)


async def imported(settings: Settings, feed: Feed, path: str) -> dict[str, object]:
    answer: dict[str, object] = await run_admin(
        settings, "import", str(feed.id), "--channel", "1", "--device", READER,
        "--medium", "22", "--interval", str(QUARTER), "--file", path,
    )  # fmt: skip
    return answer


async def days(api: httpx.AsyncClient, feed: Feed, title: str, first: int, last: int) -> float:
    """The stream's day totals summed from the day starting at ``first`` to the one at
    ``last``, as the data API answers its owner."""
    answer = await api_buckets(
        api, feed, await feed.stream_id(title), "day", time_from=first, time_to=last
    )
    return sum(v for _, v in answer)


async def test_a_portals_quarter_hours_become_a_registers_readings_chained_file_to_file(
    new_feed: NewFeed, settings: Settings, api: httpx.AsyncClient, tmp_path: Path
) -> None:
    feed = await new_feed("UTC")
    jan_2, jan_3 = quarters(JAN_2), quarters(JAN_3, first=200.0)
    day_2 = sum(jan_2.values())  # 24 * (100 + 125 + 150 + 175) - 175 = 13,025 Wh
    day_3 = sum(jan_3.values())  # 24 * (200 + 225 + 250 + 275) - 275 = 22,525 Wh
    assert (day_2, day_3) == (13_025, 22_525)

    first = await imported(settings, feed, csv_file(tmp_path, "jan-2.csv", jan_2))
    stream = int(str(first["stream"]))
    assert (first["inserted"], first["replaced"], first["unchanged"]) == (97, 0, 0)
    # Nothing before it: the total starts at 0 at 00:00 and is 13,025 Wh at 24:00.
    assert await points_of(feed.db, stream) == register(jan_2)

    # The next day's file goes on from the stored total at its first start (which it finds
    # there, unchanged); the first file sent again changes nothing and records nothing.
    second = await imported(settings, feed, csv_file(tmp_path, "jan-3.csv", jan_3))
    assert (second["inserted"], second["unchanged"]) == (96, 1)
    again = await imported(settings, feed, csv_file(tmp_path, "jan-2.csv", jan_2))
    assert (again["inserted"], again["replaced"], again["unchanged"], again["correction"]) == (
        0, 0, 97, None,
    )  # fmt: skip
    assert await points_of(feed.db, stream) == {
        **register(jan_2),
        **register(jan_3, base=day_2),
    }

    await process(feed.db)
    # Each day's quarters, through the data API: the register's rise over the day.
    assert await days(api, feed, ENERGY, JAN_2, JAN_2) == pytest.approx(day_2)
    assert await days(api, feed, ENERGY, JAN_3, JAN_3) == pytest.approx(day_3)

    # Over HTTP with ?interval=, as the admin command: a third day, chained on.
    jan_4 = quarters(JAN_4, first=50.0)
    sent = await send(
        api, feed, stream, points_json(list(jan_4.items())), "application/json",
        interval=QUARTER,
    )  # fmt: skip
    assert sent.status_code == 200, sent.text
    assert (sent.json()["inserted"], sent.json()["unchanged"]) == (96, 1)
    assert await points_of(feed.db, stream) == {
        **register(jan_2),
        **register(jan_3, base=day_2),
        **register(jan_4, base=day_2 + day_3),
    }
    await process(feed.db)
    assert await days(api, feed, ENERGY, JAN_4, JAN_4) == pytest.approx(sum(jan_4.values()))
    assert await days(api, feed, ENERGY, JAN_2, JAN_3) == pytest.approx(day_2 + day_3)


async def test_intervals_over_stored_readings_are_refused_naming_them_and_nothing_changes(
    new_feed: NewFeed, settings: Settings, api: httpx.AsyncClient, tmp_path: Path
) -> None:
    feed = await new_feed("UTC")
    jan_2 = quarters(JAN_2)
    stream = int(
        str((await imported(settings, feed, csv_file(tmp_path, "a.csv", jan_2)))["stream"])
    )
    stored = await points_of(feed.db, stream)

    # 12:00 to 13:00 again with other values: the total at 12:00 is the stored one, the
    # readings from 12:15 to 13:00 would differ.
    noon = {JAN_2 + 12 * 3600 + n * QUARTER: 300.0 for n in range(4)}
    refused = await admin_refusal(
        settings, "import", str(feed.id), "--channel", "1", "--device", READER,
        "--medium", "22", "--interval", str(QUARTER), "--file", csv_file(tmp_path, "b.csv", noon),
    )  # fmt: skip
    assert "from 2026-01-02T12:00:00+00:00 to 2026-01-02T13:00:00+00:00 meet 4 stored" in refused
    assert "from 2026-01-02T12:15:00+00:00 to 2026-01-02T13:00:00+00:00: import only" in refused
    answer = await send(
        api, feed, stream, points_json(list(noon.items())), "application/json", interval=QUARTER
    )
    assert answer.status_code == 400, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert "meet 4 stored readings" in answer.json()["detail"]
    assert await points_of(feed.db, stream) == stored

    # Intervals that overlap each other, a negative energy, power's medium: 400 too.
    overlapping = [(JAN_3, 1.0), (JAN_3 + 600, 1.0)]
    negative = [(JAN_3, -1.0)]
    for body, says in ((overlapping, "overlap"), (negative, "a register counts up")):
        answer = await send(
            api, feed, stream, points_json(body), "application/json", interval=QUARTER
        )
        assert (answer.status_code, says in answer.json()["detail"]) == (400, True), answer.text
    clamp = await feed.raw_stream(channel=2, medium=1)
    answer = await send(
        api, feed, clamp, points_json(negative), "application/json", interval=QUARTER
    )
    assert answer.status_code == 400
    assert "energy register (medium 22 or 23)" in answer.json()["detail"]
    assert await points_of(feed.db, stream) == stored


async def test_history_before_a_meters_live_readings_ends_where_they_begin(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("UTC")
    # The meter's own readings from Jan 3 on (8,123,456 Wh on its register), then the portal's
    # Jan 2 imported: the total is anchored to end at the meter's first reading, so the day
    # is its quarters' energy, not a jump of the whole register.
    stream = await feed.raw_stream(channel=1, medium=22, device=int(READER))
    await feed.ingest(stream, [(JAN_3, 8_123_456.0), (JAN_3 + 60, 8_123_466.0)])
    jan_2 = quarters(JAN_2)
    sent = await send(
        api, feed, stream, points_json(list(jan_2.items())), "application/json", interval=QUARTER
    )
    assert sent.status_code == 200, sent.text
    day_2 = sum(jan_2.values())
    readings = await points_of(feed.db, stream)
    assert readings[JAN_2] == 8_123_456.0 - day_2
    assert readings[JAN_3] == 8_123_456.0  # the meter's own reading, unchanged
    assert (sent.json()["inserted"], sent.json()["unchanged"]) == (96, 1)

    await process(feed.db)
    assert await days(api, feed, ENERGY, JAN_2, JAN_2) == pytest.approx(day_2)
    assert await days(api, feed, ENERGY, JAN_3, JAN_3) == pytest.approx(10.0)  # the meter's


async def test_each_quarter_is_priced_at_its_own_slot(
    new_feed: NewFeed, settings: Settings, api: httpx.AsyncClient, tmp_path: Path
) -> None:
    feed = await new_feed("UTC")
    # Quarter hours priced 0.10 and 0.50 per kWh in turn.
    prices = [0.10 if n % 2 == 0 else 0.50 for n in range(96)]
    bands = [f"--band={n // 4:02}:{n % 4 * 15:02}={price}" for n, price in enumerate(prices)]
    await run_admin(settings, "tariffs", "set", str(feed.id), "--medium", "power",
                    "--from", "2026-01-01T00:00:00Z", *bands)  # fmt: skip
    jan_2 = quarters(JAN_2, last=175.0)
    await imported(settings, feed, csv_file(tmp_path, "jan-2.csv", jan_2))
    await process(feed.db)

    # Each quarter's energy in its own quarter, of its own day, at its own price.
    assert await days(api, feed, ENERGY, JAN_2, JAN_2) == pytest.approx(sum(jan_2.values()))
    expected = sum(wh / 1000 * price for wh, price in zip(jan_2.values(), prices, strict=True))
    assert await days(api, feed, COST, JAN_2, JAN_2) == pytest.approx(expected)
