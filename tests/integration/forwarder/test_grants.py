"""Grants: a customer registers only the homebases an administrator gave it (403 otherwise),
and revoking a grant ends the registration."""

from __future__ import annotations

import asyncpg
import pytest

from energy_platform.core.settings import Settings
from tests.support.admin import run_admin
from tests.support.http import http_client
from tests.support.provisioning import new_sn


async def test_403_until_granted_then_201_and_revoke_ends_the_registration(
    api: str, settings: Settings, db: asyncpg.Connection
) -> None:
    added = await run_admin(settings, "customers", "add", f"grants-{new_sn()}")
    sn, other = new_sn(), new_sn()
    headers = {"Authorization": f"Bearer {added['token']}"}
    try:
        async with http_client(base_url=api, headers=headers) as client:
            refused = await client.post(f"/register/{sn}")
            assert refused.status_code == 403
            assert refused.headers["content-type"] == "application/problem+json"
            assert refused.json()["status"] == 403
            assert sn in refused.json()["detail"]
            assert (await client.get("/register")).json() == {"registered": []}

            granted = await run_admin(settings, "customers", "grant", added["name"], sn, other)
            assert granted == {"customer": added["id"], "granted": sorted([sn, other])}
            listed = await run_admin(settings, "customers", "list")
            (mine,) = [c for c in listed if c["id"] == added["id"]]
            assert mine["granted"] == sorted([sn, other])

            assert (await client.post(f"/register/{sn}")).status_code == 201
            assert (await client.get("/register")).json() == {"registered": [sn]}

            revoked = await run_admin(settings, "customers", "revoke", added["id"], sn)
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
        await run_admin(settings, "customers", "grant", *args)


async def test_a_customer_token_rotates_and_a_deleted_customer_ends_its_registrations(
    api: str, settings: Settings, db: asyncpg.Connection
) -> None:
    added = await run_admin(settings, "customers", "add", f"rotating-{new_sn()}")
    sn = new_sn()
    await run_admin(settings, "customers", "grant", added["id"], sn)

    async def status(token: str) -> int:
        headers = {"Authorization": f"Bearer {token}"}
        async with http_client(base_url=api, headers=headers) as client:
            return (await client.get("/register")).status_code

    async with http_client(
        base_url=api, headers={"Authorization": f"Bearer {added['token']}"}
    ) as client:
        assert (await client.post(f"/register/{sn}")).status_code == 201

    rotated = await run_admin(settings, "customers", "token", added["name"])
    assert rotated["id"] == added["id"]
    assert rotated["token"] != added["token"]
    assert await status(added["token"]) == 401  # at once
    assert await status(rotated["token"]) == 200
    revoked = await run_admin(settings, "customers", "token", added["id"], "--revoke")
    assert revoked["revoked"] is True
    assert "token" not in revoked
    assert await status(rotated["token"]) == 401

    deleted = await run_admin(settings, "customers", "delete", added["id"])
    assert deleted == {
        "id": added["id"],
        "name": added["name"],
        "created_at": added["created_at"],
        "deleted": True,
        "unregistered": [sn],
    }
    # Nothing of it is left: no registration (its feed is visible again), no period that
    # retention would keep points for, no grant.
    for table in ("registrations", "registration_periods", "grants"):
        assert (
            await db.fetchval(
                f"SELECT count(*) FROM forwarder.{table} WHERE homebase_sn = $1",  # noqa: S608
                sn,
            )
            == 0
        )
    with pytest.raises(SystemExit):  # "no customer ...", exit status 1
        await run_admin(settings, "customers", "delete", added["id"])
