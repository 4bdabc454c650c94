"""The platform as a cluster runs it, for tests across domains: settings on free ports with a
fresh broker identity, this cluster registered with provisioning, ``serve`` as a real process,
and homebases paired and publishing as real ones do."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import socket
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal

import aiomqtt
import httpx
import msgspec

from energy_platform.core.codec.format_v4 import HomebaseRecord
from energy_platform.core.settings import (
    DeviceSettings,
    HttpSettings,
    MqttSettings,
    PairingSettings,
    ProvisioningSettings,
    Settings,
)
from energy_platform.devices.simulator.homebase import (
    SimulatedHomebase,
    data_topic,
    homebase_client,
    status_topic,
)
from energy_platform.pairing.broker_accounts import broker_accounts
from energy_platform.services import build_services
from tests.support.admin import CLI, run_admin
from tests.support.http import http_client
from tests.support.provisioning import add_cluster, add_homebase
from tests.support.services import free_port, running


class Platform(msgspec.Struct, frozen=True):
    settings: Settings
    api: str
    provisioning: str
    user_token: str
    user_id: str

    def client(self) -> httpx.AsyncClient:
        return http_client(
            base_url=self.api, headers={"Authorization": f"Bearer {self.user_token}"}, timeout=10
        )


def platform_settings(settings: Settings, mqtt_url: str, **ingest: Any) -> Settings:
    """Free ports, a fresh MQTT identity and share group, and a short-lived broker session."""
    tag = secrets.token_hex(4)
    return msgspec.structs.replace(
        settings,
        http=HttpSettings(
            api_port=free_port(), provisioning_port=free_port(), forwarder_port=free_port()
        ),
        devices=DeviceSettings(
            coap_port=free_port(socket.SOCK_DGRAM), route_cache_seconds=0.2, **ingest
        ),
        mqtt=MqttSettings(
            url=mqtt_url,
            accounts_url=settings.mqtt.accounts_url,
            client_id=f"ingest-test-{tag}",
            share_group=f"test-{tag}",
            session_expiry=120,
            topic_prefix=f"test-{tag}/",
        ),
        provisioning=ProvisioningSettings(
            secret_key=secrets.token_hex(32), tftp_port=free_port(socket.SOCK_DGRAM)
        ),
    )


async def with_cluster(settings: Settings) -> Settings:
    """Register this cluster with provisioning; settings that carry its secret."""
    cluster = await add_cluster(settings, "ingest-test cluster")
    provisioning = f"http://127.0.0.1:{settings.http.provisioning_port}"
    return msgspec.structs.replace(
        settings,
        pairing=PairingSettings(provisioning_url=provisioning, cluster_secret=cluster.secret),
    )


@asynccontextmanager
async def provisioning_platform(s: Settings) -> AsyncIterator[Platform]:
    """Provisioning of settings ``s`` (this cluster registered) in the test's loop, and a user;
    ingest is the test's to start."""
    user = await run_admin(s, "users", "add", f"ingest-{secrets.token_hex(3)}")
    base = s.pairing.provisioning_url
    async with running(*build_services("provisioning", s), ready_urls=(base + "/healthz",)):
        yield Platform(s, "", base, user["token"], user["id"])


@asynccontextmanager
async def platform_in_loop(s: Settings) -> AsyncIterator[Platform]:
    """Provisioning, ingest (MQTT + CoAP data server) and the data API of settings ``s`` (this
    cluster registered) in the test's loop, and a user to own feeds."""
    user = await run_admin(s, "users", "add", f"ingest-{secrets.token_hex(3)}")
    api = f"http://127.0.0.1:{s.http.api_port}"
    provisioning = s.pairing.provisioning_url
    services = build_services(["api", "provisioning", "ingest"], s)
    async with running(*services, ready_urls=(api + "/healthz", provisioning + "/healthz")):
        yield Platform(s, api, provisioning, user["token"], user["id"])


