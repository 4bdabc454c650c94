from collections.abc import Callable
from urllib.parse import urlsplit

import httpx
import msgspec
import pytest
from litestar import Litestar

from energy_platform.api.data import app as data
from energy_platform.api.forwarder import app as forwarder
from energy_platform.api.provisioning import app as provisioning
from energy_platform.api.server import HttpService
from energy_platform.settings import DatabaseSettings, Settings
from tests.support.services import free_port, running
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
    async with running(service, ready_urls=(base + "/healthz",)), httpx.AsyncClient() as http:
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
    async with running(service, ready_urls=(base + "/healthz",)), httpx.AsyncClient() as http:
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
    async with running(service, ready_urls=(base + "/healthz",)), httpx.AsyncClient() as http:
        before = await http.get(base + "/readyz")
        await proxy.cut()
        during = await http.get(base + "/readyz", timeout=10)
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
    assert still_up.status_code == 200
    assert after.status_code == 200
