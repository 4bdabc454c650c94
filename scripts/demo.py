"""The demo homebase of `make run`: a newcomer sees data within a minute.

demo.py prepare   create (once) a cluster, a user, a homebase and its feed; print their
                  settings as shell assignments (kept in .local/demo.env for later runs)
demo.py run       pair the homebase once provisioning answers, then simulate it until stopped;
                  meanwhile keep the demo price area's quarter hours published up to the end of
                  today, and tomorrow's from 13:00 local time on, as a day-ahead market does,
                  with the demo feed on a dynamic tariff of that area
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import asyncpg
import httpx

from energy_platform import cli, seeding
from energy_platform.core.console import run_command
from energy_platform.core.settings import Settings

STATE = Path(__file__).resolve().parents[1] / ".local" / "demo.env"
SN = "DE00000000000001"
ZONE = "Europe/Prague"
AREA = "DEMO-CZ"
HISTORY = timedelta(days=60)
"""How far back the demo area's prices reach."""
POWER_TARIFF = "SELECT 1 FROM cluster.tariffs WHERE feed_id = $1 AND medium = 'power'"
CATALOGUED = "SELECT name FROM cluster.contracts"
# Three offers a supplier of the demo area might publish: what the catalogue shows a newcomer
# (docs/billing.md#contracts). Prices before VAT, per kWh.
CONTRACTS: dict[str, dict[str, object]] = {
    "demo-flat": {
        "price": 0.24,
        "vat": 21,
        "standing": 6.0,
        "standing_per": "month",
        "export": {"price": 0.07},
    },
    "demo-day-night": {
        "bands": ["weekday/07:00=0.27", "weekday/23:00=0.18", "weekend/00:00=0.18"],
        "vat": 21,
        "standing": 6.0,
        "standing_per": "month",
        "holidays": "CZ",
        "export": {"price": 0.07},
    },
    "demo-dynamic": {
        "area": AREA,
        "price": 0.12,
        "vat": 21,
        "standing": 4.5,
        "standing_per": "month",
        "export": {"area": AREA, "floor": 0},
    },
}


def admin(settings: Settings, *args: str) -> Any:
    """``energy-platform admin ARGS...`` in this process: its JSON answer."""
    return run_command(cli.admin, settings, *args)


def prepare(settings: Settings) -> dict[str, str]:
    if STATE.exists():
        return dict(line.split("=", 1) for line in STATE.read_text().split() if "=" in line)
    mqtt_port = settings.mqtt.url.rsplit(":", 1)[-1]
    cluster = admin(
        settings,
        "clusters",
        "add",
        "--title",
        "Local cluster",
        "--http",
        f"127.0.0.1:{settings.http.api_port}",
        "--mqtt",
        f"127.0.0.1:{mqtt_port}",
    )
    user = admin(settings, "users", "add", "demo")
    admin(
        settings, "homebases", "add", SN, "--partner", "demo", "--type", "HB-6", "--generation", "6"
    )
    feed = admin(
        settings,
        "feeds",
        "add",
        "--owner",
        user["id"],
        "--homebase",
        SN,
        "--title",
        "Demo home",
        "--timezone",
        "Europe/Prague",
    )
    state = {
        "EP_PAIRING_CLUSTER_SECRET": cluster["secret"],
        "DEMO_TOKEN": user["token"],
        "DEMO_USER": user["id"],
        "DEMO_FEED": feed["id"],
        "DEMO_SN": SN,
    }
    STATE.write_text("".join(f"{k}={v}\n" for k, v in state.items()))
    STATE.chmod(0o600)
    return state


async def run(settings: Settings) -> None:
    from energy_platform.devices.simulator.command import fetch_secret
    from energy_platform.devices.simulator.homebase import SimulatedHomebase, publish_forever
    from energy_platform.pairing.broker_accounts import give_account

    base = settings.pairing.provisioning_url.rstrip("/")
    auth = {"X-SvcClusterAuth": settings.pairing.cluster_secret}
    async with httpx.AsyncClient(timeout=5) as http:
        deadline = time.monotonic() + 60
        while True:
            try:
                await http.post(f"{base}/api/device/{SN}/pair/", headers=auth)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.5)
    homebase = SimulatedHomebase(SN, await fetch_secret(settings.pairing, SN))
    # What this cluster's pairing gives a homebase: its own broker account.
    await give_account(settings.mqtt, SN, homebase.secret)
    async with asyncio.TaskGroup() as tasks:
        tasks.create_task(publish_forever(settings.mqtt, [homebase], 5.0, asyncio.Event()))
        tasks.create_task(keep_market(settings, int(os.environ["DEMO_FEED"])))


async def keep_market(settings: Settings, feed: int) -> None:
    """The demo area's prices kept published (from HISTORY ago, then each day's as the market
    publishes it), and the demo feed on a dynamic tariff of the area: its money, price curve,
    plan and "Tomorrow's prices are in" notice show real figures. A failure is printed and
    tried again a minute later: the demo homebase goes on sending whatever happens here."""
    zone = ZoneInfo(ZONE)
    history = datetime.combine(datetime.now(zone).date() - HISTORY, datetime.min.time(), zone)
    while True:
        try:
            await publish_market(settings, feed, history)
        except (Exception, SystemExit) as e:
            print(f"demo market: {type(e).__name__}: {e}; trying again in a minute", flush=True)
        await asyncio.sleep(60)


async def publish_market(settings: Settings, feed: int, history: datetime) -> None:
    """The area's prices up to now, the catalogue's demo contracts (once), and the demo feed's
    dynamic tariff on the area (once)."""
    conn = await asyncpg.connect(settings.database.url)
    try:
        await seeding.publish_market(conn, AREA, ZONE, datetime.now(ZoneInfo(ZONE)), history)
        tariffed = await conn.fetchval(POWER_TARIFF, feed) is not None
        catalogued = {row["name"] for row in await conn.fetch(CATALOGUED)}
    finally:
        await conn.close()
    for name, contract in CONTRACTS.items():
        if name not in catalogued:
            path = STATE.parent / "contracts" / f"{name}.json"
            path.parent.mkdir(exist_ok=True)
            path.write_text(json.dumps(contract, indent=2))
            await asyncio.to_thread(admin, settings, "contracts", "add", name, "--file", str(path))
    if not tariffed:
        # A supplier's markup and the grid's fees on top of the market, 21 % VAT, a monthly
        # fee: a dynamic contract as households in Europe sign them.
        await asyncio.to_thread(
            admin,
            settings,
            "tariffs",
            "set",
            str(feed),
            "--medium",
            "power",
            "--from",
            history.isoformat(),
            "--area",
            AREA,
            "--price",
            "0.12",
            "--vat",
            "21",
            "--standing",
            "4.5",
            "--standing-per",
            "month",
        )


def main() -> None:
    settings = Settings.from_env(os.environ)
    if sys.argv[1:] == ["prepare"]:
        for key, value in prepare(settings).items():
            print(f"export {key}={shlex.quote(value)}")
    elif sys.argv[1:] == ["run"]:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(run(settings))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
