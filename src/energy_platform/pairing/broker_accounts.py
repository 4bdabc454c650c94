"""Broker accounts of homebases: one interface (:class:`BrokerAccounts`), one implementation
per broker; this module's functions are Mosquitto's, on its dynamic security plugin
(docs/devices.md); RabbitMQ's is :class:`~energy_platform.pairing.rabbitmq.RabbitAccounts`.

A homebase logs in with username = its SN, client id = its SN and password =
:func:`~energy_platform.core.codec.envelope.mqtt_password` of its secret. Its role
``homebase-{SN}`` allows publishing to its own ``homebases/{SN}/data`` and ``.../status`` (under
the cluster's topic prefix) and nothing else: the plugin denies every other publish and every
subscription by default. The cluster gives the account when it pairs the homebase and removes it
when it unpairs, over the plugin's ``$CONTROL/dynamic-security/v1`` topic, as the account of
``EP_MQTT_ACCOUNTS_URL``.
"""

from __future__ import annotations

import asyncio
import secrets
from typing import Any, Protocol
from urllib.parse import urlsplit

import aiomqtt
import msgspec

from energy_platform.core.codec.envelope import mqtt_password
from energy_platform.core.errors import ConfigurationError, Unavailable
from energy_platform.core.serials import SERIAL_NUMBER
from energy_platform.core.settings import MqttSettings
from energy_platform.pairing.rabbitmq import RabbitAccounts

CONTROL = "$CONTROL/dynamic-security/v1"
TIMEOUT = 10.0


class _Result(msgspec.Struct, rename="camel"):
    command: str
    error: str | None = None
    correlation_data: str | None = None
    data: msgspec.Raw = msgspec.field(default_factory=lambda: msgspec.Raw(b"{}"))


class _Acl(msgspec.Struct):
    acltype: str
    topic: str
    allow: bool = False


class _Role(msgspec.Struct):
    rolename: str
    acls: list[_Acl] = []


class _Roles(msgspec.Struct):
    roles: list[_Role]


class _Clients(msgspec.Struct):
    clients: list[str]


class _Response(msgspec.Struct):
    responses: list[_Result]


class BrokerAccounts(Protocol):
    """What a cluster does with its broker's homebase logins, whichever the broker."""

    async def give(self, sn: str, secret: bytes) -> None:
        """Create (or renew) the login of homebase ``sn``: it may publish its own data and
        status topics and nothing else."""

    async def remove(self, sn: str) -> None:
        """Remove the login of homebase ``sn`` and close its connection."""

    async def homebases(self) -> set[str]:
        """Serial numbers that have a login this cluster gave."""


class MosquittoAccounts:
    """:class:`BrokerAccounts` on Mosquitto's dynamic security plugin."""

    def __init__(self, mqtt: MqttSettings) -> None:
        self._mqtt = mqtt

    async def give(self, sn: str, secret: bytes) -> None:
        await give_account(self._mqtt, sn, secret)

    async def remove(self, sn: str) -> None:
        await remove_account(self._mqtt, sn)

    async def homebases(self) -> set[str]:
        return await homebase_accounts(self._mqtt)


def broker_accounts(mqtt: MqttSettings) -> BrokerAccounts:
    """The accounts of ``EP_MQTT_BROKER``; requires ``EP_MQTT_ACCOUNTS_URL``."""
    require_accounts(mqtt)
    if mqtt.broker == "rabbitmq":
        return RabbitAccounts(mqtt)
    return MosquittoAccounts(mqtt)


def role_name(sn: str) -> str:
    return f"homebase-{sn}"


def _topics(mqtt: MqttSettings, sn: str) -> list[str]:
    return [f"{mqtt.topic_prefix}homebases/{sn}/{leaf}" for leaf in ("data", "status")]


async def give_account(mqtt: MqttSettings, sn: str, secret: bytes) -> None:
    """Create (or renew) the broker account of homebase ``sn``."""
    role = role_name(sn)
    acls = [
        {"acltype": "publishClientSend", "topic": topic, "priority": 0, "allow": True}
        for topic in _topics(mqtt, sn)
    ]
    await _run(
        mqtt,
        # Deleted first so that a re-pairing (a new secret, a new prefix) starts clean.
        [{"command": "deleteClient", "username": sn}, {"command": "deleteRole", "rolename": role}],
        [
            {"command": "createRole", "rolename": role, "acls": acls},
            {
                "command": "createClient",
                "username": sn,
                "password": mqtt_password(secret),
                "clientid": sn,
                "roles": [{"rolename": role, "priority": 0}],
            },
        ],
    )


