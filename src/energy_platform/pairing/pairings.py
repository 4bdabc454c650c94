"""This cluster's hold on a homebase: its pairing at provisioning and its broker account.

The cluster holds a homebase while the homebase has a feed here or a forwarder registration
here (docs/provisioning.md#pairing). The first of those pairs it and gives its broker account;
when the last one goes, the cluster unpairs it and removes the account. Both steps run inside
the caller's transaction, after its change to feeds or registrations, so a refusal from
provisioning or the broker rolls that change back. Decisions about one homebase are serialised
by a transaction-level advisory lock on its serial number: a feed deleted while the homebase is
being registered cannot unpair it from under the registration.
"""

from __future__ import annotations

import asyncio

import asyncpg
import httpx
import msgspec
import structlog

from energy_platform.core.background import Periodic
from energy_platform.core.db.pool import Connection
from energy_platform.core.errors import NotFound
from energy_platform.core.http.clients import http_client
from energy_platform.core.settings import MqttSettings, PairingSettings, Settings
from energy_platform.pairing.broker_accounts import BrokerAccounts, broker_accounts
from energy_platform.pairing.provisioning_client import ProvisioningClient

log = structlog.get_logger()
TIMEOUT = 10.0
LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('pairing ' || $1, 0))"
# What holds a homebase here: its feed and its forwarder registration (at most one of each).
HOLDERS = """
SELECT (SELECT count(*) FROM cluster.feeds WHERE homebase_sn = $1)
     + (SELECT count(*) FROM forwarder.registrations WHERE homebase_sn = $1)"""


class Reconciled(msgspec.Struct, frozen=True):
    """What ``admin broker-accounts sync`` did."""

    paired: int
    given: list[str]
    removed: list[str]


class Pairings:
    """Pairs and unpairs homebases for this cluster, as an async context manager that owns
    its HTTP client. Enabled only with this cluster's secret (a cluster without provisioning
    pairs nothing) and ``enabled``; then the broker accounts setting is required at once."""

    def __init__(
        self, cluster: PairingSettings, mqtt: MqttSettings, *, enabled: bool = True
    ) -> None:
        self.enabled = enabled and bool(cluster.cluster_secret)
        # A pairing without an account could never connect: the setting is required at once.
        self._accounts: BrokerAccounts | None = broker_accounts(mqtt) if self.enabled else None
        self._cluster = cluster
        self._http: httpx.AsyncClient | None = None

    async def __aenter__(self) -> Pairings:
        self._http = http_client(timeout=TIMEOUT)
        return self

    async def __aexit__(self, *_: object) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    @property
    def _provisioning(self) -> ProvisioningClient:
        if self._http is None:
            raise RuntimeError("use Pairings as an async context manager")
        return ProvisioningClient(self._cluster, self._http)

    @property
    def _broker(self) -> BrokerAccounts:
        if self._accounts is None:
            raise RuntimeError("pairing is not enabled for this cluster")
        return self._accounts

    async def hold(self, conn: Connection, sn: str) -> None:
        """After a feed or a registration of ``sn`` was added (in this transaction): unless
        the other one already held it, pair it with this cluster and give its broker account.
        Conflict if it is paired to another cluster, NotFound if provisioning does not know
        it."""
        if not self.enabled:
            return
        await conn.execute(LOCK, sn)
        if await conn.fetchval(HOLDERS, sn) > 1:
            return  # held already: giving the account again would cut its connection
        await self._provisioning.pair(sn)
        await self._broker.give(sn, await self._provisioning.secret(sn))

    async def release(self, conn: Connection, sn: str) -> bool:
        """Unpair ``sn`` and remove its account unless a feed or a registration here still
        holds it; True if it was released."""
        if not self.enabled:
            return False
        await conn.execute(LOCK, sn)
        if await conn.fetchval(HOLDERS, sn) > 0:
            return False
        await self._provisioning.unpair(sn)
        await self._broker.remove(sn)
        return True

    async def reconcile(self, conn: Connection, *, renew: bool = False) -> Reconciled:
        """Put the broker's homebase accounts in step with this cluster's pairings at
        provisioning: an account for every homebase paired here (with ``renew``, every one is
        given again, as after its secret changed), none for a homebase paired elsewhere or
        not at all. Each homebase is decided under its lock, with its pairing asked again, so
        a pairing made or undone meanwhile is not undone here."""
        paired = set(await self._provisioning.paired())
        present = await self._broker.homebases()
        given, removed = [], []
        for sn in sorted(paired if renew else paired - present):
            async with conn.transaction():
                await conn.execute(LOCK, sn)
                try:
                    secret = await self._provisioning.secret(sn)
                except NotFound:
                    continue  # unpaired meanwhile
                await self._broker.give(sn, secret)
                given.append(sn)
        for sn in sorted(present - paired):
            async with conn.transaction():
                await conn.execute(LOCK, sn)
                if await self._paired_here(sn):
                    continue  # paired meanwhile, with the account it has
                await self._broker.remove(sn)
                removed.append(sn)
        return Reconciled(len(paired), given, removed)

    async def _paired_here(self, sn: str) -> bool:
        try:
            await self._provisioning.secret(sn)
        except NotFound:
            return False
        return True


def account_reconciliation(settings: Settings) -> list[Periodic]:
    """The engine's scheduled ``admin broker-accounts sync``: none without this cluster's
    secret or with the interval 0."""
    interval = settings.pairing.accounts_sync_interval
    if not settings.pairing.cluster_secret or not interval:
        return []
    pairings = Pairings(settings.pairing, settings.mqtt)

    async def work(pool: asyncpg.Pool, _: asyncio.Event) -> dict[str, int]:
        async with pairings, pool.acquire() as conn:
            done = await pairings.reconcile(conn)
        if done.given or done.removed:
            log.info("broker accounts reconciled", given=done.given, removed=done.removed)
        return {"paired": done.paired, "given": len(done.given), "removed": len(done.removed)}

    return [Periodic("broker accounts", settings.database, interval, work)]
