"""One case per telegram family of dsmr_parser's ``test/example_telegrams.py`` (issue 58 item 9):
each telegram's numeric codes, as a reader sends them (kWh and kW times 1,000: Wh and W; text
codes such as serial numbers are not numbers and are not sent), every minute for an hour, one
register rising by 15 Wh a minute (900 W) and its M-Bus gas meter's captures rising. The bill's
kWh and m³ are the registers' rises, whatever else the telegram holds."""

from __future__ import annotations

from dataclasses import dataclass, field

import asyncpg
import pytest

from energy_platform.core.codec import obis
from energy_platform.core.codec.format_v4 import HomebaseRecord
from tests.integration.devices import test_meters_across_europe as europe
from tests.support.platform import Platform

MINUTE, HOUR = 60, europe.HOUR
RISE = 15.0  # Wh a minute: 900 W


@dataclass
class Family:
    codes: dict[str, float]
    """The telegram's numeric codes, as sent (Wh, W, m³)."""
    rising: tuple[str, ...]
    """The registers that count the 900 W (a total and the tariff it falls in rise together)."""
    gas: tuple[str, float, int] | None = None
    """The M-Bus reading's code, its first value and its capture interval (s)."""
    billed: dict[str, float] = field(default_factory=dict)
    """The bill's quantity per medium over the hour."""


