"""Energy meters the whole way (issue 37): readings sent as the devices send them (a homebase's
meter reader over MQTT, a CoAP meter posting record by record), stored by the real ingest,
processed by the engine and read back through the real data API as the feed's owner, per 90 s
bucket and per local hour, day and month.

Every expectation comes from the readings sent (docs/engine.md#registers-wh): over a span
between two readings on bucket edges, without a reset, a register's points add up to the
difference of the readings (1e-9 relative). Each scenario is a local day of Europe/Prague some
days ago (an hour for the CoAP meter), 10 s readings on bucket edges."""

from __future__ import annotations

import asyncio
import itertools
import math
import random
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import aiocoap
import asyncpg
import httpx
import msgspec
import pytest

from energy_platform.core.codec.format_v4 import MAX_PAYLOAD_BYTES, MAX_RECORDS, HomebaseRecord
from energy_platform.core.settings import Settings
from energy_platform.devices.simulator.homebase import SimulatedHomebase
from tests.support.coap import device, post
from tests.support.engine import process
from tests.support.platform import (
    Platform,
    paired_homebase,
    platform_in_loop,
    platform_settings,
    publish_as,
    with_cluster,
)
from tests.support.services import eventually

PRAGUE = ZoneInfo("Europe/Prague")
METER_READER, COAP_METER = 7, 9  # device IDs (docs/devices.md)
STEP = 10  # seconds between a meter's readings
BUCKET, HOUR = 90, 3600
ENERGY = "Electricity, channel 0"
EXPORT = "Electricity export, channel 0"

RAW_POINTS = """
SELECT count(*) FROM cluster.raw_points p JOIN cluster.streams s ON s.id = p.stream_id
 WHERE s.feed_id = $1"""
ROW_TIER_POINTS = """
SELECT (SELECT count(*) FROM cluster.raw_points p JOIN cluster.streams s ON s.id = p.stream_id
         WHERE s.feed_id = $1)
     + (SELECT count(*) FROM cluster.processed_points p JOIN cluster.streams s
            ON s.id = p.stream_id
         WHERE s.feed_id = $1)"""
COMPACT_DAY = """
SELECT sum(cluster.compact_day(id, $2)) FROM cluster.streams WHERE feed_id = $1"""


@pytest.fixture(scope="module")
async def platform(settings: Settings, mqtt_url: str) -> AsyncIterator[Platform]:
    """The platform of tests/conftest.py, but a CoAP meter may post an hour of readings at once:
    the test replays within seconds what the meter sent over an hour (60 a minute at most)."""
    s = platform_settings(settings, mqtt_url, coap_requests_per_minute=60_000, coap_burst=1_000)
    async with platform_in_loop(await with_cluster(s)) as served:
        yield served


# ---- Time: local days, hours and months of Europe/Prague -----------------------------------


def midnights(days_ago: int, days: int = 1) -> list[int]:
    """The local midnight ``days_ago`` days before today and the ``days`` after it, Unix
    seconds (23 to 25 hours apart; each a 90 s bucket start, as every whole local hour is)."""
    first = datetime.now(PRAGUE).date() - timedelta(days=days_ago)
    dates = (first + timedelta(days=n) for n in range(days + 1))
    return [int(datetime(d.year, d.month, d.day, tzinfo=PRAGUE).timestamp()) for d in dates]


def at(midnight: int, hour: int, minute: int = 0, second: int = 0) -> int:
    """The local time ``hour:minute:second`` of the day starting at ``midnight``."""
    local = datetime.fromtimestamp(midnight, PRAGUE)
    return int(local.replace(hour=hour, minute=minute, second=second).timestamp())


def months(days: dict[int, float]) -> dict[int, float]:
    """Day totals summed per local month, keyed by the month's first midnight."""
    out: dict[int, float] = {}
    for t, value in days.items():
        local = datetime.fromtimestamp(t, PRAGUE)
        month = int(datetime(local.year, local.month, 1, tzinfo=PRAGUE).timestamp())
        out[month] = out.get(month, 0.0) + value
    return out


# ---- The meters: a household's power and the registers that count it ----------------------


