"""The demo homebase of `make run`: a newcomer sees data within a minute.

demo.py prepare   create (once) a cluster, a user, a homebase and its feed; print their
                  settings as shell assignments (kept in .local/demo.env for later runs)
demo.py run       pair the homebase once provisioning answers; the first time, send its year of
                  history (the backlog a homebase sends after a year offline, made into bills
                  by the engine like any reading) with its meter reader marked the main meter
                  and its clamp a sub-meter; then simulate it until stopped. Meanwhile keep the
                  demo price area's quarter hours published up to the end of today, and
                  tomorrow's from 13:00 local time on, as a day-ahead market does, from a year
                  back, with the demo feed on a dynamic tariff of that area
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import asyncpg
import httpx

from energy_platform import cli, seeding
from energy_platform.core.console import run_command
from energy_platform.core.settings import Settings
from energy_platform.devices.simulator.homebase import (
    SimulatedHomebase,
    data_topic,
    homebase_client,
)

STATE = Path(__file__).resolve().parents[1] / ".local" / "demo.env"
SN = "DE00000000000001"
ZONE = "Europe/Prague"
AREA = "DEMO-CZ"
HISTORY = timedelta(days=366)
"""How far back the demo's history, its area's prices and its tariff reach: a year of whole
local days, what "Which contract?" replays."""
HISTORY_STEP = 300
"""Seconds between the history's readings: the engine bridges power samples at most 5 minutes
apart, so the clamp's history counts too."""
HISTORY_SENT = STATE.parent / "demo-history.sent"
MAIN_METER_CHANNEL, CLAMP_CHANNEL = 5, 1
"""The simulator's meter reader (the utility's meter: main) and its clamp (behind it: a
sub-meter, listed apart rather than counted twice)."""
# The engine has made the month from $2 on (ingest wrote its first day, the engine processed
# it) and holds no work of the feed but the last minutes' live readings.
BACKLOG_DONE = """
SELECT EXISTS (SELECT FROM cluster.processed_points p JOIN cluster.streams s ON s.id = p.stream_id
                WHERE s.feed_id = $1 AND p.ts >= $2 AND p.ts < $2 + interval '1 day')
   AND NOT EXISTS (SELECT FROM cluster.engine_work
                    WHERE feed_id = $1 AND lower(buckets) < now() - interval '15 minutes')
   AND NOT EXISTS (SELECT FROM cluster.dirty_ranges d JOIN cluster.streams s ON s.id = d.stream_id
                    WHERE s.feed_id = $1 AND d.ts_from < now() - interval '15 minutes')"""
CHANNEL_TOTAL = """
SELECT t.stream_id FROM cluster.channel_totals t JOIN cluster.streams s ON s.id = t.stream_id
 WHERE s.feed_id = $1 AND s.channel = $2 AND s.quantity = 'consumption'"""
POWER_TARIFF = "SELECT 1 FROM cluster.tariffs WHERE feed_id = $1 AND medium = 'power'"
CATALOGUED = "SELECT name FROM cluster.contracts"
# Three offers a supplier of the demo area might publish: what the catalogue shows a newcomer
# (docs/billing.md#contracts). Prices before VAT, per kWh.
DYNAMIC_EXPORT: dict[str, object] = {"area": AREA, "floor": 0}
"""Feed-in at the market price, never below zero: the dynamic offer's, and the demo feed's."""
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
        "export": DYNAMIC_EXPORT,
    },
}


def tariff_options(terms: dict[str, object]) -> list[str]:
    """``admin tariffs set``'s options for a contract's fields, its export part aside."""
    return [
        arg
        for key, value in terms.items()
        if key != "export"
        for arg in (f"--{key.replace('_', '-')}", str(value))
    ]


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
    from energy_platform.devices.simulator.homebase import publish_forever
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
    feed = int(os.environ["DEMO_FEED"])
    since = history_start()
    if not HISTORY_SENT.exists():
        # The prices and the tariff first: the engine then prices the history as it makes it,
        # not once without and again when the tariff arrives.
        try:
            await publish_market(settings, feed, since)
        except (Exception, SystemExit) as e:  # keep_market tries again every minute
            print(f"demo market: {type(e).__name__}: {e}", flush=True)
    async with asyncio.TaskGroup() as tasks:
        tasks.create_task(keep_market(settings, feed, since))
        if not HISTORY_SENT.exists():
            await send_history(settings, homebase, feed, since)
        tasks.create_task(publish_forever(settings.mqtt, [homebase], 5.0, asyncio.Event()))


