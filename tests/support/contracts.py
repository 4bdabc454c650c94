"""A contract as a supplier publishes it (docs/billing.md#contracts), for the contracts' and
what-if's tests: a Dutch day and night split with NL's holidays, a monthly charge and an
export part; docs/billing.md's worked example prices it."""

from __future__ import annotations

from typing import Any

DAY_NIGHT: dict[str, Any] = {
    "bands": ["weekday/07:00=0.30", "weekday/23:00=0.20", "weekend/00:00=0.20"],
    "vat": 21,
    "standing": 4.5,
    "standing_per": "month",
    "holidays": "NL",
    "export": {"price": 0.08},
}
