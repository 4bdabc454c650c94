import asyncio
from collections.abc import Callable
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx
import msgspec
import pytest
from litestar import Litestar, Request, get
from prometheus_client.parser import text_string_to_metric_families

from energy_platform.api import app as data
from energy_platform.core.http.server import HttpService
from energy_platform.core.settings import DatabaseSettings, Settings
from energy_platform.forwarder.http import app as forwarder
from energy_platform.provisioning.http import app as provisioning
from tests.support.http import http_client
from tests.support.services import eventually, free_port, running, wait_for_http
from tests.support.tcp_proxy import TcpProxy

APPS: dict[str, Callable[[Settings], Litestar]] = {
    "api": data.create_app,
    "provisioning": provisioning.create_app,
    "forwarder": forwarder.create_app,
}


@pytest.mark.parametrize("name", list(APPS))
async def test_every_http_service_answers_probes_metrics_and_openapi(
    name: str, settings: Settings
) -> None:
    port = free_port()
    service = HttpService(name, APPS[name](settings), "127.0.0.1", port)
    base = f"http://127.0.0.1:{port}"
    async with running(service, ready_urls=(base + "/healthz",)), http_client() as http:
        health = await http.get(base + "/healthz")
        ready = await http.get(base + "/readyz")
        schema = await http.get(base + "/schema/openapi.json")
        metrics = await http.get(base + "/metrics")

    assert (health.status_code, health.json()) == (200, {"status": "ok"})
    assert (ready.status_code, ready.json()) == (200, {"status": "ready"})
    assert schema.status_code == 200
    assert "/readyz" in schema.json()["paths"]
    assert metrics.status_code == 200
    assert f'ep_http_requests_total{{app_name="{name}"' in metrics.text


async def test_unknown_paths_and_methods_are_problem_json(settings: Settings) -> None:
    port = free_port()
    service = HttpService("api", data.create_app(settings), "127.0.0.1", port)
    base = f"http://127.0.0.1:{port}"
    async with running(service, ready_urls=(base + "/healthz",)), http_client() as http:
        missing = await http.get(base + "/no/such/thing")
        wrong_method = await http.post(base + "/healthz")

    for response, status in ((missing, 404), (wrong_method, 405)):
        assert response.status_code == status
        assert response.headers["content-type"] == "application/problem+json"
        body = response.json()
        assert body["status"] == status
        assert body["type"].startswith("urn:energy-platform:problem:")
        assert body["title"]
        assert body["detail"]


async def test_readyz_follows_the_database_without_a_restart(settings: Settings) -> None:
    db = urlsplit(settings.database.url)
    proxy = TcpProxy(db.hostname or "127.0.0.1", db.port or 5432, free_port())
    await proxy.start()
    via_proxy = db._replace(netloc=f"{db.username or 'postgres'}@127.0.0.1:{proxy.port}").geturl()
    if db.password:
        via_proxy = db._replace(
            netloc=f"{db.username}:{db.password}@127.0.0.1:{proxy.port}"
        ).geturl()
    settings = msgspec.structs.replace(
        settings, database=DatabaseSettings(url=via_proxy, connect_timeout=1.0)
    )
    port = free_port()
    service = HttpService("api", data.create_app(settings), "127.0.0.1", port)
    base = f"http://127.0.0.1:{port}"
    async with running(service, ready_urls=(base + "/healthz",)), http_client() as http:
        before = await http.get(base + "/readyz")
        await proxy.cut()
        during = await http.get(base + "/readyz", timeout=10)
        # A request that needs the database meanwhile: told to retry, not an internal error.
        feeds = await http.get(
            base + "/users/1/feeds", headers={"Authorization": "Bearer some-token"}, timeout=10
        )
        still_up = await http.get(base + "/healthz")
        await proxy.start()
        after = await http.get(base + "/readyz", timeout=10)
        if after.status_code == 503:  # a pooled connection broken by the outage is dropped once
            after = await http.get(base + "/readyz", timeout=10)
    await proxy.cut()

    assert before.status_code == 200
    assert during.status_code == 503
    assert during.headers["content-type"] == "application/problem+json"
    assert during.json()["title"] == "Service unavailable"
    assert (feeds.status_code, feeds.headers["Retry-After"]) == (503, "5")
    assert feeds.headers["content-type"] == "application/problem+json"
    assert feeds.json()["type"] == "urn:energy-platform:problem:unavailable"
    assert "database" in feeds.json()["detail"]
    assert still_up.status_code == 200
    assert after.status_code == 200


