"""Values beyond their quantity's bound are refused where an owner or an operator puts them in
(issue 46, docs/api.md#bounds): history over HTTP (400 problem JSON naming the value and
the bound) and the admin import (exit 1 naming them), and tariffs; nothing of the request is
stored. Price files: tests/integration/billing/test_prices_cli.py."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from energy_platform.core.settings import Settings
from tests.support.admin import admin_refusal, run_admin
from tests.support.engine import Feed, NewFeed

JAN_1 = 1_767_225_600  # 2026-01-01T00:00:00Z
POINTS = "SELECT count(*) FROM cluster.raw_points WHERE stream_id = $1"
CORRECTIONS = "SELECT count(*) FROM cluster.corrections WHERE stream_id = $1"
OUT_OF_BOUNDS = "urn:energy-platform:problem:out-of-bounds"


async def unchanged(feed: Feed, stream: int) -> tuple[int, int]:
    return await feed.db.fetchval(POINTS, stream), await feed.db.fetchval(CORRECTIONS, stream)


async def test_history_beyond_its_bound_is_a_400_naming_value_and_bound_and_nothing_is_stored(
    new_feed: NewFeed, api: httpx.AsyncClient
) -> None:
    feed = await new_feed("UTC")
    clamp = await feed.raw_stream(channel=1, medium=1)
    await feed.ingest(clamp, [(JAN_1 - 10, 1000.0), (JAN_1 - 5, 1000.0)])
    before = await unchanged(feed, clamp)
    headers = {"Authorization": f"Bearer {feed.owner_token}"}
    url = f"/feeds/{feed.id}/streams/{clamp}/data"

    # The request, then the same as CSV, with a good point before the bad one.
    as_json = await api.post(
        url,
        content=b"[[1767225600,1e308],[1767225605,1e308]]",
        headers={**headers, "Content-Type": "application/json"},
    )
    as_csv = await api.post(
        url,
        content=f"time,value\n{JAN_1},1000\n{JAN_1 + 5},-2e10\n".encode(),
        headers={**headers, "Content-Type": "text/csv"},
    )

    assert as_json.status_code == as_csv.status_code == 400
    assert as_json.headers["content-type"].startswith("application/problem+json")
    assert as_json.json()["type"] == as_csv.json()["type"] == OUT_OF_BOUNDS
    assert as_json.json()["detail"] == (
        "point 0: 1e+308 is out of bounds: power is at most 1e10 W, var or VA in magnitude"
    )
    assert as_csv.json()["detail"].startswith(
        "line 3: -20000000000.0 is out of bounds: power is at most 1e10 W"
    )
    assert await unchanged(feed, clamp) == before


async def test_the_admin_import_refuses_a_file_with_a_value_beyond_its_bound_whole(
    new_feed: NewFeed, settings: Settings, tmp_path: Path
) -> None:
    feed = await new_feed("UTC")
    history = tmp_path / "register.csv"
    readings = [f"{JAN_1 + 10 * k},{8_000_000 + k}" for k in range(100)]
    readings[50] = f"{JAN_1 + 500},1e16"  # Wh: beyond a 12-digit kWh register
    history.write_text("time,value\n" + "\n".join(readings) + "\n")

    refused = await admin_refusal(settings, "import", str(feed.id), "--channel", "0",
                                  "--device", "7", "--medium", "22", "--file", str(history),
    )  # fmt: skip
    assert refused.strip().endswith(
        "line 52: 1e+16 is out of bounds: an energy register is at most 1e15 Wh, varh or VAh "
        "in magnitude"
    )
    assert (
        await feed.db.fetchval(
            "SELECT count(*) FROM cluster.streams WHERE feed_id = $1 AND type = 'raw'", feed.id
        )
        == 0
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--price", "1e300"), "--price: 1e+300 is out of bounds: a price is at most 1e8"),
        (
            ("--band", "06:00=0.3", "--band", "22:00=-5e8"),
            "--band 22:00: -500000000.0 is out of bounds: a price is at most 1e8 per kWh",
        ),
        (
            ("--area", "X", "--factor", "1e300"),
            "--factor: 1e+300 is out of bounds: a tariff factor is at most 1000 in magnitude",
        ),
        (
            ("--price", "0.3", "--standing", "1e11"),
            "--standing: 100000000000.0 is out of bounds: a standing charge is at most 1e10",
        ),
        (("--price", "1e-300"), "--price: 1e-300 is too small to compute with"),
    ],
)
async def test_a_tariff_beyond_its_bounds_is_refused_and_the_tariffs_stay(
    new_feed: NewFeed, settings: Settings, args: tuple[str, ...], message: str
) -> None:
    feed = await new_feed()
    fid = str(feed.id)
    await run_admin(settings, "tariffs", "set", fid, "--medium", "power", "--from",
                    "2026-01-01T00:00:00Z", "--price", "0.25")  # fmt: skip
    before = await run_admin(settings, "tariffs", "list", fid)

    refused = await admin_refusal(settings, "tariffs", "set", fid, "--medium", "power",
                                  "--from", "2026-02-01T00:00:00Z", *args)  # fmt: skip
    assert message in refused
    assert await run_admin(settings, "tariffs", "list", fid) == before
