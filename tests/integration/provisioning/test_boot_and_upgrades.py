"""The boot heartbeat and firmware delivery: HTTP for generation 6, TFTP for 0 and 3."""

from __future__ import annotations

import asyncio
import hashlib
import io
import os
import secrets
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import tftpy

from tests.support.admin import run_admin
from tests.support.http import http_client
from tests.support.provisioning import Stack, add_cluster, add_homebase, homebase_row


async def upload(stack: Stack, tmp_path: Path, size: int, component: str = "avr") -> dict[str, Any]:
    image = tmp_path / "image.bin"
    image.write_bytes(os.urandom(size))
    version = f"9.{secrets.randbelow(10**6)}"
    return await run_admin(  # type: ignore[no-any-return]
        stack.settings, "firmware", "upload", str(image), "--component", component,
        "--version", version, "--tag", "beta",
    )  # fmt: skip


async def paired_homebase(stack: Stack, generation: int) -> str:
    cluster = await add_cluster(stack.settings)
    sn = await add_homebase(stack.settings, generation)
    async with http_client() as http:
        response = await http.post(f"{stack.base}/device/{sn}/pair/", headers=cluster.auth)
    assert response.status_code == 200
    return sn


def tftp_download(stack: Stack, name: str, options: dict[str, int]) -> tuple[bytes, dict[str, Any]]:
    """A real TFTP client (tftpy's) fetching ``name``; the bytes and the negotiated options."""
    client = tftpy.TftpClient("127.0.0.1", stack.tftp_port, options=dict(options), flock=False)
    out = io.BytesIO()
    client.download(name, out, timeout=2, retries=2)
    return out.getvalue(), dict(client.context.options)


async def test_boot_of_an_unpaired_homebase_is_409_but_counts_as_a_heartbeat(
    stack: Stack, http: httpx.AsyncClient, sync_db: psycopg.Connection
) -> None:
    sn = await add_homebase(stack.settings)
    response = await http.get(f"{stack.base}/device/{sn}/boot/", params={"avr": "1.0"})

    assert response.status_code == 409
    assert response.headers["content-type"] == "application/problem+json"
    row = homebase_row(sync_db, sn)
    assert row is not None
    assert row["last_boot"] is not None
    assert row["avr_version"] == "1.0"


async def test_boot_of_a_paired_homebase_answers_both_cluster_addresses_and_the_time(
    stack: Stack, http: httpx.AsyncClient, sync_db: psycopg.Connection
) -> None:
    sn = await paired_homebase(stack, 6)
    response = await http.get(
        f"{stack.base}/device/{sn}/boot/", params={"avr": "1.2", "bl": "3", "msp": "4.0"}
    )

    assert response.status_code == 200
    body = response.json()
    assert body["cluster"] == {"http": ["10.0.0.1", 80], "mqtt": ["10.0.0.2", 1883]}
    assert abs(body["time"] - time.time()) < 5
    assert "upgrade" not in body
    row = homebase_row(sync_db, sn)
    assert row is not None
    assert (row["avr_version"], row["bl_version"], row["msp_version"]) == ("1.2", "3", "4.0")
    assert str(row["last_boot_address"]) == "127.0.0.1"


async def test_generation_6_downloads_its_upgrade_over_http_and_a_boot_with_it_completes_it(
    stack: Stack, http: httpx.AsyncClient, sync_db: psycopg.Connection, tmp_path: Path
) -> None:
    sn = await paired_homebase(stack, 6)
    image = await upload(stack, tmp_path, 300_000)
    prepared = await run_admin(
        stack.settings, "upgrades", "prepare", sn, "--component", "avr", "--version",
        image["version"],
    )  # fmt: skip
    assert prepared["prepared"] == [sn]
    url = f"{stack.base}/device/{sn}/"

    offer = await http.get(url + "boot/", params={"avr": "1.0"})
    assert offer.status_code == 202
    body = offer.json()
    assert body["cluster"] == {"http": ["10.0.0.1", 80], "mqtt": ["10.0.0.2", 1883]}
    assert body["upgrade"] == {
        "component": "avr",
        "version": image["version"],
        "size": 300_000,
        "sha256": image["sha256"],
    }
    assert body["url"] == url + "upgrade/"
    assert "tftp" not in body

    download = await http.get(body["url"])
    assert download.status_code == 200
    assert download.headers["content-type"] == "application/octet-stream"
    assert hashlib.sha256(download.content).hexdigest() == image["sha256"]

    done = await http.get(url + "boot/", params={"avr": image["version"]})
    assert done.status_code == 200
    assert "upgrade" not in done.json()
    row = homebase_row(sync_db, sn)
    assert row is not None
    assert row["last_upgrade"] is not None
    assert row["avr_tags"] == ["beta"]
    assert (await http.get(url + "upgrade/")).status_code == 404


