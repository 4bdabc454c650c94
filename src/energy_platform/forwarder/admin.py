"""Admin commands of the forwarder: its customers, their bearer tokens, the homebases each may
register (grants), and the customers whose deliveries a data error parked."""

from __future__ import annotations

import asyncpg
import click
import msgspec

from energy_platform.core.console import CommandGroup, emit, run_in_transaction
from energy_platform.core.errors import InvalidInput, NotFound
from energy_platform.core.inputs import checked_text
from energy_platform.core.settings import Settings
from energy_platform.core.tokens import new_token, token_digest
from energy_platform.forwarder.http.schemas import SN_PATTERN
from energy_platform.pairing.pairings import Pairings

INSERT_CUSTOMER = """
INSERT INTO forwarder.customers (name, token_sha256) VALUES ($1, $2)
RETURNING id, name, created_at"""
LIST_CUSTOMERS = """
SELECT c.id, c.name, c.created_at,
       (SELECT count(*) FROM forwarder.registrations r WHERE r.customer_id = c.id) AS registered,
       ARRAY(SELECT g.homebase_sn FROM forwarder.grants g WHERE g.customer_id = c.id
              ORDER BY g.homebase_sn) AS granted
  FROM forwarder.customers c ORDER BY c.id"""
CUSTOMER_ID = "SELECT id FROM forwarder.customers WHERE id::text = $1 OR name = $1"
GRANT = """
INSERT INTO forwarder.grants (customer_id, homebase_sn)
SELECT $1, sn FROM unnest($2::text[]) AS sn ON CONFLICT DO NOTHING"""
# Revoking ends the registration too: the triggers close its period, so nothing stored after
# it is delivered to this customer.
REVOKE = """
WITH revoked AS (
    DELETE FROM forwarder.grants WHERE customer_id = $1 AND homebase_sn = ANY ($2::text[])
    RETURNING homebase_sn),
unregistered AS (
    DELETE FROM forwarder.registrations WHERE customer_id = $1 AND homebase_sn = ANY ($2::text[])
    RETURNING homebase_sn)
SELECT (SELECT count(*) FROM revoked) AS revoked,
       ARRAY(SELECT homebase_sn FROM unregistered ORDER BY 1) AS unregistered"""
REPLACE_CUSTOMER_DIGEST = """
UPDATE forwarder.customers SET token_sha256 = $2 WHERE id = $1 RETURNING id, name, created_at"""
# Deleting a customer: its registrations end first (the triggers close their periods), then
# the periods go too, so that retention no longer keeps points for a customer that is gone;
# grants, configuration, delivery state and log go with the customer (ON DELETE CASCADE).
UNREGISTER_ALL = """
DELETE FROM forwarder.registrations WHERE customer_id = $1 RETURNING homebase_sn"""
DELETE_CUSTOMER = """
WITH periods AS (DELETE FROM forwarder.registration_periods WHERE customer_id = $1)
DELETE FROM forwarder.customers WHERE id = $1 RETURNING id, name, created_at"""

LIST_PARKED = """
SELECT c.id, c.name, p.sqlstate, p.error, p.since, s.delivered_to
  FROM forwarder.parked_deliveries p
  JOIN forwarder.customers c ON c.id = p.customer_id
  LEFT JOIN forwarder.delivery_state s ON s.customer_id = p.customer_id
 ORDER BY p.since, c.id"""
# Its pending batch, if any, is due at once (its lease would otherwise hold it back).
RETRY = """
WITH retried AS (
    DELETE FROM forwarder.parked_deliveries WHERE customer_id = $1 RETURNING customer_id),
due AS (
    UPDATE forwarder.delivery_state s SET next_attempt_at = NULL
      FROM retried r WHERE s.customer_id = r.customer_id AND s.batch_id IS NOT NULL)
SELECT c.id, c.name, c.created_at
  FROM forwarder.customers c JOIN retried r ON r.customer_id = c.id"""


class Customer(msgspec.Struct):
    id: str
    name: str
    created_at: str


class ListedCustomer(Customer):
    registered: int
    """Homebases registered to the customer now."""
    granted: list[str]
    """Homebases the customer may register (admin customers grant)."""


