"""Grants: a customer registers only the homebases an administrator gave it (403 otherwise),
and revoking a grant ends the registration."""

from __future__ import annotations

import asyncpg
import httpx
import pytest

from energy_platform.settings import Settings
from tests.support.admin import run_admin_async
from tests.support.provisioning import new_sn


async def test_403_until_granted_then_201_and_revoke_ends_the_registration(
    api: str, settings: Settings, db: asyncpg.Connection
) -> None:
    added = await run_admin_async(settings, "customers", "add", f"grants-{new_sn()}")
    sn, other = new_sn(), new_sn()
    headers = {"Authorization": f"Bearer {added['token']}"}
    try:
        async with httpx.AsyncClient(base_url=api, headers=headers) as client:
            refused = await client.post(f"/register/{sn}")
            assert refused.status_code == 403
            assert refused.headers["content-type"] == "application/problem+json"
            assert refused.json()["status"] == 403
            assert sn in refused.json()["detail"]
            assert (await client.get("/register")).json() == {"registered": []}

            granted = await run_admin_async(
                settings, "customers", "grant", added["name"], sn, other
            )
            assert granted == {"customer": added["id"], "granted": sorted([sn, other])}
            listed = await run_admin_async(settings, "customers", "list")
            (mine,) = [c for c in listed if c["id"] == added["id"]]
            assert mine["granted"] == sorted([sn, other])

            assert (await client.post(f"/register/{sn}")).status_code == 201
            assert (await client.get("/register")).json() == {"registered": [sn]}

            revoked = await run_admin_async(settings, "customers", "revoke", added["id"], sn)
            assert revoked == {"customer": added["id"], "revoked": [sn], "unregistered": [sn]}
            assert (await client.get("/register")).json() == {"registered": []}
            assert (await client.post(f"/register/{sn}")).status_code == 403
            assert (await client.post(f"/register/{other}")).status_code == 201
        period = await db.fetchrow(
            "SELECT upper_inf(period) AS open FROM forwarder.registration_periods"
            " WHERE homebase_sn = $1",
            sn,
        )
        assert period is not None
        assert not period["open"]  # nothing stored after the revocation is delivered
    finally:
        await db.execute("DELETE FROM forwarder.registrations WHERE homebase_sn = $1", other)
        await db.execute("DELETE FROM forwarder.customers WHERE id = $1", int(added["id"]))


@pytest.mark.parametrize(
    "args",
    [("nobody-at-all", "0123456789ABCDEF"), ("1", "not-a-serial")],
    ids=["unknown customer", "bad serial"],
)
async def test_grant_refuses_unknown_customers_and_bad_serials(
    settings: Settings, args: tuple[str, str]
) -> None:
    with pytest.raises(SystemExit):
        await run_admin_async(settings, "customers", "grant", *args)
