"""RabbitMQ as a cluster's broker (``EP_MQTT_BROKER=rabbitmq``, docs/devices.md#rabbitmq).

Homebases speak MQTT 3.1.1 to its MQTT plugin, which publishes every message to the topic
exchange ``amq.topic`` with the topic as routing key (``/`` and ``.`` swapped). One durable
quorum queue, named ``EP_MQTT_SHARE_GROUP``, bound with ``homebases.*.data`` and
``homebases.*.status``, holds them for the ingest workers, which consume it over AMQP.

RabbitMQ 3.10 acknowledges (PUBACK) a message that no queue receives and then drops it, so the
queue and its bindings must exist before any homebase can publish: :class:`RabbitAccounts`
declares them before it creates a homebase's login, and ingest declares them again at start.

Homebase accounts go through the management HTTP API (not ``rabbitmqctl``): it is reachable from
wherever the cluster runs with an ordinary account, where ``rabbitmqctl`` needs the broker's
host and its Erlang cookie and starts an Erlang VM (about half a second) for every command.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import httpx
import msgspec

from energy_platform.core.codec.envelope import mqtt_password
from energy_platform.core.errors import ConfigurationError, Unavailable
from energy_platform.core.http.clients import http_client
from energy_platform.core.serials import SERIAL_NUMBER
from energy_platform.core.settings import MqttSettings

EXCHANGE = "amq.topic"
"""Where the MQTT plugin publishes (its default ``mqtt.exchange``)."""
QUEUE_ARGUMENTS: dict[str, Any] = {"x-queue-type": "quorum"}
"""A quorum queue: replicated on a cluster of three or more nodes, its bodies on disk, never
expiring (no ``x-expires``, no TTL); docs/decisions.md says why not a lazy classic one."""
TIMEOUT = 10.0
_SWAP = str.maketrans("./", "/.")


def routing_key(topic: str) -> str:
    """The routing key of an MQTT topic, as the MQTT plugin makes it."""
    return topic.translate(_SWAP)


def topic_of(key: str) -> str:
    """The MQTT topic a routing key came from."""
    return key.translate(_SWAP)


def binding_keys(mqtt: MqttSettings) -> list[str]:
    prefix = routing_key(mqtt.topic_prefix)
    return [f"{prefix}homebases.*.data", f"{prefix}homebases.*.status"]


def vhost(mqtt: MqttSettings) -> str:
    """The vhost of ``EP_MQTT_AMQP_URL`` (``/`` when it names none)."""
    path = urlsplit(mqtt.amqp_url).path
    return unquote(path[1:]) if len(path) > 1 else "/"


def publish_pattern(mqtt: MqttSettings, sn: str) -> str:
    """The routing keys homebase ``sn`` may publish: its own data and status topics."""
    prefix = re.escape(routing_key(mqtt.topic_prefix))
    return f"^{prefix}homebases\\.{sn}\\.(data|status)$"


class _User(msgspec.Struct):
    name: str


class _TopicPermission(msgspec.Struct):
    user: str
    exchange: str
    write: str


class RabbitAccounts:
    """Homebase logins on RabbitMQ, through its management HTTP API.

    A homebase's user (name = SN, password = its MQTT password) may write only to ``amq.topic``
    (configure and read: nothing), and there only the routing keys of its own data and status
    topics (topic permissions): a publish elsewhere gets no PUBACK and its connection closed.
    """

    def __init__(self, mqtt: MqttSettings) -> None:
        url = urlsplit(mqtt.accounts_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ConfigurationError(
                "EP_MQTT_ACCOUNTS_URL must look like http://user:password@host:15672 on RabbitMQ"
                " (its management API)"
            )
        self._mqtt = mqtt
        self._base = f"{url.scheme}://{url.hostname}:{url.port or 15672}{url.path.rstrip('/')}/api"
        self._auth = (unquote(url.username or ""), unquote(url.password or ""))
        self._vhost = quote(vhost(mqtt), safe="")

    async def give(self, sn: str, secret: bytes) -> None:
        """Create (or renew) the login of homebase ``sn``; the ingest queue first."""
        user = quote(sn, safe="")
        async with self._client() as http:
            await declare_queue(http, self._mqtt, self._vhost)
            # Deleted first, as on Mosquitto: a re-pairing cuts the old session.
            await _call(http, "DELETE", f"/users/{user}", missing_ok=True)
            await _call(
                http, "PUT", f"/users/{user}", {"password": mqtt_password(secret), "tags": ""}
            )
            rights = {"configure": "^$", "write": f"^{re.escape(EXCHANGE)}$", "read": "^$"}
            await _call(http, "PUT", f"/permissions/{self._vhost}/{user}", rights)
            topics = {
                "exchange": EXCHANGE,
                "write": publish_pattern(self._mqtt, sn),
                "read": "^$",
            }
            await _call(http, "PUT", f"/topic-permissions/{self._vhost}/{user}", topics)

    async def remove(self, sn: str) -> None:
        """Remove the login of homebase ``sn``; RabbitMQ closes its open connections."""
        async with self._client() as http:
            await _call(http, "DELETE", f"/users/{quote(sn, safe='')}", missing_ok=True)

    async def homebases(self) -> set[str]:
        """Serial numbers with a login this cluster gave: named after the SN and allowed
        exactly this cluster's topics for it (another cluster's prefix is not ours)."""
        async with self._client() as http:
            users = await _call(http, "GET", "/users")
            permissions = await _call(http, "GET", f"/vhosts/{self._vhost}/topic-permissions")
        try:
            logins = {u.name for u in msgspec.json.decode(users, type=list[_User])}
            granted = msgspec.json.decode(permissions, type=list[_TopicPermission])
        except msgspec.DecodeError as e:
            raise Unavailable(f"the broker's management API sent an unreadable list: {e}") from e
        return {
            p.user
            for p in granted
            if p.user in logins
            and SERIAL_NUMBER.fullmatch(p.user)
            and p.exchange == EXCHANGE
            and p.write == publish_pattern(self._mqtt, p.user)
        }

    def _client(self) -> httpx.AsyncClient:
        return http_client(base_url=self._base, auth=self._auth, timeout=TIMEOUT)


async def declare_queue(http: httpx.AsyncClient, mqtt: MqttSettings, vhost_path: str) -> None:
    """The ingest queue and its bindings, as ingest declares them over AMQP (idempotent)."""
    queue = quote(mqtt.share_group, safe="")
    body = {"durable": True, "auto_delete": False, "arguments": QUEUE_ARGUMENTS}
    await _call(http, "PUT", f"/queues/{vhost_path}/{queue}", body)
    for key in binding_keys(mqtt):
        path = f"/bindings/{vhost_path}/e/{quote(EXCHANGE, safe='')}/q/{queue}"
        await _call(http, "POST", path, {"routing_key": key})


async def _call(
    http: httpx.AsyncClient,
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
    *,
    missing_ok: bool = False,
) -> bytes:
    try:
        response = await http.request(method, path, json=body)
    except httpx.HTTPError as e:
        raise Unavailable(f"the broker's management API is unreachable: {e!r}") from e
    if response.status_code == 404 and missing_ok:
        return b""
    if response.status_code >= 400:
        raise Unavailable(
            f"the broker refused {method} {path}: {response.status_code} {response.text[:200]}"
        )
    return response.content
