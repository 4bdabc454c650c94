"""Admin commands of the forwarder: its customers and their bearer tokens."""

from __future__ import annotations

import asyncpg
import click
import msgspec

from energy_platform.console import CommandGroup, emit, run_in_transaction
from energy_platform.errors import InvalidInput
from energy_platform.inputs import checked_text
from energy_platform.settings import Settings
from energy_platform.tokens import new_token, token_digest

INSERT_CUSTOMER = """
INSERT INTO forwarder.customers (name, token_sha256) VALUES ($1, $2)
RETURNING id, name, created_at"""
LIST_CUSTOMERS = """
SELECT c.id, c.name, c.created_at,
       (SELECT count(*) FROM forwarder.registrations r WHERE r.customer_id = c.id) AS registered
  FROM forwarder.customers c ORDER BY c.id"""


class Customer(msgspec.Struct):
    id: str
    name: str
    created_at: str


class ListedCustomer(Customer):
    registered: int
    """Homebases registered to the customer now."""


class NewCustomer(Customer):
    token: str
    """Shown once: only its SHA-256 is stored."""


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
                str(row["id"]), row["name"], row["created_at"].isoformat(), row["registered"]
            )
            for row in await conn.fetch(LIST_CUSTOMERS)
        ]

    emit(run_in_transaction(settings.database, work))


GROUPS = [customers]
