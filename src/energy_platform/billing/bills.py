"""A feed's bill from the rows of ``cluster.feed_bill`` (sql/functions/95_billing_bills.sql):
a line per medium (export as credit), sub-meters apart, and a projection while the range runs
(docs/billing.md#the-bill), with the VAT included in each line and in the total."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, time
from zoneinfo import ZoneInfo

import asyncpg
import msgspec

from energy_platform.billing.schemas import Bill, BillLine, Submeter

MEDIA_ORDER = ("power", "gas", "water", "heat", "export")
MEDIA_NAMES = {"power": "Electricity", "gas": "Gas", "water": "Water", "heat": "Heat"}


def render_bill(
    feed: str,
    first: date,
    last: date,
    currency: str,
    days: asyncpg.Record,
    rows: list[asyncpg.Record],
) -> Bill:
    """The answer from ``BILL_DAYS``' one row and ``cluster.feed_bill``'s rows."""
    lines: list[BillLine] = []
    submeters: list[Submeter] = []
    warnings: list[str] = []
    settled = 0.0
    unpriced = False
    # The command's instant: the range's first local midnight settles this bill.
    since = datetime.combine(first, time(), ZoneInfo(days["timezone"])).isoformat()
    for row in rows:
        if row["stream_id"] is not None:
            submeters.append(
                Submeter(
                    str(row["stream_id"]),
                    row["title"],
                    row["medium"],
                    row["quantity"],
                    row["unit"],
                    row["amount"],
                )
            )
            continue
        settled += row["settled"]
        unpriced = unpriced or row["unpriced"]
        if row["unpriced_from"] is not None:
            local = row["unpriced_from"].astimezone(ZoneInfo(days["timezone"]))
            warnings.append(unpriced_warning(row["medium"], local.isoformat()))
        if row["shared_streams"]:
            warnings.append(
                shared_warning(row["medium"], row["shared_channels"], row["shared_streams"], since)
            )
        if row["medium"] == "export":
            line = BillLine(
                "export",
                row["quantity"],
                row["unit"],
                row["standing"],
                row["standing"] - row["amount"],
                row["vat"],
                credit=row["amount"],
            )
        else:
            line = BillLine(
                row["medium"],
                row["quantity"],
                row["unit"],
                row["standing"],
                row["amount"] + row["standing"],
                row["vat"],
                energy=row["amount"],
                kwh=msgspec.UNSET if row["kwh"] is None else row["kwh"],
            )
        lines.append(line)
    lines.sort(key=lambda line: MEDIA_ORDER.index(line.medium))
    submeters.sort(key=lambda meter: int(meter.stream))
    over, count = days["over"], days["days"]
    return Bill(
        feed=feed,
        from_=first.isoformat(),
        to=last.isoformat(),
        timezone=days["timezone"],
        currency=currency,
        complete=over == count and not unpriced,
        total=sum(line.total for line in lines),
        # Only while the range runs, and only from days already over: its clock is its days.
        projected_total=projected(over, count, by_day=settled, begun=over, days=count),
        lines=lines,
        submeters=submeters,
        vat=sum(line.vat for line in lines),
        warnings=warnings,
    )


def projected(
    elapsed: float,
    whole: float,
    *,
    by_time: float = 0.0,
    by_day: float = 0.0,
    begun: int = 1,
    days: int = 1,
) -> float | None:
    """Where a running period's money is heading, the one projection of the bill and the
    overview (docs/billing.md#the-bill): what accrues with time (``by_time`` over the
    ``elapsed`` part of its ``whole``) at the same pace for the rest of it, plus what accrues
    by the day (``by_day`` over its ``begun`` days) for each of its ``days``; None unless it
    runs (0 < elapsed < whole). The bill's clock is its days over, and all it settled accrues
    by the day; the overview's runs by the second for the energy, by the day for the charges."""
    if not 0 < elapsed < whole:
        return None
    return by_time * whole / elapsed + by_day / begun * days


def shared_warning(medium: str, channels: Sequence[int], streams: Sequence[int], since: str) -> str:
    """The warning of a medium whose several totals are added with no main meter marked."""
    name = MEDIA_NAMES.get(medium, medium.capitalize())
    return (
        f"{name}: the consumption of channels {_listed(channels)} (streams {_listed(streams)}) "
        "is added up, as none of them is marked as the main meter; if they meter the same "
        "supply, it is counted twice. Mark the utility's meter with `energy-platform admin "
        f"streams configure STREAM --from {since} --main` (STREAM: {_listed(streams, 'or')}), "
        "or a meter behind it with `--submeter`."
    )


def unpriced_warning(medium: str, bucket: str) -> str:
    """The warning of a line whose consumption (export) has a bucket without its money."""
    name = "Export" if medium == "export" else MEDIA_NAMES.get(medium, medium.capitalize())
    what = "feed-in" if medium == "export" else "consumption"
    return (
        f"{name}: the {what} of the bucket starting {bucket} (the first such) has no price, so "
        "its money is not in the total and the bill is not complete. A market price that has "
        "not arrived, a year whose public holidays are not stored (set the tariff again) or a "
        "time before the tariff began leave a bucket unpriced; a price that arrives prices it."
    )


def _listed(items: Sequence[int], word: str = "and") -> str:
    words = [str(item) for item in items]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} {word} {words[-1]}"