async def test_generation_3_downloads_its_upgrade_over_tftp_byte_for_byte(
    stack: Stack, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    sn = await paired_homebase(stack, 3)
    image = await upload(stack, tmp_path, 70_001, component="msp")
    await run_admin(
        stack.settings, "upgrades", "prepare", sn, "--component", "msp", "--version",
        image["version"],
    )  # fmt: skip

    offer = await http.get(f"{stack.base}/device/{sn}/boot/")
    assert offer.status_code == 202
    body = offer.json()
    assert body["upgrade"]["sha256"] == image["sha256"]
    assert body["tftp"] == {"port": stack.tftp_port, "file": f"{sn}/msp-{image['version']}.bin"}
    assert "url" not in body

    plain, _ = await asyncio.to_thread(tftp_download, stack, body["tftp"]["file"], {})
    sized, negotiated = await asyncio.to_thread(
        tftp_download, stack, body["tftp"]["file"], {"blksize": 1428, "tsize": 0}
    )
    over_http = await http.get(f"{stack.base}/device/{sn}/upgrade/")

    assert hashlib.sha256(plain).hexdigest() == image["sha256"]
    assert hashlib.sha256(sized).hexdigest() == image["sha256"]
    assert int(negotiated["blksize"]) == 1428
    assert int(negotiated["tsize"]) == 70_001
    # Offered TFTP at boot, but the spec's upgrade/ serves the binary to every generation.
    assert over_http.status_code == 200
    assert hashlib.sha256(over_http.content).hexdigest() == image["sha256"]


@pytest.mark.parametrize("generation", [0, 3, 6])
async def test_upgrade_serves_the_prepared_binary_to_every_generation(
    stack: Stack, http: httpx.AsyncClient, tmp_path: Path, generation: int
) -> None:
    sn = await paired_homebase(stack, generation)
    image = await upload(stack, tmp_path, 5000)
    await run_admin(
        stack.settings, "upgrades", "prepare", sn, "--component", "avr", "--version",
        image["version"],
    )  # fmt: skip
    response = await http.get(f"{stack.base}/device/{sn}/upgrade/")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/octet-stream"
    assert hashlib.sha256(response.content).hexdigest() == image["sha256"]


@pytest.mark.parametrize("generation", [0, 6])
async def test_a_prepared_upgrade_wins_at_boot_even_before_pairing(
    stack: Stack,
    http: httpx.AsyncClient,
    sync_db: psycopg.Connection,
    tmp_path: Path,
    generation: int,
) -> None:
    sn = await add_homebase(stack.settings, generation)  # stock: not paired to any cluster
    image = await upload(stack, tmp_path, 1000)
    await run_admin(
        stack.settings, "upgrades", "prepare", sn, "--component", "avr", "--version",
        image["version"],
    )  # fmt: skip
    url = f"{stack.base}/device/{sn}/"

    offer = await http.get(url + "boot/", params={"avr": "1.0"})
    assert offer.status_code == 202
    body = offer.json()
    assert "cluster" not in body  # no cluster to name yet
    assert body["upgrade"]["sha256"] == image["sha256"]
    if generation == 6:
        assert body["url"] == url + "upgrade/"
    else:
        assert body["tftp"]["file"] == f"{sn}/avr-{image['version']}.bin"
    download = await http.get(url + "upgrade/")
    assert hashlib.sha256(download.content).hexdigest() == image["sha256"]

    done = await http.get(url + "boot/", params={"avr": image["version"]})
    assert done.status_code == 409  # upgraded, and still not paired
    row = homebase_row(sync_db, sn)
    assert row is not None
    assert row["last_upgrade"] is not None


async def test_tftp_serves_nothing_but_prepared_upgrades_and_accepts_no_uploads(
    stack: Stack, tmp_path: Path
) -> None:
    sn = await paired_homebase(stack, 0)
    image = await upload(stack, tmp_path, 1000)
    await run_admin(
        stack.settings, "upgrades", "prepare", sn, "--component", "avr", "--version",
        image["version"],
    )  # fmt: skip
    other = await add_homebase(stack.settings, 6)
    names = [
        f"{sn}/avr-0.0.bin",  # not the prepared version
        f"{other}/avr-{image['version']}.bin",  # not this homebase's upgrade
        "../../etc/passwd",
        "/etc/passwd",
    ]
    for name in names:
        with pytest.raises(tftpy.TftpException):
            await asyncio.to_thread(tftp_download, stack, name, {})

    client = tftpy.TftpClient("127.0.0.1", stack.tftp_port, flock=False)
    with pytest.raises(tftpy.TftpException):
        await asyncio.to_thread(
            client.upload, f"{sn}/avr-{image['version']}.bin", io.BytesIO(b"x"), None, 2, 2
        )
    served, _ = await asyncio.to_thread(
        tftp_download, stack, f"/{sn}/avr-{image['version']}.bin", {}
    )
    assert hashlib.sha256(served).hexdigest() == image["sha256"]


async def test_upgrade_with_nothing_prepared_is_404(stack: Stack, http: httpx.AsyncClient) -> None:
    sn = await paired_homebase(stack, 6)
    response = await http.get(f"{stack.base}/device/{sn}/upgrade/")
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"


async def test_a_cancelled_upgrade_is_no_longer_offered(
    stack: Stack, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    sn = await paired_homebase(stack, 6)
    image = await upload(stack, tmp_path, 10)
    await run_admin(
        stack.settings, "upgrades", "prepare", sn, "--component", "avr", "--version",
        image["version"],
    )  # fmt: skip
    before = await http.get(f"{stack.base}/device/{sn}/boot/")
    cancelled = await run_admin(stack.settings, "upgrades", "cancel", sn)
    after = await http.get(f"{stack.base}/device/{sn}/boot/")

    assert before.status_code == 202
    assert cancelled == {"cancelled": [sn]}
    assert after.status_code == 200
    assert (await http.get(f"{stack.base}/device/{sn}/upgrade/")).status_code == 404