@dataclass
class MeterReadings:
    """What a meter sees at each of ``times``: the power taken from and fed into the grid (W),
    and the energy of each step to the next reading as its registers count it (Wh)."""

    times: list[int]
    taken: list[float]
    fed: list[float]
    taken_steps: list[float]
    fed_steps: list[float]


def meter_readings(
    start: int, end: int, seed: int, *, pv_peak: float = 0.0, step: int = STEP
) -> MeterReadings:
    """A load of 200 to 1000 W and, with ``pv_peak``, a PV plant producing from 06:00 to 20:00
    local time, most at 13:00; read every ``step`` s from ``start`` to ``end`` (both included).
    The registers count the true energy, which the power samples miss: they read 0 to 4 % low,
    so a test tells a register's Wh from the power's."""
    rng = random.Random(seed)  # noqa: S311 - a fixed sample, not a secret
    times = list(range(start, end + 1, step))
    taken, fed = [], []
    for t in times:
        local = datetime.fromtimestamp(t, PRAGUE)
        hour = local.hour + local.minute / 60 + local.second / 3600
        sun = pv_peak * max(0.0, math.sin(math.pi * (hour - 6) / 14))
        net = rng.uniform(200.0, 1000.0) - sun
        taken.append(max(net, 0.0))
        fed.append(max(-net, 0.0))

    def steps(watts: list[float]) -> list[float]:
        return [
            (a + b) / 2 * step / 3600 * rng.uniform(1.0, 1.04) for a, b in itertools.pairwise(watts)
        ]

    return MeterReadings(times, taken, fed, steps(taken), steps(fed))


def count(first: float, steps: Sequence[float]) -> list[float]:
    """A register's readings: ``first``, then ``first`` plus each step in turn."""
    readings = [first]
    for rise in steps:
        readings.append(readings[-1] + rise)
    return readings


def rises(readings: dict[int, float], start: int, end: int, width: int) -> dict[int, float]:
    """What a register read at every ``width`` s from ``start`` to ``end`` rose in each span
    [t, t + width): its 90 s buckets or its hours."""
    return {t: readings[t + width] - readings[t] for t in range(start, end, width)}


def integral(samples: dict[int, float], start: int, end: int, width: int) -> dict[int, float]:
    """The trapezoids of power samples taken every 10 s from ``start`` to ``end``, Wh, per span
    [t, t + width)."""
    return {
        t: sum(
            (samples[s] + samples[s + STEP]) / 2 * STEP / 3600 for s in range(t, t + width, STEP)
        )
        for t in range(start, end, width)
    }


def added(*spans: dict[int, float]) -> dict[int, float]:
    """Spans of several registers summed per start (a combined stream)."""
    return {t: sum(span[t] for span in spans) for t in spans[0]}


# ---- Through ingest ------------------------------------------------------------------------


def reading(t: int, codes: dict[str, float]) -> HomebaseRecord:
    """One record of the homebase's meter reader (device 7) on channel 0."""
    return HomebaseRecord(f=4, t=t, d=METER_READER, ch=0, uniq=0x7A01, o=codes)


async def publish(
    platform: Platform, sn: str, secret: bytes, records: list[HomebaseRecord]
) -> None:
    """``records`` published as homebase ``sn`` sends them, in as few messages as ingest takes
    (at most 20,000 records and 1 MiB each)."""
    homebase = SimulatedHomebase(sn, secret)
    size = len(msgspec.json.encode(records))
    messages = max(
        math.ceil(len(records) / MAX_RECORDS), math.ceil(size / (0.9 * MAX_PAYLOAD_BYTES))
    )
    per = math.ceil(len(records) / messages)
    for first in range(0, len(records), per):
        payload = homebase.encrypt(records[first : first + per])
        assert len(payload) <= MAX_PAYLOAD_BYTES
        await publish_as(platform, sn, secret, payload)


async def stored(db: asyncpg.Connection, feed: int, points: int) -> None:
    """Wait until ingest has stored ``points`` raw points of ``feed``, and no more."""

    async def done() -> bool:
        return bool(await db.fetchval(RAW_POINTS, feed) >= points)

    await eventually(done, within=60)
    assert await db.fetchval(RAW_POINTS, feed) == points


