"""Contracts as data: the terms `admin tariffs set` writes for a medium (and for export), as one
JSON object a supplier publishes and a household compares (docs/billing.md#contracts). A
contract is checked by the same code and bounds as the admin command
(``tariffs.tariff_terms``); the cluster's catalogue of them is ``cluster.contracts``."""

from __future__ import annotations

from typing import Literal

import msgspec

from energy_platform.billing import queries
from energy_platform.billing.holidays import known_calendar
from energy_platform.billing.tariffs import Terms, tariff_terms
from energy_platform.core.db.pool import Connection
from energy_platform.core.errors import InvalidInput

MAX_CONTRACT_BYTES = 64 * 1024
"""A contract's JSON at most: a few dozen bands take a few KiB."""
MAX_BANDS = 96
"""Bands of one part at most: one a quarter hour."""


class ContractTerms(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """One part of a contract: what `admin tariffs set` takes, its options as fields (prices
    before VAT, per kWh or m³, in the cost streams' currency)."""

    price: float | None = None
    """A flat price; or bands; or neither, on an area (its prices alone)."""
    bands: list[str] | None = msgspec.field(default=None)
    """As --band writes them: [weekday/|weekend/]HH:MM=PRICE."""
    area: str | None = None
    """A price area whose prices the contract follows."""
    factor: float | None = None
    """What the area's price is multiplied by (default 1)."""
    standing: float | None = None
    """A fixed charge per local day or month (standing_per), before VAT."""
    standing_per: Literal["day", "month"] = "day"
    vat: float | None = None
    """Percent, on every part of the price and on the standing charge."""
    floor: float | None = None
    """The lowest price after VAT."""
    cap: float | None = None
    """The highest price after VAT."""
    holidays: str | None = None
    """Whose public holidays count as weekend days (NL, DE-BY)."""
    kwh_per_m3: float | None = None
    """Gas: kWh per m³; its prices are then per kWh."""


class Contract(ContractTerms, forbid_unknown_fields=True, omit_defaults=True):
    """A contract: the terms of a medium, and perhaps what feeding in earns (``export``)."""

    medium: Literal["power", "gas", "water", "heat"] = "power"
    export: ContractTerms | None = None


class CheckedContract(msgspec.Struct, frozen=True):
    """A contract's parts, each checked as `admin tariffs set` checks its options."""

    medium: str
    terms: Terms
    export: Terms | None


class CatalogueEntry(msgspec.Struct):
    """A contract of the cluster's catalogue (`GET /contracts`)."""

    name: str
    contract: Contract
    added_at: str


def decode_contract(raw: bytes | str, where: str = "$") -> Contract:
    """A contract from its JSON, else 400 naming the field (``where`` prefixes the path)."""
    if len(raw) > MAX_CONTRACT_BYTES:
        raise InvalidInput(f"a contract is at most {MAX_CONTRACT_BYTES:,} bytes", field=where)
    try:
        return msgspec.json.decode(raw, type=Contract)
    except msgspec.ValidationError as e:
        raise InvalidInput(f"{where}: {e}", field=_path(e, where)) from None
    except msgspec.DecodeError as e:
        raise InvalidInput(f"{where}: not JSON: {e}", field=where) from None


def checked_contract(contract: Contract, where: str = "$") -> CheckedContract:
    """The contract's parts checked against each other and their bounds, else 400 naming the
    field as the contract calls it (``$.export.vat``)."""
    terms = _terms(contract.medium, contract, where)
    export = (
        None if contract.export is None else _terms("export", contract.export, f"{where}.export")
    )
    return CheckedContract(contract.medium, terms, export)


def _terms(medium: str, part: ContractTerms, where: str) -> Terms:
    if part.bands is not None and len(part.bands) > MAX_BANDS:
        raise InvalidInput(f"{where}.bands: at most {MAX_BANDS} bands", field=f"{where}.bands")
    if part.holidays is not None:
        known_calendar(part.holidays, f"{where}.holidays")

    def name(term: str) -> str:
        # A contract has no --none (a part left out is none), and its bands are a list.
        return "" if term == "none" else f"{where}.{'bands' if term == 'band' else term}"

    return tariff_terms(
        medium,
        price=part.price,
        bands=part.bands or (),
        area=part.area,
        factor=part.factor,
        vat=part.vat,
        floor=part.floor,
        cap=part.cap,
        standing=part.standing,
        standing_per=part.standing_per,
        calendar=part.holidays,
        kwh_per_m3=part.kwh_per_m3,
        name=name,
    )


def _path(error: msgspec.ValidationError, where: str) -> str:
    """The field a msgspec error names (``at `$.export.vat```), under ``where``."""
    message = str(error)
    if "at `$" in message:
        return where + message.rsplit("at `$", 1)[1].rstrip("`")
    return where


async def catalogue(conn: Connection) -> list[CatalogueEntry]:
    """The cluster's contracts by name."""
    return [
        CatalogueEntry(
            row["name"],
            msgspec.json.decode(row["contract"], type=Contract),
            row["added_at"].isoformat(),
        )
        for row in await conn.fetch(queries.CONTRACTS)
    ]
