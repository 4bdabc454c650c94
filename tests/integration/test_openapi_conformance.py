"""Schemathesis against each HTTP service's own OpenAPI document (stateless and stateful).

Every answer must be documented (status, media type, schema) and none may be a 5xx. The
services run for real on free loopback ports; the fuzzer sends real credentials so that it gets
past authentication into the handlers. POST /config of the forwarder is left out: it configures
a delivery destination, and a test never configures one off loopback (hand-written tests in
tests/integration/forwarder cover it).
"""

from __future__ import annotations

import asyncio
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path

import msgspec
import psycopg
import pytest

from energy_platform.api.data import app as data
from energy_platform.api.forwarder import app as forwarder
from energy_platform.api.provisioning import app as provisioning
from energy_platform.api.server import HttpService
from energy_platform.provisioning.crypto import cluster_secret_digest
from energy_platform.settings import ProvisioningSettings, Settings
from energy_platform.tokens import new_token, token_digest
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
    return msgspec.structs.replace(
        settings, provisioning=ProvisioningSettings(secret_key=secrets.token_hex(32))
    )


@pytest.fixture
def credentials(fuzz_settings: Settings) -> Iterator[Credentials]:
    """A user with a feed, a stream and a notification; a forwarder customer; a cluster with
    a paired homebase."""
    database_url = fuzz_settings.database.url
    user_token, customer_token, cluster_secret = new_token(), new_token(), new_token()
    suffix = secrets.token_hex(4)
    sn = secrets.token_hex(8).upper()
    run_admin(
        fuzz_settings, "homebases", "add", sn, "--partner", "fuzz", "--type", "HB",
        "--generation", "6",
    )  # fmt: skip
    with psycopg.connect(database_url) as conn:
        user = conn.execute(
            "INSERT INTO cluster.users (name, token_sha256) VALUES (%s, %s) RETURNING id",
            (f"fuzz-{suffix}", token_digest(user_token)),
        ).fetchone()
        assert user
        feed = conn.execute(
            "INSERT INTO cluster.feeds (owner_id, homebase_sn, subscription_from,"
            " subscription_to) VALUES (%s, %s, now(), now() + interval '1 year') RETURNING id",
            (user[0], secrets.token_hex(8).upper()),
        ).fetchone()
        assert feed
        conn.execute(
            "INSERT INTO cluster.feed_configs (feed_id, title, timezone, validity)"
            " VALUES (%s, 'fuzzed', 'UTC', tstzrange(NULL, NULL))",
            (feed[0],),
        )
        stream = conn.execute(
            "INSERT INTO cluster.streams (feed_id, type, channel, device, medium, idx)"
            " VALUES (%s, 'raw', 1, 3, 1, 2) RETURNING id",
            (feed[0],),
        ).fetchone()
        assert stream
        conn.execute(
            "INSERT INTO cluster.raw_points SELECT %s, now() - i * interval '5 s', i"
            " FROM generate_series(1, 50) i",
            (stream[0],),
        )
        notification = conn.execute(
            "INSERT INTO cluster.notifications (user_id, feed_id, rule, subject, title, content)"
            " VALUES (%s, %s, 'power_change', 'fuzz', 'fuzz', '<p>x</p>') RETURNING id",
            (user[0], feed[0]),
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
        "user_id": str(user[0]),
        "feed_id": str(feed[0]),
        "stream_id": str(stream[0]),
        "notification_id": str(notification[0]),
        "sn": sn,
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
        conn.execute("DELETE FROM cluster.feeds WHERE id = %s", (feed[0],))
        conn.execute("DELETE FROM cluster.users WHERE id = %s", (user[0],))


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
    ready = tuple(url + "/healthz" for url in urls.values())
    async with running(*services, ready_urls=ready):
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
    assert configured == (0,)  # the fuzzer never set a delivery destination
    for name, (code, output) in zip(apps, results, strict=True):
        (tmp_path / f"{name}.txt").write_text(output)
        failures = output[output.find("FAILURES") :]
        assert code == 0, f"{name}:\n{failures[:12_000]}"