async def meter_reads(
    platform: Platform,
    db: asyncpg.Connection,
    sn: str,
    secret: bytes,
    feed: int,
    times: Sequence[int],
    codes: dict[str, Sequence[float]],
) -> None:
    """Every code's reading at each of ``times`` sent by the meter reader, stored by ingest and
    processed by the engine."""
    records = [reading(t, {c: v[i] for c, v in codes.items()}) for i, t in enumerate(times)]
    await publish(platform, sn, secret, records)
    await stored(db, feed, len(times) * len(codes))
    await process(db)


# ---- Through the data API ------------------------------------------------------------------


@dataclass
class Answers:
    """A feed's processed streams as the data API answers their owner."""

    api: httpx.AsyncClient
    feed: int
    ids: dict[str, str]
    """Stream ids by title."""

    async def __call__(self, title: str, resolution: str | None = None) -> dict[int, float]:
        """The stream's 90 s points, or its buckets per ``resolution``: {start: value}."""
        params: dict[str, Any] = {"limit": 100_000}
        if resolution is not None:
            params["resolution"] = resolution
        answer = await self.api.get(
            f"/feeds/{self.feed}/streams/{self.ids[title]}/data", params=params
        )
        assert answer.status_code == 200, answer.text
        return {t: value for t, value in answer.json()}

    async def every_resolution(self, title: str) -> dict[str | None, dict[int, float]]:
        """The stream's points, hours, days and months, by ``resolution``."""
        return {r: await self(title, r) for r in (None, "hour", "day", "month")}


async def answers(api: httpx.AsyncClient, feed: int) -> Answers:
    listed = await api.get(f"/feeds/{feed}/streams", params={"type": "processed"})
    assert listed.status_code == 200, listed.text
    return Answers(api, feed, {s["configs"][0]["title"]: s["id"] for s in listed.json()})


def close(expected: dict[int, float]) -> Any:
    """Equal keys, and values to 1e-9 relative (or 1e-6 Wh, for buckets that rose by little:
    a difference of two readings in the millions keeps 1e-9 Wh of their rounding)."""
    return pytest.approx(expected, rel=1e-9, abs=1e-6)


async def assert_reads(
    read: Answers,
    title: str,
    buckets: dict[int, float],
    hours: dict[int, float],
    days: dict[int, float],
) -> None:
    """The stream answers ``buckets`` per 90 s, ``hours``, ``days`` and their months."""
    assert await read(title) == close(buckets), title
    assert await read(title, "hour") == close(hours), title
    assert await read(title, "day") == close(days), title
    assert await read(title, "month") == close(months(days)), title


def costs(*titles: str) -> set[str]:
    """The cost stream beside each consumption stream."""
    return {title.replace("Electricity", "Electricity cost") for title in titles}


def credits(*titles: str) -> set[str]:
    """The credit stream beside each export stream."""
    return {title.replace("Electricity export", "Electricity export credit") for title in titles}


# ---- The scenarios --------------------------------------------------------------------------


async def test_a_german_meter_over_coap_reads_back_as_its_register_differences(
    platform: Platform, coap: aiocoap.Context, db: asyncpg.Connection
) -> None:
    sn = await device(platform)
    feed: int = await db.fetchval("SELECT id FROM cluster.feeds WHERE homebase_sn = $1", sn)
    midnight, _ = midnights(3)
    first, last = at(midnight, 10, 30), at(midnight, 11, 30)
    home = meter_readings(first, last, seed=1)
    meter = dict(zip(home.times, count(8_123_456.7, home.taken_steps), strict=True))
    # One record a POST (1-0:1.8.0 only), as the meter sends them; 30 in flight at a time.
    sent = list(meter.items())
    for group in (sent[i : i + 30] for i in range(0, len(sent), 30)):
        codes = await asyncio.gather(
            *(
                post(
                    coap,
                    platform,
                    f"data/{sn}",
                    msgspec.json.encode({"f": 4, "t": t, "d": COAP_METER, "o": {"1.8.0": v}}),
                )
                for t, v in group
            )
        )
        assert codes == [aiocoap.CHANGED] * len(group)
    await stored(db, feed, len(meter))

    await process(db)

    async with platform.client() as api:
        read = await answers(api, feed)
        assert set(read.ids) == {ENERGY, *costs(ENERGY)}
        eleven = at(midnight, 11)
        await assert_reads(
            read,
            ENERGY,
            # 40 buckets from 10:30 to 11:30, each the rise between the readings on its edges;
            # the last reading (11:30, a bucket start) leaves its bucket out.
            rises(meter, first, last, BUCKET),
            # Half an hour in the 10:00 hour, half in the 11:00 one.
            {at(midnight, 10): meter[eleven] - meter[first], eleven: meter[last] - meter[eleven]},
            {midnight: meter[last] - meter[first]},
        )
        points = await read(ENERGY)
    assert sum(points.values()) == pytest.approx(meter[last] - meter[first], rel=1e-9)


