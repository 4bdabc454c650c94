"""The pairing rows of the spec's state table, details and secrets, as clusters see them."""

from __future__ import annotations

import httpx
import psycopg
import pytest

from tests.support.admin import run_admin
from tests.support.provisioning import Stack, add_cluster, add_homebase, homebase_row


async def test_pairing_follows_the_state_table_row_by_row(
    stack: Stack, http: httpx.AsyncClient, sync_db: psycopg.Connection
) -> None:
    first, second = [await add_cluster(stack.settings, name) for name in ("first", "second")]
    sn = await add_homebase(stack.settings)
    url = f"{stack.base}/device/{sn}"

    # unpaired --POST pair/ by a cluster--> paired to that cluster, 200
    paired = await http.post(url + "/pair/", headers=first.auth)
    assert paired.status_code == 200
    row = homebase_row(sync_db, sn)
    assert row is not None
    assert row["cluster_id"] == first.id

    # your_device as seen by two different clusters
    mine = await http.get(url + "/pair/", headers=first.auth)
    theirs = await http.get(url + "/pair/", headers=second.auth)
    assert (mine.status_code, theirs.status_code) == (200, 200)
    assert mine.json()["paired"] is True
    assert mine.json()["your_device"] is True
    assert theirs.json()["paired"] is True
    assert theirs.json()["your_device"] is False
    assert mine.json()["detail"]
    assert theirs.json()["detail"]

    # paired --POST pair/ (already paired, by either cluster)--> unchanged, 304
    for cluster in (second, first):
        again = await http.post(url + "/pair/", headers=cluster.auth)
        assert again.status_code == 304
        assert again.content == b""
        assert homebase_row(sync_db, sn)["cluster_id"] == first.id  # type: ignore[index]

    # any --POST unpair/ that does not happen (another cluster's homebase)--> unchanged, 304
    refused = await http.post(url + "/unpair/", headers=second.auth)
    assert refused.status_code == 304
    assert homebase_row(sync_db, sn)["cluster_id"] == first.id  # type: ignore[index]

    # paired --POST unpair/ by its cluster--> unpaired, 200
    unpaired = await http.post(url + "/unpair/", headers=first.auth)
    assert unpaired.status_code == 200
    assert homebase_row(sync_db, sn)["cluster_id"] is None  # type: ignore[index]
    status = (await http.get(url + "/pair/", headers=second.auth)).json()
    assert (status["paired"], status["your_device"]) == (False, False)

    # any --POST unpair/ of an unpaired homebase--> unchanged, 304
    assert (await http.post(url + "/unpair/", headers=first.auth)).status_code == 304

    # unpaired again: now the second cluster may pair it
    assert (await http.post(url + "/pair/", headers=second.auth)).status_code == 200
    status = (await http.get(url + "/pair/", headers=first.auth)).json()
    assert (status["paired"], status["your_device"]) == (True, False)


async def test_details_are_shown_to_the_paired_cluster_only(
    stack: Stack, http: httpx.AsyncClient, sync_db: psycopg.Connection
) -> None:
    owner, other = [await add_cluster(stack.settings, name) for name in ("owner", "other")]
    sn = await add_homebase(stack.settings, generation=3)
    url = f"{stack.base}/device/{sn}/"

    unpaired = await http.get(url, headers=owner.auth)
    await http.post(url + "pair/", headers=owner.auth)
    await http.get(url + "boot/", params={"avr": "1.4.0", "bl": "2", "msp": "7.1"})
    details = await http.get(url, headers=owner.auth)
    elsewhere = await http.get(url, headers=other.auth)

    assert unpaired.status_code == 403
    assert elsewhere.status_code == 403
    assert elsewhere.headers["content-type"] == "application/problem+json"
    assert details.status_code == 200
    body = details.json()
    assert body["device"] == {"partner": "acme", "sn": sn, "type": "HB-1"}
    assert body["alive"] is True
    assert body["last_boot"].endswith("Z")
    assert len(body["last_boot"]) == len("2026-01-01T00:00:00.000Z")
    assert body["upgrade"] is None
    assert body["firmwares"] == {
        "avr": {"version": "1.4.0", "tags": []},
        "bl": {"version": "2"},
        "msp": {"version": "7.1"},
    }
    sync_db.execute(  # the next heartbeat is late: 2 h 15 min after the last boot, not alive
        "UPDATE provisioning.homebases SET last_boot = now() - interval '2 hours 16 minutes'"
        " WHERE sn = %s",
        (sn,),
    )
    assert (await http.get(url, headers=owner.auth)).json()["alive"] is False
    assert body["cluster"] == {
        "title": "owner",
        "enabled": True,
        "id": owner.id,
        "servers": {"http": ["10.0.0.1", 80], "mqtt": ["10.0.0.2", 1883]},
    }


