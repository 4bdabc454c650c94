"""Aggregated mode (LAST, AVERAGE, INTEGRAL against values worked out by hand), `all` mode,
and allow and deny lists on medium, medium with index, and OBIS code."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest

from tests.support.forwarder import (
    NewCustomer,
    NewReceiver,
    Stream,
    aligned_past,
    seeded_customer,
)
from tests.support.services import eventually

GAS: Stream = (2, 5, 7, None, None)
TEMPERATURE: Stream = (3, 8, 5, None, None)
POWER: Stream = (1, 7, 12, None, "1-0:1.7.0")
EXPORT: Stream = (1, 7, 13, None, "1-0:2.7.0")
PHASE1: Stream = (4, 3, 1, 1, None)
PHASE2: Stream = (4, 3, 1, 2, None)
UNKNOWN: Stream = (1, 7, None, None, "1-0:99.1.0")
ENERGY: Stream = (1, 7, 22, None, "1-0:1.8.0")
TARIFF2: Stream = (1, 7, 22, 2, "1-0:1.8.2")  # ingest maps 1.8.2 to medium 22, index 2


async def test_last_average_and_integral_as_worked_out_by_hand(
    api: str,
    db: asyncpg.Connection,
    new_customer: NewCustomer,
    receiver_factory: NewReceiver,
    deliveries: None,
) -> None:
    b = aligned_past(10)
    receiver = await receiver_factory()
    points = {
        GAS: [(b + 10, 100.0), (b + 50, 100.5)],
        TEMPERATURE: [(b, 20.0), (b + 30, 22.0), (b + 45, 27.0)],
        # The point before the interval and the one after its end clip the edge segments.
        POWER: [(b - 10, 1000.0), (b + 20, 2000.0), (b + 50, 2000.0), (b + 70, 3000.0)],
        # No point after it: the last value is held to the interval's end.
        EXPORT: [(b + 30, 600.0)],
    }
    _, sn = await seeded_customer(api, db, new_customer, receiver, points, b)
    await eventually(lambda: len(receiver.requests) >= 2)
    first = receiver.requests[0].json()
    assert (first["from"], first["to"], first["mode"]) == (b, b + 60, "aggregated")
    got = {(p["medium"], p["method"]): p for p in first["data"] if p["t"] == b + 60}
    assert set(got) == {(7, "LAST"), (5, "AVERAGE"), (22, "INTEGRAL"), (23, "INTEGRAL")}
    assert all(p["gateway"] == sn for p in first["data"])
    # The point at b - 10 was stored too, and its interval never sent: it comes first, from
    # b - 10 (1000 W) to b (1333.33 W, towards the next point) = 11,666.7 Ws.
    (earlier,) = [p for p in first["data"] if p["t"] != b + 60]
    assert (earlier["t"], earlier["medium"]) == (b, 22)
    assert earlier["v"] == pytest.approx((1000 + 1333.333333) / 2 * 10 / 3600)
    assert first["data"][0] == earlier
    assert got[7, "LAST"]["v"] == 100.5
    assert got[5, "AVERAGE"]["v"] == pytest.approx((20 + 22 + 27) / 3)
    # Power 12 -> energy 22. v(b) = 1000 + (2000 - 1000) * 10/30 = 1333.33 W;
    # [b, b+20]: (1333.33 + 2000) / 2 * 20 = 33,333.3 Ws; [b+20, b+50]: 2000 * 30 = 60,000 Ws;
    # v(b+60) = 2000 + (3000 - 2000) * 10/20 = 2500 W; [b+50, b+60]: (2000 + 2500) / 2 * 10
    # = 22,500 Ws. Sum 115,833.3 Ws = 32.1759 Wh.
    assert got[22, "INTEGRAL"]["v"] == pytest.approx(115_833.333333 / 3600)
    assert got[22, "INTEGRAL"]["obis"] == "1-0:1.7.0"
    assert (got[22, "INTEGRAL"]["channel"], got[22, "INTEGRAL"]["device"]) == (1, 7)
    # Export 13 -> 23: 600 W held from b+30 to b+60 = 18,000 Ws = 5 Wh.
    assert got[23, "INTEGRAL"]["v"] == pytest.approx(5.0)
    # The next interval: power from b+60 (interpolated, 2500 W) to b+70 (3000 W), then held.
    second = receiver.requests[1].json()
    assert second["from"] == b + 60
    (energy,) = second["data"]
    assert energy["medium"] == 22
    assert energy["v"] == pytest.approx(((2500 + 3000) / 2 * 10 + 3000 * 50) / 3600)


async def test_all_mode_sends_every_point_in_storage_order(
    api: str,
    db: asyncpg.Connection,
    new_customer: NewCustomer,
    receiver_factory: NewReceiver,
    deliveries: None,
) -> None:
    b = aligned_past(10)
    receiver = await receiver_factory()
    points = {GAS: [(b + 10, 100.0), (b + 50, 100.5)], PHASE2: [(b + 30, 230.5)]}
    _, sn = await seeded_customer(api, db, new_customer, receiver, points, b, mode="all")
    await eventually(lambda: len(receiver.requests) >= 1)
    body = receiver.requests[0].json()
    assert body["mode"] == "all"
    # In storage order: the gas points were stored (in one transaction) before the phase.
    assert body["data"] == [
        {"gateway": sn, "channel": 2, "device": 5, "medium": 7, "index": None, "obis": None,
         "method": None, "t": b + 10, "v": 100.0},
        {"gateway": sn, "channel": 2, "device": 5, "medium": 7, "index": None, "obis": None,
         "method": None, "t": b + 50, "v": 100.5},
        {"gateway": sn, "channel": 4, "device": 3, "medium": 1, "index": 2, "obis": None,
         "method": None, "t": b + 30, "v": 230.5},
    ]  # fmt: skip


FILTERS: list[tuple[str, dict[str, Any], set[Stream]]] = [
    ("allow medium", {"allow_list": [{"medium": 1}]}, {PHASE1, PHASE2}),
    ("allow medium+index", {"allow_list": [{"medium": 1, "index": [2]}]}, {PHASE2}),
    ("allow obis (short form)", {"allow_list": [{"obis": "99.1.0"}]}, {UNKNOWN}),
    (
        "allow several",
        {"allow_list": [{"medium": 7}, {"obis": "1-0:1.8.0", "medium": 22}]},
        {GAS, ENERGY},
    ),
    ("deny medium", {"deny_list": [{"medium": 1}]}, {GAS, UNKNOWN, ENERGY, TARIFF2}),
    (
        "deny medium+index",
        {"deny_list": [{"medium": 1, "index": [1]}]},
        {GAS, PHASE2, UNKNOWN, ENERGY, TARIFF2},
    ),
    (
        "deny obis",
        {"deny_list": [{"obis": "1-0:1.8.0"}]},
        {GAS, PHASE1, PHASE2, UNKNOWN, TARIFF2},
    ),
    ("allow a tariff register", {"allow_list": [{"medium": 22, "index": [2]}]}, {TARIFF2}),
    ("allow a tariff register by code", {"allow_list": [{"obis": "1.8.2"}]}, {TARIFF2}),
    ("allow registers", {"allow_list": [{"medium": 22}]}, {ENERGY, TARIFF2}),
    ("no list", {}, {GAS, PHASE1, PHASE2, UNKNOWN, ENERGY, TARIFF2}),
]


async def test_allow_and_deny_lists(
    api: str,
    db: asyncpg.Connection,
    new_customer: NewCustomer,
    receiver_factory: NewReceiver,
    deliveries: None,
) -> None:
    """One customer per case, all delivered by one service at once."""
    b = aligned_past(10)
    streams = [GAS, PHASE1, PHASE2, UNKNOWN, ENERGY, TARIFF2]
    cases = []
    for name, config, expected in FILTERS:
        receiver = await receiver_factory()
        points = {s: [(b + 15, float(n))] for n, s in enumerate(streams)}
        await seeded_customer(api, db, new_customer, receiver, points, b, "all", **config)
        cases.append((name, receiver, expected))
    await eventually(lambda: all(r.requests for _, r, _ in cases))
    for name, receiver, expected in cases:
        data = receiver.requests[0].json()["data"]
        assert isinstance(data, list)
        sent = {(p["channel"], p["device"], p["medium"], p["index"], p["obis"]) for p in data}
        assert sent == expected, name