async def test_a_dsmr_meter_keeps_tariffs_phases_import_and_export_apart(
    platform: Platform, db: asyncpg.Connection
) -> None:
    sn, secret, feed_id = await paired_homebase(platform)
    feed = int(str(feed_id))
    start, end = midnights(3)
    home = meter_readings(start, end, seed=2, pv_peak=3000.0)
    # Tariff 2 (normal) from 07:00 to 21:00, tariff 1 (low) at night: each register counts the
    # steps that start in its tariff's hours.
    day_tariff = range(at(start, 7), at(start, 21))

    def in_tariff(steps: list[float], tariff: int) -> list[float]:
        return [
            rise if (t in day_tariff) == (tariff == 2) else 0.0
            for t, rise in zip(home.times, steps, strict=False)
        ]

    registers = {
        "1.8.1": count(1_234_567.8, in_tariff(home.taken_steps, 1)),
        "1.8.2": count(2_345_678.9, in_tariff(home.taken_steps, 2)),
        "2.8.1": count(45_678.9, in_tariff(home.fed_steps, 1)),
        "2.8.2": count(567_890.1, in_tariff(home.fed_steps, 2)),
    }
    # Power in total and per phase (half, 30 % and 20 % of it on L1, L2, L3).
    powers = {"1.7.0": home.taken, "2.7.0": home.fed}
    for code, share in (("21.7.0", 0.5), ("41.7.0", 0.3), ("61.7.0", 0.2)):
        powers[code] = [w * share for w in home.taken]
    codes = {**registers, **powers}
    await meter_reads(platform, db, sn, secret, feed, home.times, codes)

    by_time = {c: dict(zip(home.times, v, strict=True)) for c, v in codes.items()}

    def register(*codes: str, width: int) -> dict[int, float]:
        return added(*(rises(by_time[c], start, end, width) for c in codes))

    def power(code: str, width: int) -> dict[int, float]:
        return integral(by_time[code], start, end, width)

    def difference(*codes: str) -> float:
        return sum(by_time[c][end] - by_time[c][start] for c in codes)

    tariffs = [f"{ENERGY}, tariff 1", f"{ENERGY}, tariff 2"]
    phases = [f"{ENERGY}, L{n}" for n in (1, 2, 3)]
    total = f"{ENERGY}, total"
    async with platform.client() as api:
        read = await answers(api, feed)
        assert set(read.ids) == {
            ENERGY,
            *tariffs,
            *phases,
            total,
            *costs(ENERGY, *tariffs, *phases, total),
            EXPORT,
            f"{EXPORT}, tariff 1",
            f"{EXPORT}, tariff 2",
            f"{EXPORT}, total",
            *credits(EXPORT, f"{EXPORT}, tariff 1", f"{EXPORT}, tariff 2", f"{EXPORT}, total"),
        }
        # Each tariff register, import and export, is a stream of its own: its rises (tariff
        # 1's from 07:00 to 21:00 are 0 in every bucket and hour, tariff 2's at night).
        for title, code in (
            (tariffs[0], "1.8.1"),
            (tariffs[1], "1.8.2"),
            (f"{EXPORT}, tariff 1", "2.8.1"),
            (f"{EXPORT}, tariff 2", "2.8.2"),
        ):
            await assert_reads(
                read,
                title,
                register(code, width=BUCKET),
                register(code, width=HOUR),
                {start: difference(code)},
            )
        # The totals are both tariff registers', import and export each on its own: never the
        # phases' (2 % less here), never the other direction's.
        await assert_reads(
            read,
            total,
            register("1.8.1", "1.8.2", width=BUCKET),
            register("1.8.1", "1.8.2", width=HOUR),
            {start: difference("1.8.1", "1.8.2")},
        )
        await assert_reads(
            read,
            f"{EXPORT}, total",
            register("2.8.1", "2.8.2", width=BUCKET),
            register("2.8.1", "2.8.2", width=HOUR),
            {start: difference("2.8.1", "2.8.2")},
        )
        assert sum((await read(total)).values()) == pytest.approx(
            difference("1.8.1", "1.8.2"), rel=1e-9
        )
        # The phases and the powers in total are their samples integrated, not the registers.
        for title, code in (
            *zip(phases, ("21.7.0", "41.7.0", "61.7.0"), strict=True),
            (ENERGY, "1.7.0"),
            (EXPORT, "2.7.0"),
        ):
            day = sum(power(code, BUCKET).values())
            await assert_reads(read, title, power(code, BUCKET), power(code, HOUR), {start: day})
    # The test tells them apart: the registers counted 0 to 4 % more than the samples, and
    # both directions had energy on both tariffs (export on tariff 1: the sun before 07:00
    # and after 21:00 gives little, tens of Wh).
    phases_day = sum(sum(power(c, BUCKET).values()) for c in ("21.7.0", "41.7.0", "61.7.0"))
    assert difference("1.8.1", "1.8.2") > 1.01 * phases_day
    assert min(difference(c) for c in registers) > 10.0