def serve_env(s: Settings) -> dict[str, str]:
    """The environment of an ``energy-platform serve`` process that runs with settings ``s``."""
    return {
        **os.environ,
        "EP_DATABASE_URL": s.database.url,
        "EP_MQTT_BROKER": s.mqtt.broker,
        "EP_MQTT_URL": s.mqtt.url,
        "EP_MQTT_AMQP_URL": s.mqtt.amqp_url,
        "EP_MQTT_ACCOUNTS_URL": s.mqtt.accounts_url,
        "EP_MQTT_CLIENT_ID": s.mqtt.client_id,
        "EP_MQTT_SHARE_GROUP": s.mqtt.share_group,
        "EP_MQTT_SESSION_EXPIRY": str(s.mqtt.session_expiry),
        "EP_MQTT_TOPIC_PREFIX": s.mqtt.topic_prefix,
        "EP_HTTP_API_PORT": str(s.http.api_port),
        "EP_HTTP_PROVISIONING_PORT": str(s.http.provisioning_port),
        "EP_HTTP_FORWARDER_PORT": str(s.http.forwarder_port),
        "EP_DEVICES_COAP_PORT": str(s.devices.coap_port),
        "EP_PROVISIONING_TFTP_PORT": str(s.provisioning.tftp_port),
        "EP_PROVISIONING_SECRET_KEY": s.provisioning.secret_key,
        "EP_PAIRING_PROVISIONING_URL": s.pairing.provisioning_url,
        "EP_PAIRING_CLUSTER_SECRET": s.pairing.cluster_secret,
        "EP_COMPACTION_AFTER_DAYS": str(s.compaction.after_days),
        "EP_LOG_FORMAT": "json",
    }


def start_serve(s: Settings, *services: str) -> subprocess.Popen[bytes]:
    """``energy-platform serve SERVICE...`` as a real process; its JSON log on stderr."""
    return subprocess.Popen([CLI, "serve", *services], env=serve_env(s), stderr=subprocess.PIPE)


def start_ingest(s: Settings, *also: str) -> subprocess.Popen[bytes]:
    """``serve ingest`` (and the services ``also``) as a process, beside ``provisioning_only``
    (its own CoAP port)."""
    own_port = DeviceSettings(coap_port=free_port(socket.SOCK_DGRAM))
    return start_serve(msgspec.structs.replace(s, devices=own_port), "ingest", *also)


