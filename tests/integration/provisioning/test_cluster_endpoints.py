"""The endpoints for clusters beside the spec's (docs/provisioning.md#cluster-endpoints): the
homebases paired to the caller, and whether a CoAP device sends to a given data server."""

from __future__ import annotations

import httpx

from tests.support.admin import run_admin
from tests.support.provisioning import Stack, add_cluster, add_homebase, new_sn


async def test_a_cluster_lists_only_the_homebases_paired_to_it(
    stack: Stack, http: httpx.AsyncClient
) -> None:
    mine, theirs = [await add_cluster(stack.settings, name) for name in ("mine", "theirs")]
    a, b, c = [await add_homebase(stack.settings) for _ in range(3)]
    for sn, cluster in ((a, mine), (b, theirs), (c, mine)):
        assert (
            await http.post(f"{stack.base}/device/{sn}/pair/", headers=cluster.auth)
        ).status_code == 200

    listed = await http.get(f"{stack.base}/cluster/homebases/", headers=mine.auth)
    anonymous = await http.get(f"{stack.base}/cluster/homebases/")

    assert listed.status_code == 200
    assert listed.json() == {"homebases": sorted([a, c])}
    assert anonymous.status_code == 401


async def test_a_data_server_learns_whether_a_coap_device_is_its_own_and_nothing_more(
    stack: Stack, http: httpx.AsyncClient
) -> None:
    cluster = await add_cluster(stack.settings, "data server")
    sn = new_sn()
    await run_admin(stack.settings, "coap-devices", "add", sn, "--data-server", "127.0.0.1:5684")
    url = f"{stack.base}/coap-device/{sn}/assignment/"

    async def ask(address: str, port: int | str, sn_url: str = url) -> httpx.Response:
        return await http.get(
            sn_url, params={"address": address, "port": port}, headers=cluster.auth
        )

    assert (await ask("127.0.0.1", 5684)).json() == {"assigned": True}
    assert (await ask("127.0.0.1", 5683)).json() == {"assigned": False}
    assert (await ask("127.0.0.2", 5684)).json() == {"assigned": False}
    unknown = await ask("127.0.0.1", 5684, f"{stack.base}/coap-device/{new_sn()}/assignment/")
    assert unknown.status_code == 404
    for address, port in (("localhost", 5684), ("127.0.0.1", 0), ("127.0.0.1", "x")):
        bad = await ask(address, port)
        assert bad.status_code == 400, (address, port)
        assert bad.headers["content-type"].startswith("application/problem+json")
    no_secret = await http.get(url, params={"address": "127.0.0.1", "port": 5684})
    assert no_secret.status_code == 401