async def test_a_pv_household_counts_import_and_export_by_their_registers_each_wh_once(
    platform: Platform, db: asyncpg.Connection
) -> None:
    sn, secret, feed_id = await paired_homebase(platform)
    feed = int(str(feed_id))
    start, end = midnights(3)
    home = meter_readings(start, end, seed=3, pv_peak=5000.0)
    codes = {
        "1.7.0": home.taken,
        "2.7.0": home.fed,
        "1.8.0": count(9_876_543.2, home.taken_steps),
        "2.8.0": count(1_234_567.8, home.fed_steps),
    }
    await meter_reads(platform, db, sn, secret, feed, home.times, codes)

    taken, fed = (dict(zip(home.times, codes[c], strict=True)) for c in ("1.8.0", "2.8.0"))
    async with platform.client() as api:
        read = await answers(api, feed)
        assert set(read.ids) == {ENERGY, EXPORT, *costs(ENERGY), *credits(EXPORT)}
        # The registers read all day, so they are the streams' value in every bucket; the
        # power samples (0 to 4 % lower) add nothing on top.
        for title, meter in ((ENERGY, taken), (EXPORT, fed)):
            await assert_reads(
                read,
                title,
                rises(meter, start, end, BUCKET),
                rises(meter, start, end, HOUR),
                {start: meter[end] - meter[start]},
            )
            points = await read(title)
            assert sum(points.values()) == pytest.approx(meter[end] - meter[start], rel=1e-9)
        # Midday the plant feeds in more than any load takes: nothing imported, only exported.
        noon = at(start, 12)
        assert (await read(ENERGY, "hour"))[noon] == 0.0
        assert (await read(EXPORT, "hour"))[noon] > 1000.0
    # The power would have given other totals: the test tells the register's Wh from them.
    for code, meter in (("1.7.0", taken), ("2.7.0", fed)):
        samples = dict(zip(home.times, codes[code], strict=True))
        from_power = sum(integral(samples, start, end, BUCKET).values())
        assert meter[end] - meter[start] > 1.01 * from_power


