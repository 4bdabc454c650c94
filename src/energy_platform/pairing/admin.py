"""Admin commands of the devices domain: the broker's homebase accounts."""

from __future__ import annotations

import asyncpg
import click

from energy_platform.core.console import CommandGroup, emit, run_in_transaction
from energy_platform.core.errors import ConfigurationError
from energy_platform.core.settings import Settings
from energy_platform.pairing.pairings import Pairings, Reconciled


@click.group("broker-accounts", cls=CommandGroup)
def broker_accounts() -> None:
    """The broker's homebase accounts (docs/devices.md#broker-accounts)."""


@broker_accounts.command("sync")
@click.option("--renew", is_flag=True, help="Give every paired homebase its account again.")
@click.pass_obj
def sync(settings: Settings, renew: bool) -> None:
    """Give an account to every homebase paired with this cluster that lacks one and remove
    the accounts of homebases paired elsewhere or not at all; prints what changed. The engine
    does the same every EP_PAIRING_ACCOUNTS_SYNC_INTERVAL seconds."""
    if not settings.pairing.cluster_secret:
        raise ConfigurationError(
            "EP_PAIRING_CLUSTER_SECRET is not set:"
            " this cluster's pairings are known only to provisioning"
        )
    pairings = Pairings(settings.pairing, settings.mqtt)

    async def work(conn: asyncpg.Connection) -> Reconciled:
        async with pairings:
            return await pairings.reconcile(conn, renew=renew)

    emit(run_in_transaction(settings.database, work))


GROUPS = [broker_accounts]
