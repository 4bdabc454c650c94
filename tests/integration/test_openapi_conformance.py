"""Schemathesis against each HTTP service's own OpenAPI document (stateless and stateful), and
a client generated from each document by openapi-python-client, used for real.

Every answer must be documented (status, media type, schema) and none may be a 5xx. The
services run for real on free loopback ports; the fuzzer sends real credentials so that it gets
past authentication into the handlers. POST /config of the forwarder is left out: it configures
a delivery destination, and a test never configures one off loopback (hand-written tests in
tests/integration/forwarder cover it). The data API's fuzzer may make and revoke tokens of its
user, but never the one it sends: a request cannot revoke its own token (409).
"""

from __future__ import annotations

import asyncio
import importlib
import secrets
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import msgspec
import psycopg
import pytest

from energy_platform import seeding
from energy_platform.api import app as data
from energy_platform.core.http.server import HttpService
from energy_platform.core.settings import LiveSettings, ProvisioningSettings, Settings
from energy_platform.core.tokens import new_token, token_digest
from energy_platform.forwarder.http import app as forwarder
from energy_platform.provisioning.crypto import cluster_secret_digest
from energy_platform.provisioning.http import app as provisioning
from tests.support.admin import run_admin
from tests.support.services import free_port, running

CHECKS = (
    "not_a_server_error,status_code_conformance,content_type_conformance,"
    "response_schema_conformance"
)
SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")


class Credentials(msgspec.Struct, frozen=True):
    user_token: str
    customer_token: str
    cluster_secret: str
    customer_id: int
    known: dict[str, str]
    """Ids and serial numbers that exist: the fuzzer uses them half of the time."""


def fuzz_config(known: dict[str, str], directory: Path) -> Path:
    """A schemathesis.toml that draws each known path parameter from its real value, often."""
    lines = [
        f'[dictionaries.{name}]\nvalues = ["{value}"]' for name, value in sorted(known.items())
    ]
    lines.append("[parameters]")
    lines += [
        f'"path.{name}" = {{ dictionary = "{name}", probability = 0.5 }}' for name in sorted(known)
    ]
    path = directory / "schemathesis.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def fuzz_settings(settings: Settings) -> Settings:
    # A live stream the fuzzer opens ends within a second, as every stream ends in time.
    return msgspec.structs.replace(
        settings,
        provisioning=ProvisioningSettings(secret_key=secrets.token_hex(32)),
        live=LiveSettings(max_stream_s=0.5, keepalive_s=0.2),
    )


@pytest.fixture
async def credentials(fuzz_settings: Settings) -> AsyncIterator[Credentials]:
    """A user with a feed, a stream and a notification; a forwarder customer; a cluster with
    a paired homebase."""
    database_url = fuzz_settings.database.url
    user_token, customer_token, cluster_secret = new_token(), new_token(), new_token()
    suffix = secrets.token_hex(4)
    sn = secrets.token_hex(8).upper()
    await run_admin(
        fuzz_settings, "homebases", "add", sn, "--partner", "fuzz", "--type", "HB",
        "--generation", "6",
    )  # fmt: skip

    async def owned(conn: asyncpg.Connection) -> tuple[int, int, int]:
        user = await seeding.add_user(conn, f"fuzz-{suffix}", token=user_token)
        # A homebase of its own, not the paired one.
        homebase = secrets.token_hex(8).upper()
        feed = await seeding.add_feed(conn, user.id, homebase, title="fuzzed", timezone="UTC")
        stream = await seeding.raw_stream(conn, feed, 1, 1, device=3, idx=2)
        now = int(time.time())
        await seeding.write_points(conn, stream, [(now - 5 * i, i) for i in range(1, 51)])
        return user.id, feed, stream

    conn = await asyncpg.connect(database_url)
    try:
        async with conn.transaction():
            user, feed, stream = await owned(conn)
    finally:
        await conn.close()
    with psycopg.connect(database_url) as conn:
        notification = conn.execute(
            "INSERT INTO cluster.notifications (user_id, feed_id, rule, subject, title, content)"
            " VALUES (%s, %s, 'power_change', 'fuzz', 'fuzz', '<p>x</p>') RETURNING id",
            (user, feed),
        ).fetchone()
        assert notification
        customer = conn.execute(
            "INSERT INTO forwarder.customers (name, token_sha256) VALUES (%s, %s) RETURNING id",
            (f"fuzz-{suffix}", token_digest(customer_token)),
        ).fetchone()
        assert customer
        cluster = conn.execute(
            "INSERT INTO provisioning.clusters (title, http_address, http_port, mqtt_address,"
            " mqtt_port, secret_sha256) VALUES ('fuzz', '127.0.0.1', 80, '127.0.0.1', 1883, %s)"
            " RETURNING id",
            (cluster_secret_digest(cluster_secret),),
        ).fetchone()
        assert cluster
        conn.execute(
            "UPDATE provisioning.homebases SET cluster_id = %s, paired_at = now() WHERE sn = %s",
            (cluster[0], sn),
        )
    known = {
        "user_id": str(user),
        "feed_id": str(feed),
        "stream_id": str(stream),
        "notification_id": str(notification[0]),
        "sn": sn,
        # The fuzzer's own token: a DELETE of it is refused (409), so it cannot lock itself out.
        "name": "default",
    }
    yield Credentials(user_token, customer_token, cluster_secret, customer[0], known)
    with psycopg.connect(database_url) as conn:
        # Whatever the fuzzer registered (registrations have no foreign key to customers).
        conn.execute("DELETE FROM forwarder.registrations WHERE customer_id = %s", (customer[0],))
        conn.execute("DELETE FROM forwarder.customers WHERE id = %s", (customer[0],))
        conn.execute(
            "UPDATE provisioning.homebases SET cluster_id = NULL, paired_at = NULL"
            " WHERE cluster_id = %s",
            (cluster[0],),
        )
        conn.execute("DELETE FROM provisioning.clusters WHERE id = %s", (cluster[0],))
        conn.execute("DELETE FROM provisioning.homebases WHERE sn = %s", (sn,))
        conn.execute("DELETE FROM cluster.feeds WHERE id = %s", (feed,))
        conn.execute("DELETE FROM cluster.users WHERE id = %s", (user,))