async def test_a_replaced_meter_and_a_silent_register_count_each_wh_once_never_negative(
    platform: Platform, db: asyncpg.Connection
) -> None:
    sn, secret, feed_id = await paired_homebase(platform)
    feed = int(str(feed_id))
    start, end = midnights(3)
    home = meter_readings(start, end, seed=4)
    # The meter is replaced at 09:00:40: the new one's count starts at 3.2 Wh. From 15:00:10
    # to 15:20:40 (20.5 minutes) the reader gets no register reading, though the meter counts
    # on; the power (1-0:1.7.0) comes every 10 s all day.
    old = dict(zip(home.times, count(5_432_100.0, home.taken_steps), strict=True))
    replaced = at(start, 9, 0, 40)
    first_new = home.times.index(replaced)
    new = dict(zip(home.times[first_new:], count(3.2, home.taken_steps[first_new:]), strict=True))
    silent_from, silent_to = at(start, 15, 0, 10), at(start, 15, 20, 40)
    meter = {
        t: new[t] if t >= replaced else old[t]
        for t in home.times
        if not silent_from < t < silent_to
    }
    watts = dict(zip(home.times, home.taken, strict=True))
    records = [
        reading(t, {"1.7.0": w, **({"1.8.0": meter[t]} if t in meter else {})})
        for t, w in watts.items()
    ]
    # Live: the day up to 15:09 arrives and is processed while the register is silent, then
    # the rest.
    nine, three = at(start, 9), at(start, 15)
    cut = at(start, 15, 9)
    await publish(platform, sn, secret, [r for r in records if r.t < cut])
    await stored(db, feed, sum(len(r.o) for r in records if r.t < cut))
    await process(db)
    async with platform.client() as api:
        read = await answers(api, feed)
        # Past the register's last reading (15:00:10) its span ends: from 15:01:30 the power
        # counts, up to the last sample so far (15:08:50, in the bucket of 15:07:30).
        silence = await read(ENERGY)
        assert max(silence) == cut - BUCKET
        assert {t: v for t, v in silence.items() if three < t < cut - BUCKET} == close(
            integral(watts, three + BUCKET, cut - BUCKET, BUCKET)
        )
    await publish(platform, sn, secret, [r for r in records if r.t >= cut])
    await stored(db, feed, len(watts) + len(meter))

    await process(db)

    before_reset = at(start, 9, 0, 30)
    buckets = {
        t: meter[t + BUCKET] - meter[t]
        for t in range(start, end, BUCKET)
        if t in meter and t + BUCKET in meter and not t <= replaced < t + BUCKET
    }
    # The bucket of the replacement: the old meter's 30 s, nothing for the fall to 3.2 Wh (the
    # 10 s before it are lost), then the new meter's 50 s.
    buckets[nine] = (old[before_reset] - old[nine]) + (new[nine + BUCKET] - new[replaced])
    # The silence: the rise of the 20.5 minutes (1230 s) spread evenly over them: 10 s of the
    # line and 80 s of the spread rise in the bucket of 15:00:00, 90 s of it in each bucket
    # of 15:01:30 to 15:18:00 (inside the register's span: the power counted there while it
    # was silent is gone), 70 s in the bucket of 15:19:30 beside the line from 15:20:40 to
    # 15:21:00. The power adds nothing anywhere.
    per_second = (meter[silent_to] - meter[silent_from]) / 1230
    buckets[three] = meter[silent_from] - meter[three] + 80 * per_second
    buckets.update({three + BUCKET * k: 90 * per_second for k in range(1, 13)})
    late_bucket = at(start, 15, 19, 30)
    buckets[late_bucket] = 70 * per_second + meter[late_bucket + BUCKET] - meter[silent_to]
    assert len(buckets) == (end - start) // BUCKET
    hours = rises(meter, start, end, HOUR)  # the 15:00 hour holds the silence whole
    hours[nine] = (old[before_reset] - old[nine]) + (new[nine + HOUR] - new[replaced])
    day = (old[before_reset] - old[start]) + (new[end] - new[replaced])
    async with platform.client() as api:
        read = await answers(api, feed)
        await assert_reads(read, ENERGY, buckets, hours, {start: day})
        points = await read(ENERGY)
    assert sum(points.values()) == pytest.approx(day, rel=1e-9)
    assert min(points.values()) >= 0.0
    # No spike, not even for the silence: at most 1040 W x 90 s = 26 Wh in a bucket.
    assert max(points.values()) < 26.0