DSMR_EXPORT = {"power": 0.9, "export": 0.0}  # 60 minutes x 15 Wh; export registers stand still
FAMILIES = {
    "TELEGRAM_V2_2": Family(
        {"1-0:1.8.1": 1001.0, "1-0:1.8.2": 1001.0, "1-0:2.8.1": 1001.0, "1-0:2.8.2": 1001.0,
         "0-0:96.14.0": 1, "1-0:1.7.0": 1010.0, "1-0:2.7.0": 0.0, "0-0:17.0.0": 999_000.0,
         "0-0:96.3.10": 1, "0-1:24.1.0": 3, "0-1:24.4.0": 1},
        ("1-0:1.8.2",),
        ("0-1:24.3.0", 1.001, HOUR),  # the hourly capture, its value on the next line
        {**DSMR_EXPORT, "gas": 0.25},
    ),
    "TELEGRAM_V3": Family(
        {"1-0:1.8.1": 12_345_678.0, "1-0:1.8.2": 12_345_678.0, "1-0:2.8.1": 12_345_678.0,
         "1-0:2.8.2": 12_345_678.0, "0-0:96.14.0": 2, "1-0:1.7.0": 1190.0, "1-0:2.7.0": 0.0,
         "0-0:17.0.0": 16, "0-0:96.3.10": 1, "0-1:24.1.0": 3, "0-1:24.4.0": 1},
        ("1-0:1.8.2",),
        ("0-1:24.3.0", 1.001, HOUR),
        {**DSMR_EXPORT, "gas": 0.25},
    ),
    "TELEGRAM_V4_2": Family(
        {"1-3:0.2.8": 42, "1-0:1.8.1": 1_581_123.0, "1-0:1.8.2": 1_435_706.0,
         "1-0:2.8.1": 0.0, "1-0:2.8.2": 0.0, "0-0:96.14.0": 2, "1-0:1.7.0": 2027.0,
         "1-0:2.7.0": 0.0, "0-0:96.7.21": 15, "0-0:96.7.9": 7, "1-0:32.32.0": 0,
         "1-0:52.32.0": 0, "1-0:72.32.0": 0, "1-0:31.7.0": 0, "1-0:51.7.0": 6, "1-0:71.7.0": 2,
         "1-0:21.7.0": 170.0, "1-0:22.7.0": 0.0, "1-0:41.7.0": 1247.0, "1-0:42.7.0": 0.0,
         "1-0:61.7.0": 209.0, "1-0:62.7.0": 0.0, "0-1:24.1.0": 3},
        ("1-0:1.8.2",),
        ("0-1:24.2.1", 981.443, HOUR),  # (161129200000W)(00981.443*m3): a whole hour
        {**DSMR_EXPORT, "gas": 0.25},
    ),
    "TELEGRAM_V5": Family(
        {"1-3:0.2.8": 50, "1-0:1.8.1": 4426.0, "1-0:1.8.2": 2399.0, "1-0:2.8.1": 2444.0,
         "1-0:2.8.2": 0.0, "0-0:96.14.0": 2, "1-0:1.7.0": 244.0, "1-0:2.7.0": 0.0,
         "0-0:96.7.21": 13, "0-0:96.7.9": 0, "1-0:32.7.0": 230.0, "1-0:52.7.0": 230.0,
         "1-0:72.7.0": 229.0, "1-0:31.7.0": 0.48, "1-0:51.7.0": 0.44, "1-0:71.7.0": 0.86,
         "1-0:21.7.0": 70.0, "1-0:41.7.0": 32.0, "1-0:61.7.0": 142.0, "1-0:22.7.0": 0.0,
         "1-0:42.7.0": 0.0, "1-0:62.7.0": 0.0, "0-1:24.1.0": 3, "0-2:24.1.0": 3},
        ("1-0:1.8.2",),
        ("0-1:24.2.1", 0.107, 300),  # every 5 minutes
        {**DSMR_EXPORT, "gas": 0.24},  # 12 captures' steps of 0.02 m³
    ),
    "TELEGRAM_ESY5Q3DB1024_V304": Family(
        {"1-0:0.0.0*255": 272031312565, "1-0:1.8.0*255": 52_185_782.5309,
         "1-0:2.8.0*255": 19_949_322.1493, "1-0:21.7.0*255": 747.85, "1-0:41.7.0*255": 737.28,
         "1-0:61.7.0*255": 639.73, "1-0:1.7.0*255": 2124.86, "1-0:96.5.5*255": 80},
        ("1-0:1.8.0*255",),
        billed=DSMR_EXPORT,
    ),
    "TELEGRAM_ESY5Q3DA1004_V304": Family(
        {"1-0:0.0.0*255": 1336001560, "1-0:1.8.0*255": 32_549_506.1662,
         "1-0:21.7.0*255": 557.29, "1-0:41.7.0*255": 521.62, "1-0:61.7.0*255": 609.30,
         "1-0:1.7.0*255": 1688.21, "1-0:96.5.5*255": 80},
        ("1-0:1.8.0*255",),
        billed={"power": 0.9},  # an import-only meter
    ),
    "TELEGRAM_SAGEMCOM_T210_D_R": Family(
        {"1-3:0.2.8": 50, "1-0:1.8.0": 6_545_766.0, "1-0:1.8.1": 5_017_120.0,
         "1-0:1.8.2": 1_528_646.0, "1-0:1.7.0": 286.0, "1-0:2.8.0": 58.0, "1-0:2.8.1": 0.0,
         "1-0:2.8.2": 58.0, "1-0:2.7.0": 0.0, "1-0:3.8.0": 747.0, "1-0:3.7.0": 0.0,
         "1-0:4.8.0": 3_897_726.0, "1-0:4.7.0": 166.0},
        ("1-0:1.8.0", "1-0:1.8.2"),  # Wh and W as written; the total and tariff 2 rise
        billed=DSMR_EXPORT,
    ),
    # From a later version of the same file (the fork Megachip/dsmr_parser holds it):
    # Belgium's Fluvius, a DSMR 5 meter with an idle M-Bus slot beside its gas meter, Iskra's
    # IE, Hungary's E.ON and a Logarex D0 reader.
    "TELEGRAM_FLUVIUS_V171": Family(
        {"0-0:96.1.4": 50217, "1-0:1.8.1": 34.0, "1-0:1.8.2": 15_758.0, "1-0:2.8.1": 0.0,
         "1-0:2.8.2": 11.0, "1-0:1.4.0": 2351.0, "1-0:1.6.0": 2589.0, "0-0:96.14.0": 1,
         "1-0:1.7.0": 0.0, "1-0:2.7.0": 0.0, "1-0:21.7.0": 0.0, "1-0:41.7.0": 0.0,
         "1-0:61.7.0": 0.0, "1-0:22.7.0": 0.0, "1-0:42.7.0": 0.0, "1-0:62.7.0": 0.0,
         "1-0:32.7.0": 234.7, "1-0:52.7.0": 234.7, "1-0:72.7.0": 234.7, "1-0:31.7.0": 0.0,
         "1-0:51.7.0": 0.0, "1-0:71.7.0": 0.0, "0-0:96.3.10": 1, "0-0:17.0.0": 999_900.0,
         "1-0:31.4.0": 999, "0-1:24.1.0": 3, "0-1:24.4.0": 1, "0-2:24.1.0": 7,
         "0-2:24.2.1": 872.234},
        ("1-0:1.8.1",),
        ("0-1:24.2.3", 112.384, 300),  # Belgian gas on 24.2.3, every 5 minutes
        {**DSMR_EXPORT, "gas": 0.24, "water": 0.0},  # the water meter stood still
    ),
    "TELEGRAM_V5_TWO_MBUS": Family(
        {"1-3:0.2.8": 50, "1-0:1.8.1": 2_130_115.0, "1-0:1.8.2": 245_467.0, "1-0:2.8.1": 0.0,
         "1-0:2.8.2": 0.0, "0-0:96.14.0": 1, "1-0:1.7.0": 111.0, "1-0:2.7.0": 0.0,
         "0-0:96.7.21": 5, "0-0:96.7.9": 3, "1-0:32.7.0": 229.9, "1-0:52.7.0": 229.2,
         "1-0:72.7.0": 222.9, "1-0:21.7.0": 56.0, "1-0:41.7.0": 0.0, "1-0:61.7.0": 55.0,
         "1-0:22.7.0": 0.0, "1-0:42.7.0": 0.0, "1-0:62.7.0": 0.0, "0-1:24.1.0": 3,
         "0-1:24.2.1": 0.0, "0-2:24.1.0": 3},  # slot 1 empty: (700101010000W)(00000000)
        ("1-0:1.8.1",),
        ("0-2:24.2.1", 246.138, 300),
        {**DSMR_EXPORT, "gas": 0.24},  # one gas meter: the idle slot makes no total
    ),
    "TELEGRAM_ISKRA_IE": Family(
        {"1-0:0.0.0": 0, "0-0:96.1.0": 9610, "1-0:1.8.1": 10_181.0, "1-0:1.8.2": 10_182.0,
         "1-0:2.8.1": 10_281.0, "1-0:2.8.2": 10_282.0, "0-0:96.14.0": 1, "1-0:1.7.0": 170.0,
         "1-0:2.7.0": 270.0, "1-0:21.7.0": 217.0, "1-0:41.7.0": 417.0, "1-0:61.7.0": 617.0,
         "1-0:22.7.0": 227.0, "1-0:42.7.0": 427.0, "1-0:62.7.0": 627.0, "1-0:32.7.0": 242.5,
         "1-0:52.7.0": 241.7, "1-0:72.7.0": 243.3, "1-0:31.7.0": 0, "1-0:51.7.0": 0,
         "1-0:71.7.0": 0, "0-0:96.3.10": 1},
        ("1-0:1.8.1",),
        billed=DSMR_EXPORT,  # its phases export 1,281 W: the registers stand still, so 0
    ),
    "TELEGRAM_V5_EON_HU": Family(
        {"0-0:96.14.0": 1, "0-0:96.3.10": 1, "0-0:17.0.0": 90_000.0, "1-0:1.8.0": 173_640.0,
         "1-0:1.8.1": 47_719.0, "1-0:1.8.2": 125_921.0, "1-0:1.8.3": 0.0, "1-0:1.8.4": 0.0,
         "1-0:2.8.0": 627_177.0, "1-0:2.8.1": 401_829.0, "1-0:2.8.2": 225_348.0,
         "1-0:2.8.3": 0.0, "1-0:2.8.4": 0.0, "1-0:3.8.0": 123.0, "1-0:4.8.0": 303_131.0,
         "1-0:5.8.0": 668.0, "1-0:6.8.0": 71.0, "1-0:7.8.0": 160_487.0, "1-0:8.8.0": 143_346.0,
         "1-0:15.8.0": 800_817.0, "1-0:32.7.0": 240.4, "1-0:52.7.0": 239.1,
         "1-0:72.7.0": 241.2, "1-0:31.7.0": 3, "1-0:51.7.0": 4, "1-0:71.7.0": 3,
         "1-0:13.7.0": 4.556, "1-0:33.7.0": 4.591, "1-0:53.7.0": 4.542, "1-0:73.7.0": 4.552,
         "1-0:14.7.0": 50.0, "1-0:1.7.0": 0.0, "1-0:2.7.0": 2601.0, "1-0:5.7.0": 0.0,
         "1-0:6.7.0": 0.0, "1-0:7.7.0": 504.0, "1-0:8.7.0": 0.0, "1-0:31.4.0": 200.0,
         "1-0:51.4.0": 200.0, "1-0:71.4.0": 200.0},
        ("1-0:1.8.0", "1-0:1.8.1"),
        billed=DSMR_EXPORT,  # 2.7.0 says 2,601 W out, yet the export registers stand still
    ),
    "TELEGRAM_LOG5LK13BE803049_V03": Family(
        {"1-0:1.8.0*255": 439.2, "1-0:1.8.1*255": 0.0, "1-0:1.8.2*255": 439.2,
         "1-0:2.8.0*255": 832.2, "1-0:16.7.0*255": 0.0, "1-0:32.7.0*255": 0.0,
         "1-0:52.7.0*255": 0.0, "1-0:72.7.0*255": 229.9, "1-0:31.7.0*255": 0.0,
         "1-0:51.7.0*255": 0.0, "1-0:71.7.0*255": 0.03, "1-0:81.7.1*255": 0,
         "1-0:81.7.2*255": 0, "1-0:81.7.4*255": 0, "1-0:81.7.15*255": 0, "1-0:81.7.26*255": 0,
         "1-0:14.7.0*255": 49.9, "1-0:1.8.0*96": 0.0, "1-0:1.8.0*97": 0.0,
         "1-0:1.8.0*98": 0.0, "1-0:1.8.0*99": 0.0, "1-0:1.8.0*100": 400.0,
         "1-0:97.97.0*255": 0},
        ("1-0:1.8.0*255", "1-0:1.8.2*255"),  # past periods (*96 to *100) never count
        billed=DSMR_EXPORT,
    ),
    # A Swedish HAN port (the Swedish industry recommendation's example of an ELL5 meter, as
    # the HAN port's public documentation prints it): one total register per direction, power
    # and reactive power per phase, F left out.
    "SWEDISH_HAN_ELL5": Family(
        {"1-0:1.8.0": 6_678_394.0, "1-0:2.8.0": 0.0, "1-0:3.8.0": 21_988.0,
         "1-0:4.8.0": 1_020_971.0, "1-0:1.7.0": 1727.0, "1-0:2.7.0": 0.0, "1-0:3.7.0": 0.0,
         "1-0:4.7.0": 309.0, "1-0:21.7.0": 1023.0, "1-0:41.7.0": 350.0, "1-0:61.7.0": 353.0,
         "1-0:22.7.0": 0.0, "1-0:42.7.0": 0.0, "1-0:62.7.0": 0.0, "1-0:23.7.0": 0.0,
         "1-0:43.7.0": 0.0, "1-0:63.7.0": 0.0, "1-0:24.7.0": 9.0, "1-0:44.7.0": 161.0,
         "1-0:64.7.0": 138.0, "1-0:32.7.0": 240.3, "1-0:52.7.0": 240.1, "1-0:72.7.0": 241.3,
         "1-0:31.7.0": 4.2, "1-0:51.7.0": 1.6, "1-0:71.7.0": 1.7},
        ("1-0:1.8.0",),
        billed=DSMR_EXPORT,  # its phases draw 1,726 W, yet the register's 900 W is billed
    ),
    # Luxembourg's Smarty (dsmr-reader's datalogger test of it): totals only, and a kVA limit.
    "LUXEMBOURG_SMARTY": Family(
        {"1-3:0.2.8": 42, "1-0:1.8.0": 5_675_956.0, "1-0:2.8.0": 2.0, "1-0:3.8.0": 120_721.0,
         "1-0:4.8.0": 697_336.0, "1-0:1.7.0": 3074.0, "1-0:2.7.0": 0.0, "1-0:3.7.0": 0.0,
         "1-0:4.7.0": 0.0, "0-0:17.0.0": 27_600.0, "0-0:96.3.10": 1},
        ("1-0:1.8.0",),
        billed=DSMR_EXPORT,
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(FAMILIES))
async def test_each_telegram_family_bills_its_registers_rise(
    platform: Platform, db: asyncpg.Connection, name: str
) -> None:
    family = FAMILIES[name]
    prices = {"power": 0.30} | ({"gas": 1.10} if family.gas else {})
    sn, secret, feed = await europe.homebase(platform, db, **prices)
    t0 = europe.hours_ago(2)
    records = []
    for n, t in enumerate(range(t0, t0 + HOUR + 1, MINUTE)):
        codes = dict(family.codes)
        for code in family.rising:
            codes[code] += n * RISE
        if family.gas is not None:
            code, first, every = family.gas
            if (t - t0) % every == 0:
                # 0.25 m³ an hour: 0.02 m³ a 5-minute capture (rounded, as the meter writes)
                codes[code] = first + (0.25 if every == HOUR else 0.02) * ((t - t0) // every)
        records.append(HomebaseRecord(4, t, europe.READER, 0, 0xDA01, o=codes))
    # A signed power code (16.7.0) is stored as two points: import and export.
    points = sum(len(r.o) + sum(1 for code in r.o if obis.signed(code)) for r in records)
    await europe.send(platform, db, sn, secret, feed, records, points)

    _, bill = await europe.read_back(platform, feed, t0)
    assert bill == {medium: europe.approx(quantity) for medium, quantity in family.billed.items()}
