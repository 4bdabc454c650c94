"""Simulated devices: a homebase with realistic sensors, publishing encrypted v4 batches.

Values follow a daily load curve so that dashboards and the engine see plausible data: three
phases of a clamp meter, gas and water meters that only count up, a thermometer, the radio's
signal strength, and a meter reader on the main meter of a house with solar panels, as a Dutch
(DSMR) meter reports: import and export power, and import and export registers per tariff.
The same code feeds ``make run``'s demo homebase, the tests and the benchmarks.
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from urllib.parse import urlsplit

import aiomqtt
import msgspec
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from energy_platform.core.background import sleep_unless_stopped
from energy_platform.core.codec.envelope import derive_key, mqtt_password, seal
from energy_platform.core.codec.format_v4 import HomebaseRecord
from energy_platform.core.settings import MqttSettings

RAW_POINTS_PER_TIME = 13
"""Raw points of one time's records: 3 phases, gas, water, temperature, humidity, and the meter
reader's power import and export and 4 registers (signal strength is a system stream)."""


class SimulatedHomebase:
    """Sensor state of one homebase; ``batch(t)`` advances it to unix time ``t``."""

    def __init__(self, sn: str, secret: bytes, seed: int | None = None) -> None:
        self.sn = sn
        self.secret = secret
        self.aead: AESGCM = derive_key(secret)
        self._random = random.Random(seed if seed is not None else sn)  # noqa: S311 - sensor noise
        self._gas = self._random.uniform(1000, 5000)
        self._water = self._random.uniform(100, 900)
        # Wh on the meter's registers: import and export, tariff 1 (night) and 2 (day).
        self._registers = {
            code: self._random.uniform(1e6, 5e6) for code in ("1.8.1", "1.8.2", "2.8.1", "2.8.2")
        }
        self._last_t: int | None = None

    def load_watts(self, t: int) -> float:
        """A household's daily curve: a night base load, morning and evening peaks."""
        hour = (t % 86_400) / 3600
        curve = (
            250
            + 900 * math.exp(-((hour - 7.5) ** 2) / 2)
            + 1600 * math.exp(-((hour - 19) ** 2) / 3)
        )
        return curve * self._random.uniform(0.85, 1.15)

    def records(self, t: int) -> list[HomebaseRecord]:
        elapsed = 0 if self._last_t is None else max(0, t - self._last_t)
        self._last_t = t
        load = self.load_watts(t)
        phases = [round(load * share, 1) for share in (0.45, 0.35, 0.20)]
        self._gas += elapsed * self._random.uniform(0, 0.0004)
        self._water += elapsed * self._random.uniform(0, 0.00005)
        hour = (t % 86_400) / 3600
        temperature = 21 + 1.5 * math.sin((hour - 9) / 24 * 2 * math.pi)
        signal = -60 - self._random.uniform(0, 20)
        # Solar panels of 4 kW peak from 06:00 to 18:00: at midday the house feeds in.
        solar = 4000 * max(0.0, math.sin((hour - 6) / 12 * math.pi))
        taken, fed_in = max(load - solar, 0.0), max(solar - load, 0.0)
        tariff = "1" if hour < 7 or hour >= 23 else "2"
        self._registers["1.8." + tariff] += taken * elapsed / 3600
        self._registers["2.8." + tariff] += fed_in * elapsed / 3600
        meter = {code: round(wh, 3) for code, wh in self._registers.items()}
        return [
            HomebaseRecord(4, t, 3, 1, 0x1A01, {"1": phases, "40": round(signal)}),
            HomebaseRecord(4, t, 5, 2, 0x1A02, {"7": round(self._gas, 4)}),
            HomebaseRecord(4, t, 6, 3, 0x1A03, {"8": round(self._water, 5)}),
            HomebaseRecord(4, t, 8, 4, 0x1A04, {"5": round(temperature, 2), "6": 45.0}),
            HomebaseRecord(
                4, t, 7, 5, 0x1A05, o={"1.7.0": round(taken, 1), "2.7.0": round(fed_in, 1), **meter}
            ),
        ]

    def batch(self, times: Sequence[int]) -> bytes:
        """One encrypted message holding the records of every time in ``times``."""
        return self.encrypt([r for t in times for r in self.records(t)])

    def encrypt(self, records: Sequence[HomebaseRecord]) -> bytes:
        """``records`` as the homebase sends them: JSON, sealed with its key."""
        return seal(self.aead, self.sn, msgspec.json.encode(records))


def homebase_client(
    mqtt: MqttSettings, sn: str, secret: bytes, *, will: bool = True
) -> aiomqtt.Client:
    """The MQTT connection of homebase ``sn``, logged in as a real homebase is: username and
    client id = SN, password derived from its secret, ``offline`` as its retained last will.

    Only the broker's host and port are taken from ``mqtt.url`` (not its service account)."""
    url = urlsplit(mqtt.url)
    last_will = aiomqtt.Will(status_topic(sn, mqtt.topic_prefix), b"offline", qos=1, retain=True)
    return aiomqtt.Client(
        url.hostname or "127.0.0.1",
        url.port or 1883,
        username=sn,
        password=mqtt_password(secret),
        identifier=sn,  # the account is bound to it: no other client can take the session
        # RabbitMQ 3.10's MQTT plugin speaks 3.1.1 only, as homebases do.
        protocol=aiomqtt.ProtocolVersion.V311
        if mqtt.broker == "rabbitmq"
        else aiomqtt.ProtocolVersion.V5,
        will=last_will if will else None,
    )


def data_topic(sn: str, prefix: str = "") -> str:
    return f"{prefix}homebases/{sn}/data"


def status_topic(sn: str, prefix: str = "") -> str:
    return f"{prefix}homebases/{sn}/status"


async def publish_forever(
    mqtt: MqttSettings,
    homebases: Sequence[SimulatedHomebase],
    interval: float,
    stop: asyncio.Event,
    batches: int | None = None,
) -> int:
    """Publish one batch per homebase every ``interval`` seconds (QoS 1), each homebase over its
    own connection and account; returns the count."""
    sent = 0
    prefix = mqtt.topic_prefix
    async with AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(homebase_client(mqtt, h.sn, h.secret))
            for h in homebases
        ]
        for homebase, client in zip(homebases, clients, strict=True):
            await client.publish(status_topic(homebase.sn, prefix), b"online", qos=1, retain=True)
        while not stop.is_set() and (batches is None or sent < batches * len(homebases)):
            t = int(time.time())
            for homebase, client in zip(homebases, clients, strict=True):
                await client.publish(data_topic(homebase.sn, prefix), homebase.batch([t]), qos=1)
                sent += 1
            await sleep_unless_stopped(stop, interval)
    return sent