async def test_a_total_register_beside_tariff_registers_agrees_with_the_combined_stream(
    platform: Platform, db: asyncpg.Connection
) -> None:
    sn, secret, feed_id = await paired_homebase(platform)
    feed = int(str(feed_id))
    start, end = midnights(3)
    home = meter_readings(start, end, seed=5)
    day_tariff = range(at(start, 7), at(start, 21))
    low = count(
        1_111_111.1,
        [
            r if t not in day_tariff else 0.0
            for t, r in zip(home.times, home.taken_steps, strict=False)
        ],
    )
    normal = count(
        2_222_222.2,
        [r if t in day_tariff else 0.0 for t, r in zip(home.times, home.taken_steps, strict=False)],
    )
    # 1-0:1.8.0 is the sum of the tariff registers at every reading.
    codes = {
        "1.8.0": [a + b for a, b in zip(low, normal, strict=True)],
        "1.8.1": low,
        "1.8.2": normal,
    }
    await meter_reads(platform, db, sn, secret, feed, home.times, codes)

    meter = dict(zip(home.times, codes["1.8.0"], strict=True))
    total = f"{ENERGY}, total"
    tariffs = [f"{ENERGY}, tariff 1", f"{ENERGY}, tariff 2"]
    async with platform.client() as api:
        read = await answers(api, feed)
        assert set(read.ids) == {ENERGY, *tariffs, total, *costs(ENERGY, *tariffs, total)}
        unindexed, combined = (
            await read.every_resolution(ENERGY),
            await read.every_resolution(total),
        )
    # The same energy measured two ways: per bucket, hour, day and month alike, and both the
    # register's difference (the combined stream never adds 1.8.0 to its tariffs).
    for resolution in (None, "hour", "day", "month"):
        assert combined[resolution] == close(unindexed[resolution]), resolution
    assert unindexed[None] == close(rises(meter, start, end, BUCKET))
    assert unindexed["day"] == close({start: meter[end] - meter[start]})
    assert sum(combined[None].values()) == pytest.approx(meter[end] - meter[start], rel=1e-9)
    assert meter[end] - meter[start] == pytest.approx(
        (low[-1] - low[0]) + (normal[-1] - normal[0]), rel=1e-9
    )