class Granted(msgspec.Struct):
    customer: str
    granted: list[str]


class Revoked(msgspec.Struct):
    customer: str
    revoked: list[str]
    unregistered: list[str]
    """Of those, the homebases that were registered to the customer: no longer."""


class ParkedCustomer(msgspec.Struct):
    id: str
    name: str
    sqlstate: str
    error: str
    since: str
    delivered_to: str | None
    """The cursor, where it stays while parked: intervals after it are delivered after a retry."""


class RetriedCustomer(Customer):
    retried: bool


class NewCustomer(Customer):
    token: str
    """Shown once: only its SHA-256 is stored."""


class RevokedCustomer(Customer):
    revoked: bool


class DeletedCustomer(Customer):
    deleted: bool
    unregistered: list[str]
    """The homebases that were registered to the customer: their feeds are visible again."""


def _customer_of(row: asyncpg.Record | None, customer: str) -> Customer:
    if row is None:
        raise NotFound(f"no customer with id or name {customer!r}")
    return Customer(str(row["id"]), row["name"], row["created_at"].isoformat())


@click.group("customers", cls=CommandGroup)
def customers() -> None:
    """Customers of the forwarder API."""


@customers.command("add")
@click.argument("name")
@click.pass_obj
def add_customer(settings: Settings, name: str) -> None:
    """Add a customer; prints its bearer token, which is shown only this once."""
    name = checked_text(name, "name")
    token = new_token()

    async def work(conn: asyncpg.Connection) -> NewCustomer:
        try:
            row = await conn.fetchrow(INSERT_CUSTOMER, name, token_digest(token))
        except asyncpg.UniqueViolationError:
            raise InvalidInput(f"a customer named {name!r} exists") from None
        except asyncpg.CheckViolationError:
            raise InvalidInput("the name must not be empty") from None
        assert row is not None  # noqa: S101 - INSERT ... RETURNING returns the row
        return NewCustomer(str(row["id"]), row["name"], row["created_at"].isoformat(), token)

    emit(run_in_transaction(settings.database, work))


@customers.command("list")
@click.pass_obj
def list_customers(settings: Settings) -> None:
    """List customers (never their tokens) with their number of registered homebases."""

    async def work(conn: asyncpg.Connection) -> list[ListedCustomer]:
        return [
            ListedCustomer(
                str(row["id"]),
                row["name"],
                row["created_at"].isoformat(),
                row["registered"],
                row["granted"],
            )
            for row in await conn.fetch(LIST_CUSTOMERS)
        ]

    emit(run_in_transaction(settings.database, work))


def _serials(serials: tuple[str, ...]) -> list[str]:
    for sn in serials:
        if not SN_PATTERN.fullmatch(sn):
            raise InvalidInput(f"{sn!r} is not a serial number ([0-9A-F]{{16}})")
    return sorted(set(serials))


async def _customer(conn: asyncpg.Connection, customer: str) -> int:
    customer_id: int | None = await conn.fetchval(CUSTOMER_ID, customer)
    if customer_id is None:
        raise NotFound(f"no customer with id or name {customer!r}")
    return customer_id


@customers.command("grant")
@click.argument("customer")
@click.argument("serials", metavar="SN...", nargs=-1, required=True)
@click.pass_obj
def grant(settings: Settings, customer: str, serials: tuple[str, ...]) -> None:
    """Let CUSTOMER (id or name) register the homebases SN...."""
    wanted = _serials(serials)

    async def work(conn: asyncpg.Connection) -> Granted:
        customer_id = await _customer(conn, customer)
        await conn.execute(GRANT, customer_id, wanted)
        return Granted(str(customer_id), wanted)

    emit(run_in_transaction(settings.database, work))


