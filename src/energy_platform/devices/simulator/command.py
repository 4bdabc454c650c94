"""``energy-platform simulate homebase|coap-device``: devices sending to a running platform.

Device libraries are imported inside the commands, so that other commands start quickly.
"""

from __future__ import annotations

import asyncio
import signal
import time

import click
import msgspec

from energy_platform.core.background import sleep_unless_stopped
from energy_platform.core.console import CommandGroup, emit
from energy_platform.core.http.clients import http_client
from energy_platform.core.settings import PairingSettings, Settings


@click.group("simulate", cls=CommandGroup)
def simulate() -> None:
    """Simulated devices sending to the running platform (stop with Ctrl-C)."""


@simulate.command("homebase")
@click.option("--sn", "sns", multiple=True, required=True, help="Serial number (repeatable).")
@click.option("--secret", help="The homebase secret as hex; default: ask provisioning.")
@click.option("--interval", default=5.0, show_default=True, help="Seconds between batches.")
@click.option("--batches", type=int, help="Stop after this many batches per homebase.")
@click.pass_obj
def simulate_homebase(
    settings: Settings,
    sns: tuple[str, ...],
    secret: str | None,
    interval: float,
    batches: int | None,
) -> None:
    """Publish encrypted v4 batches over MQTT as the given homebases would."""
    from energy_platform.devices.simulator.homebase import SimulatedHomebase, publish_forever

    async def main() -> int:
        homebases = [
            SimulatedHomebase(
                sn, bytes.fromhex(secret) if secret else await fetch_secret(settings.pairing, sn)
            )
            for sn in sns
        ]
        stop = _stop_on_signals()
        return await publish_forever(settings.mqtt, homebases, interval, stop, batches)

    emit({"published": asyncio.run(main())})


@simulate.command("coap-device")
@click.option("--sn", required=True, help="Serial number of the device.")
@click.option("--server", help="host:port of the data server; default: this platform's CoAP.")
@click.option("--interval", default=10.0, show_default=True, help="Seconds between readings.")
@click.option("--count", type=int, help="Stop after this many readings.")
@click.pass_obj
def simulate_coap_device(
    settings: Settings, sn: str, server: str | None, interval: float, count: int | None
) -> None:
    """POST OBIS readings to the CoAP data server, as a meter with its own radio would."""
    import aiocoap

    from energy_platform.core.coap import JSON

    target = server or f"{settings.devices.host}:{settings.devices.coap_port}"

    async def main() -> dict[str, int]:
        context = await aiocoap.Context.create_client_context()
        stop = _stop_on_signals()
        sent = refused = 0
        energy = 0.0
        try:
            while not stop.is_set() and (count is None or sent + refused < count):
                t = int(time.time())
                watts = [round(300 + 200 * i + 50 * (t % 7), 1) for i in range(3)]
                energy += sum(watts) * interval / 3600
                record = {
                    "f": 4,
                    "t": t,
                    "d": 9,
                    "o": {
                        "1.7.0": sum(watts),
                        "21.7.0": watts[0],
                        "41.7.0": watts[1],
                        "61.7.0": watts[2],
                        "1.8.0": round(energy, 3),
                    },
                }
                request = aiocoap.Message(
                    code=aiocoap.POST,
                    uri=f"coap://{target}/data/{sn}",
                    payload=msgspec.json.encode(record),
                    content_format=JSON,
                )
                response = await context.request(request).response
                if response.code == aiocoap.CHANGED:
                    sent += 1
                else:
                    refused += 1
                    click.echo(f"simulate: data server answered {response.code}", err=True)
                await sleep_unless_stopped(stop, interval)
        finally:
            await context.shutdown()
        return {"sent": sent, "refused": refused}

    emit(asyncio.run(main()))


async def fetch_secret(cluster: PairingSettings, sn: str) -> bytes:
    """A homebase secret as this cluster gets it from provisioning."""

    from energy_platform.pairing.provisioning_client import ProvisioningClient

    async with http_client(timeout=5) as http:
        return await ProvisioningClient(cluster, http).secret(sn)


def _stop_on_signals() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop


GROUPS: list[click.Command] = [simulate]