class ProcessLog:
    """The events a process logs (JSON lines) from the moment ingest subscribed, read in the
    background: a full pipe would stall the process."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def count(self, *events: str) -> int:
        """How many of its log lines were one of ``events`` (a log line's ``event``)."""
        return sum(event in events for event in self.events)


async def wait_subscribed(process: subprocess.Popen[bytes]) -> ProcessLog:
    """Read the process's log until ingest has subscribed, then go on reading it: a test waits
    for what ingest says it did (a retry, a reconnection) rather than for a guessed time."""
    stderr = process.stderr
    assert stderr is not None
    # A process's start (imports, a connection) takes seconds, more on a loaded machine.
    async with asyncio.timeout(60):
        while True:
            line = await asyncio.to_thread(stderr.readline)
            assert line, "ingest exited before subscribing"
            if b'"subscribed"' in line:
                break
    log = ProcessLog()

    def drain() -> None:
        for line in iter(stderr.readline, b""):
            with contextlib.suppress(msgspec.DecodeError):  # not all of it is the JSON log
                log.events.append(msgspec.json.decode(line, type=_Event).event)

    threading.Thread(target=drain, daemon=True).start()
    return log


class _Event(msgspec.Struct):
    event: str = ""


async def add_feed(
    settings: Settings,
    owner: str,
    sn: str,
    *,
    title: str = "Test home",
    timezone: str = "Europe/Prague",
    pair: bool = True,
    subscription_from: str | None = None,
    subscription_to: str | None = None,
) -> Any:
    """The tests' one way to add a feed as an operator does: ``admin feeds add`` in this process
    for user ``owner``; its JSON answer. With ``pair`` the command pairs homebase ``sn`` with
    the cluster of ``settings`` too (a CoAP device or another cluster's homebase is added with
    ``pair=False``); its subscription runs from ``subscription_from`` to ``subscription_to``,
    else for the command's default. Tests
    without a platform store feeds with ``seeding.add_feed`` (the ``new_feed`` fixture)."""
    no_pair = () if pair else ("--no-pair",)
    period = [
        *(("--subscription-from", subscription_from) if subscription_from else ()),
        *(("--subscription-to", subscription_to) if subscription_to else ()),
    ]
    return await run_admin(
        settings, "feeds", "add", "--owner", owner, "--homebase", sn, "--title", title,
        "--timezone", timezone, *no_pair, *period,
    )  # fmt: skip


async def paired_homebase(
    platform: Platform, *, feed: bool = True
) -> tuple[str, bytes, str | None]:
    """A new homebase paired with this cluster: (sn, secret, feed id or None).

    With a feed, the pairing is what ``admin feeds add`` does; without one, a direct call.
    """
    s = platform.settings
    sn = await add_homebase(s)
    auth = {"X-SvcClusterAuth": s.pairing.cluster_secret}
    feed_id = None
    async with http_client(base_url=platform.provisioning + "/api", headers=auth) as http:
        if feed:
            feed_id = (await add_feed(s, platform.user_id, sn))["id"]
        else:
            assert (await http.post(f"/device/{sn}/pair/")).status_code == 200
        secret = bytes.fromhex((await http.get(f"/device/{sn}/secret/")).json()["secret"])
    if not feed:
        # What this cluster's pairing gives a homebase (admin feeds add does it itself).
        await broker_accounts(s.mqtt).give(sn, secret)
    return sn, secret, feed_id


async def publish_as(
    platform: Platform,
    sn: str,
    secret: bytes,
    payload: bytes,
    *,
    kind: Literal["data", "status"] = "data",
    retain: bool = False,
) -> None:
    """Publish ``payload`` (QoS 1) as homebase ``sn`` does: logged in with its own account."""
    prefix = platform.settings.mqtt.topic_prefix
    topic = data_topic(sn, prefix) if kind == "data" else status_topic(sn, prefix)
    async with homebase_client(platform.settings.mqtt, sn, secret, will=False) as client:
        await client.publish(topic, payload, qos=1, retain=retain)


MESSAGES = 2_000
TIMES_PER_MESSAGE = 10  # x 5 readings = 50 points a message, 100,000 in all


def messages(
    homebase: SimulatedHomebase, count: int = MESSAGES, *, first: int | None = None
) -> list[bytes]:
    """``count`` messages of 50 points each, at distinct times ending a minute ago, or
    starting at ``first``."""
    t0 = int(time.time()) - count * TIMES_PER_MESSAGE - 60 if first is None else first
    out = []
    for m in range(count):
        records = []
        for k in range(TIMES_PER_MESSAGE):
            t = t0 + m * TIMES_PER_MESSAGE + k
            records.append(HomebaseRecord(4, t, 3, 1, 1, {"1": [float(t % 1000), 2.0, 3.0]}))
            records.append(HomebaseRecord(4, t, 5, 2, 2, {"7": t / 1000, "5": 21.5}))
        out.append(homebase.encrypt(records))
    return out


def later_messages(homebase: SimulatedHomebase, count: int) -> tuple[int, list[bytes]]:
    """``count`` messages of 50 points at times later than those of every :func:`messages`
    made before them (theirs end a minute before they were made), whatever the time between:
    their first time, and the messages. Published behind others on one session, they are
    markers: ingest stores a homebase's messages in the order the broker delivers them, so
    once their points are stored, every message delivered before them has been handled."""
    first = int(time.time()) - 59
    return first, messages(homebase, count, first=first)


def later_message(homebase: SimulatedHomebase) -> tuple[int, bytes]:
    """One of :func:`later_messages`: its first time, and the message."""
    first, (message,) = later_messages(homebase, 1)
    return first, message


async def publish_killing(
    s: Settings, sn: str, secret: bytes, burst: list[bytes], kill: Callable[[], None], at: int
) -> int:
    """Publish ``burst`` as homebase ``sn``, as fast as the broker acknowledges, and call
    ``kill`` once ``at`` messages are acknowledged; the number the broker acknowledged."""
    acknowledged = 0
    with contextlib.suppress(aiomqtt.MqttError):
        async with homebase_client(s.mqtt, sn, secret, will=False) as client:
            for payload in burst:
                # A publish after the kill would wait for its PUBACK for ever: 5 s say it is
                # gone. One before it gets the time a loaded broker may take to answer.
                wait = 5 if acknowledged >= at else 30
                await client.publish(
                    data_topic(sn, s.mqtt.topic_prefix), payload, qos=1, timeout=wait
                )
                acknowledged += 1
                if acknowledged == at:
                    kill()
    return acknowledged