async def remove_account(mqtt: MqttSettings, sn: str) -> None:
    """Remove the broker account of homebase ``sn`` (its open connection is closed too)."""
    await _run(
        mqtt,
        [
            {"command": "deleteClient", "username": sn},
            {"command": "deleteRole", "rolename": role_name(sn)},
        ],
        [],
    )


async def homebase_accounts(mqtt: MqttSettings) -> set[str]:
    """Serial numbers of the homebases that have an account this cluster gave: a login named
    after the SN whose role allows exactly this cluster's topics for it. Accounts of other
    clusters on a shared broker (another topic prefix) and the services' own are not among
    them."""
    listed = await _run(
        mqtt,
        [],
        [
            {"command": "listClients", "verbose": False, "count": -1, "offset": 0},
            {"command": "listRoles", "verbose": True, "count": -1, "offset": 0},
        ],
    )
    clients, roles = (r.data for r in listed)
    try:
        logins = set(msgspec.json.decode(clients, type=_Clients).clients)
        granted = {
            role.rolename: {a.topic for a in role.acls if a.allow}
            for role in msgspec.json.decode(roles, type=_Roles).roles
        }
    except msgspec.DecodeError as e:
        raise Unavailable(f"the broker's account service sent an unreadable list: {e}") from e
    return {
        sn
        for sn in logins
        if SERIAL_NUMBER.fullmatch(sn) and granted.get(role_name(sn)) == set(_topics(mqtt, sn))
    }


def require_accounts(mqtt: MqttSettings) -> None:
    """A paired homebase needs its broker account: without the setting that gives accounts it
    could never connect, so pairing without it is an error, never a silent skip."""
    if not mqtt.accounts_url:
        raise ConfigurationError(
            "EP_MQTT_ACCOUNTS_URL is not set: a paired homebase needs a broker account; set it to"
            " the broker's dynamic-security admin account, mqtt://user:password@host:port (on"
            " RabbitMQ its management API, http://user:password@host:15672)"
            " (docs/devices.md#broker-accounts)"
        )


async def _run(
    mqtt: MqttSettings, tolerant: list[dict[str, Any]], strict: list[dict[str, Any]]
) -> list[_Result]:
    """Send the commands; errors of ``tolerant`` ones (deleting what is not there) are fine.
    The results of the ``strict`` ones."""
    require_accounts(mqtt)
    url = urlsplit(mqtt.accounts_url)
    if url.scheme != "mqtt" or not url.hostname:
        raise ConfigurationError(
            "EP_MQTT_ACCOUNTS_URL must look like mqtt://user:password@host:port"
        )
    # Responses carry no MQTT correlation property in 2.0.11; the plugin echoes a command's
    # own correlationData field, which tells this answer from another client's.
    correlation = secrets.token_hex(8)
    commands = [*tolerant, *strict]
    commands[0] = {**commands[0], "correlationData": correlation}
    response: _Response | None = None
    try:
        async with aiomqtt.Client(
            url.hostname,
            url.port or 1883,
            username=url.username,
            password=url.password,
            identifier=f"accounts-{secrets.token_hex(4)}",
            protocol=aiomqtt.ProtocolVersion.V5,
            timeout=TIMEOUT,
        ) as client:
            await client.subscribe(f"{CONTROL}/response", qos=1)
            await client.publish(CONTROL, msgspec.json.encode({"commands": commands}), qos=1)
            async with asyncio.timeout(TIMEOUT):
                async for message in client.messages:
                    payload = message.payload if isinstance(message.payload, bytes) else b""
                    candidate = msgspec.json.decode(payload, type=_Response)
                    first = candidate.responses[0] if candidate.responses else None
                    if first is not None and first.correlation_data == correlation:
                        response = candidate
                        break
    except (aiomqtt.MqttError, TimeoutError, msgspec.DecodeError) as e:
        raise Unavailable(f"the broker's account service is unreachable: {e!r}") from e
    if response is None:
        raise Unavailable("the broker's account service did not answer")
    results = response.responses[len(tolerant) :]
    failed = [f"{r.command}: {r.error}" for r in results if r.error]
    if failed:
        raise Unavailable(f"the broker refused: {'; '.join(failed)}")
    return results