@customers.command("revoke")
@click.argument("customer")
@click.argument("serials", metavar="SN...", nargs=-1, required=True)
@click.pass_obj
def revoke(settings: Settings, customer: str, serials: tuple[str, ...]) -> None:
    """Take homebases SN... from CUSTOMER (id or name); ends their registrations to it (a
    homebase only a registration held is unpaired from this cluster)."""
    wanted = _serials(serials)
    pairings = Pairings(settings.pairing, settings.mqtt)

    async def work(conn: asyncpg.Connection) -> Revoked:
        customer_id = await _customer(conn, customer)
        row = await conn.fetchrow(REVOKE, customer_id, wanted)
        assert row is not None  # noqa: S101 - an aggregate row is always returned
        await _release(pairings, conn, row["unregistered"])
        return Revoked(str(customer_id), wanted, row["unregistered"])

    emit(run_in_transaction(settings.database, work))


@customers.command("token")
@click.argument("customer")
@click.option("--revoke", is_flag=True, help="Give no new token: the customer is locked out.")
@click.pass_obj
def customer_token(settings: Settings, customer: str, revoke: bool) -> None:
    """Rotate CUSTOMER's (id or name) bearer token (prints the new one, shown only this once)
    or revoke it; the old token stops working at once."""
    # A revoked customer keeps a digest nobody holds the token of: the column stays set.
    token = new_token()

    async def work(conn: asyncpg.Connection) -> Customer:
        customer_id = await _customer(conn, customer)
        row = await conn.fetchrow(REPLACE_CUSTOMER_DIGEST, customer_id, token_digest(token))
        c = _customer_of(row, customer)
        if revoke:
            return RevokedCustomer(c.id, c.name, c.created_at, revoked=True)
        return NewCustomer(c.id, c.name, c.created_at, token=token)

    emit(run_in_transaction(settings.database, work))


@customers.command("delete")
@click.argument("customer")
@click.pass_obj
def delete_customer(settings: Settings, customer: str) -> None:
    """Delete CUSTOMER (id or name): its registrations end (the homebases' feeds are visible to
    their owners again; a homebase only a registration held is unpaired from this cluster), its
    grants, configuration and delivery log go; the forwarder points of its homebases stay until
    retention removes them."""
    pairings = Pairings(settings.pairing, settings.mqtt)

    async def work(conn: asyncpg.Connection) -> DeletedCustomer:
        customer_id = await _customer(conn, customer)
        unregistered = sorted(
            r["homebase_sn"] for r in await conn.fetch(UNREGISTER_ALL, customer_id)
        )
        await _release(pairings, conn, unregistered)
        c = _customer_of(await conn.fetchrow(DELETE_CUSTOMER, customer_id), customer)
        return DeletedCustomer(c.id, c.name, c.created_at, deleted=True, unregistered=unregistered)

    emit(run_in_transaction(settings.database, work))


@customers.command("parked")
@click.pass_obj
def parked_customers(settings: Settings) -> None:
    """List the customers whose deliveries are parked (their points failed on data), oldest
    first, with the error and the cursor they stay at."""

    async def work(conn: asyncpg.Connection) -> list[ParkedCustomer]:
        return [
            ParkedCustomer(
                str(r["id"]),
                r["name"],
                r["sqlstate"],
                r["error"],
                r["since"].isoformat(),
                r["delivered_to"] and r["delivered_to"].isoformat(),
            )
            for r in await conn.fetch(LIST_PARKED)
        ]

    emit(run_in_transaction(settings.database, work))


@customers.command("retry")
@click.argument("customer")
@click.pass_obj
def retry_customer(settings: Settings, customer: str) -> None:
    """Deliver to CUSTOMER (id or name) again after its data was repaired, from its cursor on:
    nothing stored meanwhile is lost. Parked again, with the new error, if it still fails."""

    async def work(conn: asyncpg.Connection) -> RetriedCustomer:
        row = await conn.fetchrow(RETRY, await _customer(conn, customer))
        if row is None:
            raise NotFound(f"the deliveries of customer {customer!r} are not parked")
        c = _customer_of(row, customer)
        return RetriedCustomer(c.id, c.name, c.created_at, retried=True)

    emit(run_in_transaction(settings.database, work))


async def _release(pairings: Pairings, conn: asyncpg.Connection, serials: list[str]) -> None:
    # Inside the command's transaction: nothing ends if provisioning or the broker cannot be
    # told.
    async with pairings:
        for sn in serials:
            await pairings.release(conn, sn)


GROUPS = [customers]
