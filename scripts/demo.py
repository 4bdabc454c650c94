"""The demo homebase of `make run`: a newcomer sees data within a minute.

demo.py prepare   create (once) a cluster, a user, a homebase and its feed; print their
                  settings as shell assignments (kept in .local/demo.env for later runs)
demo.py run       pair the homebase once provisioning answers, then simulate it until stopped
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from energy_platform import cli
from energy_platform.core.console import run_command
from energy_platform.core.settings import Settings

STATE = Path(__file__).resolve().parents[1] / ".local" / "demo.env"
SN = "DE00000000000001"


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
        "EP_CLUSTER_SECRET": cluster["secret"],
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

    base = settings.cluster.provisioning_url.rstrip("/")
    auth = {"X-SvcClusterAuth": settings.cluster.secret}
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
    homebase = SimulatedHomebase(SN, await fetch_secret(settings.cluster, SN))
    # What this cluster's pairing gives a homebase: its own broker account.
    await give_account(settings.mqtt, SN, homebase.secret)
    await publish_forever(settings.mqtt, [homebase], 5.0, asyncio.Event())


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