@pytest.mark.parametrize("server", ["granian", "uvicorn"])
async def test_a_request_in_flight_when_asked_to_stop_is_answered(
    server: Literal["granian", "uvicorn"],
) -> None:
    arrived = asyncio.Event()
    stop = asyncio.Event()

    port = free_port()

    async def refuses_connections() -> bool:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:  # refused, or reset by a listener closing under it
            return True
        writer.close()
        return False

    @get("/slow")
    async def slow() -> dict[str, str]:
        arrived.set()
        # In flight until the server, asked to stop, has closed its listening socket.
        await stop.wait()
        await eventually(refuses_connections, within=30, every=0.01)
        return {"status": "done"}

    service = HttpService("slow", Litestar([slow]), "127.0.0.1", port, server=server)
    serving = asyncio.create_task(service.run(stop))
    async with asyncio.timeout(30):
        await wait_for_http(f"http://127.0.0.1:{port}/")  # any answer: it listens
    async with http_client() as http:
        answer = asyncio.create_task(http.get(f"http://127.0.0.1:{port}/slow", timeout=30))
        async with asyncio.timeout(30):
            await arrived.wait()  # the request is in its handler
        stop.set()
        response = await answer
        async with asyncio.timeout(10):
            await serving
        with pytest.raises(httpx.ConnectError):  # stopped: nothing listens any more
            await http.get(f"http://127.0.0.1:{port}/slow", timeout=2)

    assert (response.status_code, response.json()) == (200, {"status": "done"})


@pytest.mark.parametrize("server", ["granian", "uvicorn"])
async def test_the_client_behind_a_local_proxy_is_the_forwarded_one(
    server: Literal["granian", "uvicorn"],
) -> None:
    @get("/peer")
    async def peer(request: Request[Any, Any, Any]) -> dict[str, str]:
        return {"client": request.client.host if request.client else ""}

    port = free_port()
    service = HttpService("peer", Litestar([peer]), "127.0.0.1", port, server=server)
    base = f"http://127.0.0.1:{port}"
    async with running(service, ready_urls=(base + "/peer",)), http_client() as http:
        direct = await http.get(base + "/peer")
        proxied = await http.get(base + "/peer", headers={"X-Forwarded-For": "198.51.100.7"})

    assert direct.json() == {"client": "127.0.0.1"}
    assert proxied.json() == {"client": "198.51.100.7"}


def samples(text: str, name: str, **labels: str) -> float:
    """The sum of metric ``name``'s samples whose labels include ``labels``."""
    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name and labels.items() <= s.labels.items()
    )


async def test_requests_are_counted_per_route_and_status(settings: Settings) -> None:
    port = free_port()
    service = HttpService("api", data.create_app(settings), "127.0.0.1", port)
    base = f"http://127.0.0.1:{port}"
    data_route = "/feeds/{feed_id}/streams/{stream_id}/data"
    async with running(service, ready_urls=(base + "/healthz",)), http_client() as http:
        before = (await http.get(base + "/metrics")).text
        for _ in range(3):
            assert (await http.get(base + "/readyz")).status_code == 200
        for feed in ("1", "2"):
            url = f"{base}/feeds/{feed}/streams/7/data"
            assert (
                await http.get(url, headers={"Authorization": "Bearer nobody"})
            ).status_code == 401
        await http.get(base + "/healthz")
        assert (await http.get(base + "/no/such/path")).status_code == 404
        after = (await http.get(base + "/metrics")).text

    def grew(name: str, **labels: str) -> float:
        return samples(after, name, **labels) - samples(before, name, **labels)

    api = {"app_name": "api", "method": "GET"}
    assert grew("ep_http_requests_total", path="/readyz", status_code="200", **api) == 3
    assert grew("ep_http_requests_total", path=data_route, status_code="401", **api) == 2
    assert grew("ep_http_request_duration_seconds_count", path=data_route, **api) == 2
    assert grew("ep_http_requests_total", path="/healthz") == 0  # probes are not counted
    # An unknown path is answered before routing: no label set of its own, however many come.
    assert "/no/such/path" not in after
    assert grew("ep_http_requests_error_total", **api) == 0
    assert samples(after, "ep_http_requests_in_progress", path="/readyz", **api) == 0