@asynccontextmanager
async def serving(settings: Settings) -> AsyncIterator[dict[str, str]]:
    """The three HTTP services on free loopback ports: their base URLs by name."""
    apps = {
        "api": data.create_app(settings),
        "provisioning": provisioning.create_app(settings),
        "forwarder": forwarder.create_app(settings),
    }
    urls, services = {}, []
    for name, app in apps.items():
        port = free_port()
        urls[name] = f"http://127.0.0.1:{port}"
        services.append(HttpService(name, app, "127.0.0.1", port))
    async with running(*services, ready_urls=tuple(url + "/healthz" for url in urls.values())):
        yield urls


def fuzz_command(config: Path, url: str, *options: str) -> list[str]:
    return [
        str(SCHEMATHESIS), "--config-file", str(config), "run", f"{url}/schema/openapi.json",
        "--checks", CHECKS, "--phases", "examples,coverage,fuzzing,stateful",
        # Bounded: the whole run stays within tens of seconds on 2 shared cores.
        "--max-examples", "15", "--seed", "14", "--workers", "1",
        "--no-color", "--suppress-health-check", "all", "--output-truncate", "true",
        *options,
    ]  # fmt: skip


async def fuzz(command: list[str], workdir: Path) -> tuple[int, str]:
    # schemathesis keeps a cache (.schemathesis/, .hypothesis/) in its working directory.
    process = await asyncio.create_subprocess_exec(
        *command, cwd=workdir, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(errors="replace")


async def test_every_answer_of_every_service_is_documented_and_none_is_a_5xx(
    fuzz_settings: Settings, credentials: Credentials, tmp_path: Path
) -> None:
    settings = fuzz_settings
    config = fuzz_config(credentials.known, tmp_path)
    async with serving(settings) as urls:
        commands = [
            fuzz_command(
                config, urls["api"], "-H", f"Authorization: Bearer {credentials.user_token}"
            ),
            fuzz_command(
                config,
                urls["provisioning"],
                "-H",
                f"X-SvcClusterAuth: {credentials.cluster_secret}",
            ),
            # Never a delivery destination from a fuzzer: /config is left out entirely.
            fuzz_command(
                config,
                urls["forwarder"],
                "-H",
                f"Authorization: Bearer {credentials.customer_token}",
                "--exclude-path",
                "/config",
            ),
        ]
        results = await asyncio.gather(*(fuzz(c, tmp_path) for c in commands))
    with psycopg.connect(settings.database.url) as conn:
        configured = conn.execute(
            "SELECT count(*) FROM forwarder.configs WHERE customer_id = %s",
            (credentials.customer_id,),
        ).fetchone()
        own = conn.execute(
            "SELECT scope FROM cluster.user_tokens WHERE token_sha256 = %s",
            (token_digest(credentials.user_token),),
        ).fetchone()
    assert configured == (0,)  # the fuzzer never set a delivery destination
    for name, (code, output) in zip(urls, results, strict=True):
        (tmp_path / f"{name}.txt").write_text(output)
        failures = output[output.find("FAILURES") :]
        assert code == 0, f"{name}:\n{failures[:12_000]}"
    assert own == ("write",)  # nor revoked the token it fuzzed with


GENERATOR = Path(sys.executable).with_name("openapi-python-client")


def generated_client(url: str, name: str, directory: Path) -> Any:
    """The package openapi-python-client generates from ``url``'s /schema, imported."""
    document = directory / f"{name}.json"
    document.write_bytes(httpx.get(f"{url}/schema/openapi.json").content)
    config = directory / "generator.yaml"
    config.write_text("post_hooks: []\n")  # no formatter run: the code is only imported
    package = f"{name}_client"
    subprocess.run(
        [str(GENERATOR), "generate", "--path", str(document), "--meta", "none",
         "--output-path", str(directory / package), "--config", str(config)],
        check=True, capture_output=True,
    )  # fmt: skip
    sys.path.insert(0, str(directory))
    try:
        return importlib.import_module(package)
    finally:
        sys.path.remove(str(directory))


async def test_a_generated_client_of_each_service_calls_it(
    fuzz_settings: Settings, credentials: Credentials, tmp_path: Path
) -> None:
    known = credentials.known
    async with serving(fuzz_settings) as urls:
        clients = {
            name: await asyncio.to_thread(generated_client, url, name, tmp_path)
            for name, url in urls.items()
        }
        api, prov, fwd = clients["api"], clients["provisioning"], clients["forwarder"]

        # The data API: a stream's daily totals, `resolution` an optional enum of its own.
        data_module = importlib.import_module(
            "api_client.api.feeds_and_streams.feeds_feed_id_streams_stream_id_data_data"
        )
        resolution = importlib.import_module(
            "api_client.models.feeds_feed_id_streams_stream_id_data_data_resolution"
        ).FeedsFeedIdStreamsStreamIdDataDataResolution
        assert {r.value for r in resolution} == {"hour", "day", "month"}
        user = api.AuthenticatedClient(urls["api"], token=credentials.user_token)
        answer = await data_module.asyncio_detailed(
            int(known["feed_id"]), int(known["stream_id"]), client=user, resolution=resolution.DAY
        )
        assert answer.status_code == 200
        days = msgspec.json.decode(answer.content)
        assert isinstance(days, list)
        assert all(len(day) == 2 for day in days)  # [day start, mean]

        # The feed's bill of a month, read into the generated model.
        bill_module = importlib.import_module("api_client.api.bills.feeds_feed_id_bill_bill")
        bill = await bill_module.asyncio(
            known["feed_id"], client=user, from_="2026-01-01", to="2026-01-31"
        )
        assert (bill.feed, bill.from_, bill.to) == (known["feed_id"], "2026-01-01", "2026-01-31")
        assert (bill.complete, bill.lines, bill.submeters) == (True, [], [])
        assert bill.warnings == []
        # A stream configuration says whether it is its medium's main meter.
        config = importlib.import_module("api_client.models.stream_config").StreamConfig
        main = config.from_dict(
            {"title": "Meter", "medium": "power", "unit": "Wh", "valid_from": None,
             "valid_to": None, "submeter": False, "main": True}
        )  # fmt: skip
        assert main.main is True

        # Provisioning, as a cluster: the homebases paired to it.
        paired = importlib.import_module(
            "provisioning_client.api.clusters.api_cluster_homebases_paired"
        )
        cluster = prov.AuthenticatedClient(
            urls["provisioning"],
            token=credentials.cluster_secret,
            prefix="",
            auth_header_name="X-SvcClusterAuth",
        )
        homebases = await paired.asyncio(client=cluster)
        assert known["sn"] in homebases.homebases

        # The forwarder, as a customer: its registrations (none yet).
        registered = importlib.import_module(
            "forwarder_client.api.forwarder_registrations.register_registered"
        )
        customer = fwd.AuthenticatedClient(urls["forwarder"], token=credentials.customer_token)
        assert (await registered.asyncio(client=customer)).registered == []