async def test_the_secret_is_256_bytes_the_same_on_every_call_and_only_for_the_paired_cluster(
    stack: Stack, http: httpx.AsyncClient, sync_db: psycopg.Connection
) -> None:
    owner, other = await add_cluster(stack.settings), await add_cluster(stack.settings)
    sn, neighbour = await add_homebase(stack.settings), await add_homebase(stack.settings)
    for serial in (sn, neighbour):
        await http.post(f"{stack.base}/device/{serial}/pair/", headers=owner.auth)
    url = f"{stack.base}/device/{sn}/secret/"

    first = await http.get(url, headers=owner.auth)
    second = await http.get(url, headers=owner.auth)
    neighbours = await http.get(f"{stack.base}/device/{neighbour}/secret/", headers=owner.auth)
    refused = await http.get(url, headers=other.auth)

    assert first.status_code == 200
    secret = first.json()["secret"]
    assert len(secret) == 512
    assert len(bytes.fromhex(secret)) == 256
    assert first.json()["detail"]
    assert second.json()["secret"] == secret
    assert neighbours.json()["secret"] != secret
    assert refused.status_code == 403
    assert "secret" not in refused.json()
    stored = homebase_row(sync_db, sn)["secret_encrypted"]  # type: ignore[index]
    assert bytes.fromhex(secret) not in bytes(stored)


async def test_unknown_serial_numbers_are_404_on_every_cluster_path(
    stack: Stack, http: httpx.AsyncClient
) -> None:
    cluster = await add_cluster(stack.settings)
    url = f"{stack.base}/device/00000000DEADBEEF"
    responses = [
        await http.get(url + "/", headers=cluster.auth),
        await http.get(url + "/pair/", headers=cluster.auth),
        await http.post(url + "/pair/", headers=cluster.auth),
        await http.post(url + "/unpair/", headers=cluster.auth),
        await http.get(url + "/secret/", headers=cluster.auth),
    ]
    for response in responses:
        assert response.status_code == 404, response.request.url
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["status"] == 404


async def test_a_disabled_cluster_is_refused_until_enabled_again(
    stack: Stack, http: httpx.AsyncClient, sync_db: psycopg.Connection
) -> None:
    cluster = await add_cluster(stack.settings)
    sn = await add_homebase(stack.settings)
    url = f"{stack.base}/device/{sn}/pair/"

    await run_admin(stack.settings, "clusters", "disable", str(cluster.id))
    refused = await http.post(url, headers=cluster.auth)
    unchanged = homebase_row(sync_db, sn)
    await run_admin(stack.settings, "clusters", "enable", str(cluster.id))
    accepted = await http.post(url, headers=cluster.auth)

    assert refused.status_code == 403
    assert refused.json()["title"] == "Forbidden"
    assert unchanged is not None
    assert unchanged["cluster_id"] is None
    assert accepted.status_code == 200


async def test_a_rotated_cluster_secret_works_at_once_and_the_old_one_is_refused(
    stack: Stack, http: httpx.AsyncClient
) -> None:
    cluster = await add_cluster(stack.settings)
    sn = await add_homebase(stack.settings)
    url = f"{stack.base}/device/{sn}/"
    assert (await http.post(url + "pair/", headers=cluster.auth)).status_code == 200
    assert (await http.get(url, headers=cluster.auth)).status_code == 200

    rotated = await run_admin(stack.settings, "clusters", "secret", str(cluster.id))

    assert rotated["id"] == cluster.id
    old = await http.get(url, headers=cluster.auth)
    assert old.status_code == 401
    assert old.headers["content-type"] == "application/problem+json"
    new = await http.get(url, headers={"X-SvcClusterAuth": rotated["secret"]})
    assert new.status_code == 200
    with pytest.raises(SystemExit):  # "no cluster has id ...", exit status 1
        await run_admin(stack.settings, "clusters", "secret", "2147483000")