def history_start() -> datetime:
    """Local midnight HISTORY ago: where the demo's history, prices and tariff begin."""
    zone = ZoneInfo(ZONE)
    return datetime.combine(datetime.now(zone).date() - HISTORY, datetime.min.time(), zone)


async def send_history(
    settings: Settings, homebase: SimulatedHomebase, feed: int, since: datetime
) -> None:
    """The homebase's year up to now, sent as the backlog of a homebase that was offline (a
    message a day), a month at a time, newest first, each once the engine has worked off the
    one before, with a live reading every 5 s meanwhile: this month's figures come first, and
    the year fills in behind them. Once the engine has made the feed's streams, the meter
    reader's total is marked the main meter and the clamp's a sub-meter from the history's
    start, so that no bill of the year counts the house twice."""
    first = int(since.timestamp())
    now = int(time.time()) // HISTORY_STEP * HISTORY_STEP
    # Made oldest first (the meters count up), sent newest first.
    days = [
        homebase.batch(range(day, min(day + 86_400, now), HISTORY_STEP))
        for day in range(first, now, 86_400)
    ]
    # Each month with the instant its first day starts.
    months = [
        (
            datetime.fromtimestamp(first + max(end - 31, 0) * 86_400, UTC),
            days[max(end - 31, 0) : end],
        )
        for end in range(len(days), 0, -31)
    ]
    async with homebase_client(settings.mqtt, SN, homebase.secret, will=False) as client:
        topic = data_topic(SN, settings.mqtt.topic_prefix)
        for number, (start, month) in enumerate(months):
            for message in month:
                await client.publish(topic, message, qos=1)
            if number == 0:
                await mark_meters(settings, feed, since)
            # At most 10 minutes a month: a month the engine cannot make (parked) holds up
            # neither the rest of the year nor the live readings for ever.
            deadline = time.monotonic() + 600
            while not await worked_off(settings, feed, start) and time.monotonic() < deadline:
                await client.publish(topic, homebase.batch([int(time.time())]), qos=1)
                await asyncio.sleep(5)
            print(f"demo history: in from {start.date()} on", flush=True)
    HISTORY_SENT.write_text(f"{since.isoformat()}\n")


async def worked_off(settings: Settings, feed: int, month: datetime) -> bool:
    """Whether the engine has made the days from ``month`` on and holds no other work of the
    feed but the last minutes' live readings."""
    conn = await asyncpg.connect(settings.database.url)
    try:
        return bool(await conn.fetchval(BACKLOG_DONE, feed, month))
    finally:
        await conn.close()


async def mark_meters(settings: Settings, feed: int, since: datetime) -> None:
    """The meter reader's consumption total the main meter, the clamp's a sub-meter, from
    ``since``: once the engine has made them (it does from the first readings)."""
    deadline = time.monotonic() + 300
    while True:
        conn = await asyncpg.connect(settings.database.url)
        try:
            main = await conn.fetchval(CHANNEL_TOTAL, feed, MAIN_METER_CHANNEL)
            clamp = await conn.fetchval(CHANNEL_TOTAL, feed, CLAMP_CHANNEL)
        finally:
            await conn.close()
        if main is not None and clamp is not None:
            break
        if time.monotonic() > deadline:
            raise RuntimeError("the engine made no streams of the demo's first day in 5 minutes")
        await asyncio.sleep(1)
    for stream, role in ((main, "--main"), (clamp, "--submeter")):
        await asyncio.to_thread(
            admin, settings, "streams", "configure", str(stream), "--from", since.isoformat(), role
        )


async def keep_market(settings: Settings, feed: int, history: datetime) -> None:
    """The demo area's prices kept published (from ``history`` on, then each day's as the
    market publishes it), and the demo feed on a dynamic tariff of the area: its money, price
    curve, plan and "Tomorrow's prices are in" notice show real figures. A failure is printed
    and tried again a minute later: the demo homebase goes on sending whatever happens here."""
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
        # The catalogue's dynamic offer: a supplier's markup and the grid's fees on top of the
        # market, 21 % VAT, a monthly fee, and feed-in paid at the market price, never below
        # zero; a dynamic contract as households in Europe sign them.
        for medium, terms in (("power", CONTRACTS["demo-dynamic"]), ("export", DYNAMIC_EXPORT)):
            await asyncio.to_thread(
                admin,
                settings,
                "tariffs",
                "set",
                str(feed),
                "--medium",
                medium,
                "--from",
                history.isoformat(),
                *tariff_options(terms),
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
