"""`energy-platform admin tariffs ...`: set and listed, and refused with one line."""

import pytest

from energy_platform.core.settings import Settings
from tests.support.admin import admin_refusal, run_admin
from tests.support.engine import NewFeed


async def test_tariffs_are_set_flat_or_by_time_of_use_from_an_instant_and_listed(
    new_feed: NewFeed, settings: Settings
) -> None:
    feed = await new_feed()
    fid = str(feed.id)

    set_tariff = ("tariffs", "set", fid)
    # fmt: off
    await run_admin(settings, *set_tariff, "--medium", "gas", "--from",
                    "2026-01-01T00:00:00+01:00", "--price", "1.25", "--standing", "0.35")
    tariffs = await run_admin(settings, *set_tariff, "--medium", "power", "--from",
                              "2026-01-01T00:00:00Z", "--band", "22:00=0.10",
                              "--band", "06:00=0.30")
    await run_admin(settings, *set_tariff, "--medium", "power", "--from",
                    "2026-07-01T00:00:00Z", "--price", "-0.05")
    # fmt: on
    listed = await run_admin(settings, "tariffs", "list", fid)

    assert tariffs == [
        {
            "medium": "gas",
            "valid_from": "2025-12-31T23:00:00+00:00",
            "valid_to": None,
            "area": None,
            "factor": 1.0,
            "standing": 0.35,
            "bands": [{"starts": "00:00", "ends": "24:00", "price": 1.25}],
        },
        {
            "medium": "power",
            "valid_from": "2026-01-01T00:00:00+00:00",
            "valid_to": None,
            "area": None,
            "factor": 1.0,
            "standing": 0.0,
            "bands": [
                {"starts": "00:00", "ends": "06:00", "price": 0.10},
                {"starts": "06:00", "ends": "22:00", "price": 0.30},
                {"starts": "22:00", "ends": "24:00", "price": 0.10},
            ],
        },
    ]
    assert [(t["medium"], t["valid_from"], t["valid_to"]) for t in listed] == [
        ("gas", "2025-12-31T23:00:00+00:00", None),
        ("power", "2026-01-01T00:00:00+00:00", "2026-07-01T00:00:00+00:00"),
        ("power", "2026-07-01T00:00:00+00:00", None),
    ]
    assert listed[2]["bands"] == [{"starts": "00:00", "ends": "24:00", "price": -0.05}]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--price", "1", "--band", "06:00=1"), "exactly one of"),
        (("--band", "6:00=1"), "a band looks like"),
        (("--band", "06:00=1", "--band", "06:00=2"), "two bands start at 06:00"),
        (("--price", "nan"), "not a finite price"),
        (("--factor", "2"), "--factor multiplies an area's prices: give --area too"),
        (("--area", "X", "--none"), "--none sets no tariff: it takes no --area"),
        (("--area", "X", "--factor", "inf"), "not a finite price"),
        (("--none", "--standing", "1"), "--none sets no tariff: it takes no --standing"),
        (("--price", "1", "--standing", "x"), "'x' is not a price"),
        (("--price", "1", "--kwh-per-m3", "10"), "--kwh-per-m3 prices gas per kWh: only with"),
        (("--price", "1", "--floor", "1", "--cap", "0.5"), "--floor 1 is above --cap 0.5"),
        (("--price", "1", "--vat", "-1"), "--vat: '-1' must be at least 0"),
        (("--price", "1", "--vat", "1001"), "--vat: 1001.0 is out of bounds: a VAT rate"),
        (("--price", "1", "--holidays", "NL"), "give weekday/ or weekend/ bands"),
        (("--band", "weekend/00:00=1", "--band", "07:00=2", "--holidays", "XX"), "knows no XX"),
        (("--band", "weekend/00:00=1", "--band", "07:00=2", "--holidays", "nl"), "a country code"),
        (
            ("--band", "weekday/00:00=1", "--band", "weekend/00:00=2", "--holidays", "DE-XX"),
            "DE has no subdivision 'XX'",
        ),
        (("--band", "weekday/07:00=1"), "weekends have no band: give weekend/ bands"),
        (
            ("--band", "07:00=1", "--band", "weekend/07:00=2"),
            "two bands start at 07:00 on weekends",
        ),
        (
            (
                "--band",
                "holiday/07:00=1",
            ),
            "a band looks like",
        ),
        (("--none", "--vat", "19"), "--none sets no tariff: it takes no --vat"),
    ],
)
async def test_invalid_tariffs_are_refused_with_one_line(
    new_feed: NewFeed, settings: Settings, args: tuple[str, ...], message: str
) -> None:
    feed = await new_feed()
    set_tariff = ("tariffs", "set", str(feed.id), "--medium", "power", "--from", "now")
    result = await admin_refusal(settings, *set_tariff, *args)
    assert message in result
    assert len(result.strip().splitlines()) == 1