async def test_a_late_reading_into_a_compacted_day_changes_only_its_own_buckets(
    platform: Platform, db: asyncpg.Connection
) -> None:
    sn, secret, feed_id = await paired_homebase(platform)
    feed = int(str(feed_id))
    start, end = midnights(10)  # old enough for the compact tier (EP_COMPACTION_AFTER_DAYS: 7)
    home = meter_readings(start, end, seed=6, step=60)  # a reading a minute
    meter = dict(zip(home.times, count(7_654_321.0, home.taken_steps), strict=True))
    # The readings of 11:58 to 12:02 are missing: 11:57 to 12:03 is a gap of 6 minutes.
    gap_from, late, gap_to = at(start, 11, 57), at(start, 12), at(start, 12, 3)
    sent = {t: v for t, v in meter.items() if not gap_from < t < gap_to}
    await publish(platform, sn, secret, [reading(t, {"1.8.0": v}) for t, v in sent.items()])
    await stored(db, feed, len(sent))
    await process(db)

    async with platform.client() as api:
        read = await answers(api, feed)
        before = await read.every_resolution(ENERGY)
        # Spread: the 6 minutes' rise lies evenly in the buckets of 11:57, 11:58:30, 12:00 and
        # 12:01:30, a quarter in each; the bucket of 12:03 has its own line.
        silent = [gap_from + BUCKET * k for k in range(4)]
        whole = meter[gap_to] - meter[gap_from]
        assert set(before[None]) == set(range(start, end, BUCKET))
        assert {t: before[None][t] for t in silent} == close(dict.fromkeys(silent, whole / 4))
        assert before["day"] == close({start: meter[end] - meter[start]})

        # The local day lies in two UTC days: both go into the compact tier, raw and
        # processed streams alike; every answer stays the same.
        utc_days = sorted({datetime.fromtimestamp(t, UTC).date() for t in (start, end - 1)})
        for day in utc_days:
            assert await db.fetchval(COMPACT_DAY, feed, day) > 0
        assert await db.fetchval(ROW_TIER_POINTS, feed) == 0
        assert await read.every_resolution(ENERGY) == before

        # The reading of 12:00 arrives late.
        await publish(platform, sn, secret, [reading(late, {"1.8.0": meter[late]})])

        async def late_stored() -> bool:
            return bool(
                await db.fetchval(
                    "SELECT count(*) FROM cluster.raw_points p"
                    " JOIN cluster.streams s ON s.id = p.stream_id"
                    " WHERE s.feed_id = $1 AND p.ts = to_timestamp($2)",
                    feed,
                    late,
                )
            )

        await eventually(late_stored, within=60)
        await process(db)
        after = await read.every_resolution(ENERGY)

    # Now 11:57 to 12:00 and 12:00 to 12:03 are lines of 3 minutes: each rise halves into its
    # two buckets (exactly the gap's buckets change), and the bucket of 12:03 keeps its line.
    first, second = meter[late] - meter[gap_from], meter[gap_to] - meter[late]
    expected = dict(before[None])
    expected.update(dict.fromkeys(silent[:2], first / 2))
    expected.update(dict.fromkeys(silent[2:], second / 2))
    assert after[None] == close(expected)
    # The 11:00 hour has the first 3 minutes' rise instead of half the gap's, the 12:00 hour
    # the rest; the day stays the register's difference.
    hours = dict(before["hour"])
    hours[at(start, 11)] += first - whole / 2
    hours[at(start, 12)] -= first - whole / 2
    assert after["hour"] == close(hours)
    assert after["day"] == close(before["day"])
    assert after["month"] == close(before["month"])
    assert sum(after[None].values()) == pytest.approx(meter[end] - meter[start], rel=1e-9)


async def test_a_backfilled_register_takes_its_day_over_from_the_power(
    platform: Platform, db: asyncpg.Connection
) -> None:
    sn, secret, feed_id = await paired_homebase(platform)
    feed = int(str(feed_id))
    start, middle, end = midnights(5, days=2)
    home = meter_readings(start, end, seed=7)
    watts = dict(zip(home.times, home.taken, strict=True))
    # Two days of power (1-0:1.7.0), processed.
    await publish(platform, sn, secret, [reading(t, {"1.7.0": w}) for t, w in watts.items()])
    await stored(db, feed, len(watts))
    await process(db)

    async with platform.client() as api:
        read = await answers(api, feed)
        power_days = {
            t: sum(integral(watts, t, t2, BUCKET).values())
            for t, t2 in ((start, middle), (middle, end))
        }
        await assert_reads(
            read,
            ENERGY,
            integral(watts, start, end, BUCKET),
            integral(watts, start, end, HOUR),
            power_days,
        )
        before = await read.every_resolution(ENERGY)

        # Then the register's history of the first day (1-0:1.8.0, midnight to midnight)
        # arrives: it counted 0 to 4 % more than the power samples say.
        times = [t for t in home.times if t <= middle]
        meter = dict(
            zip(times, count(3_210_987.6, home.taken_steps[: len(times) - 1]), strict=True)
        )
        await publish(platform, sn, secret, [reading(t, {"1.8.0": v}) for t, v in meter.items()])
        await stored(db, feed, len(watts) + len(meter))
        await process(db)

        # The first day is the register's, bucket by bucket; the second day stays the power's.
        second = {t: v for t, v in before[None].items() if t >= middle}
        await assert_reads(
            read,
            ENERGY,
            {**rises(meter, start, middle, BUCKET), **second},
            {**rises(meter, start, middle, HOUR), **integral(watts, middle, end, HOUR)},
            {start: meter[middle] - meter[start], middle: power_days[middle]},
        )
        points = await read(ENERGY)
    assert sum(v for t, v in points.items() if t < middle) == pytest.approx(
        meter[middle] - meter[start], rel=1e-9
    )
    assert meter[middle] - meter[start] > 1.01 * power_days[start]
