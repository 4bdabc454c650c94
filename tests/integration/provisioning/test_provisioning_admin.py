"""The admin commands as an operator runs them: JSON on stdout, one line on stderr on error."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import psycopg
import pytest

from energy_platform.core.settings import Settings
from tests.support.admin import admin_process, run_admin
from tests.support.provisioning import new_sn


def cli(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    secret = {"EP_PROVISIONING_SECRET_KEY": settings.provisioning.secret_key}
    return admin_process(settings.database.url, *args, env=secret)


def test_a_cluster_secret_is_printed_once_and_stored_only_as_a_hash(
    provisioning_settings: Settings, sync_db: psycopg.Connection
) -> None:
    added = cli(provisioning_settings, "clusters", "add", "--title", "north",
                "--http", "192.0.2.1:8080", "--mqtt", "192.0.2.1:1883")  # fmt: skip
    listed = cli(provisioning_settings, "clusters", "list")

    assert added.returncode == 0, added.stderr
    cluster = json.loads(added.stdout)
    assert len(cluster["secret"]) == 64
    assert cluster["http"] == ["192.0.2.1", 8080]
    assert listed.returncode == 0, listed.stderr
    assert cluster["secret"] not in listed.stdout
    mine = [c for c in json.loads(listed.stdout) if c["id"] == cluster["id"]]
    assert mine == [{**cluster, "secret": None, "homebases": 0}]
    stored = sync_db.execute(
        "SELECT secret_sha256 FROM provisioning.clusters WHERE id = %s", (cluster["id"],)
    ).fetchone()
    assert stored is not None
    assert cluster["secret"].encode() not in bytes(stored[0])


async def test_homebases_are_imported_from_csv_all_or_none(
    provisioning_settings: Settings, sync_db: psycopg.Connection, tmp_path: Path
) -> None:
    first, second = new_sn(), new_sn()
    good = tmp_path / "good.csv"
    good.write_text(f"sn,partner,type,generation\n{first},acme,HB-1,3\n{second},acme,HB-2,6\n")
    bad = tmp_path / "bad.csv"
    bad.write_text(f"sn,partner,type,generation\n{new_sn()},acme,HB-1,3\nnot-a-sn,acme,HB-1,6\n")

    imported = cli(provisioning_settings, "homebases", "import", str(good))
    again = await run_admin(provisioning_settings, "homebases", "import", str(good))
    refused = cli(provisioning_settings, "homebases", "import", str(bad))

    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout) == {"imported": [first, second], "existing": []}
    assert again == {"imported": [], "existing": [first, second]}
    assert refused.returncode == 1
    assert refused.stdout == ""
    assert refused.stderr.startswith("energy-platform: ")
    assert len(refused.stderr.strip().splitlines()) == 1
    rows = sync_db.execute(
        "SELECT sn, generation, length(secret_encrypted) FROM provisioning.homebases"
        " WHERE sn = ANY(%s) ORDER BY sn",
        ([first, second],),
    ).fetchall()
    assert sorted(rows) == sorted([(first, 3, 1 + 12 + 256 + 16), (second, 6, 1 + 12 + 256 + 16)])


async def test_an_upgrade_for_a_list_is_prepared_for_all_or_none(
    provisioning_settings: Settings, sync_db: psycopg.Connection, tmp_path: Path
) -> None:
    sns = [new_sn() for _ in range(3)]
    for sn in sns:
        await run_admin(provisioning_settings, "homebases", "add", sn, "--partner", "p",
                  "--type", "t", "--generation", "6")  # fmt: skip
    image = tmp_path / "fw.bin"
    image.write_bytes(b"\x00firmware")
    version = f"7.{new_sn()[:6]}"
    await run_admin(provisioning_settings, "firmware", "upload", str(image), "--component", "bl",
              "--version", version)  # fmt: skip
    listing = tmp_path / "list.txt"
    listing.write_text("\n".join(sns[1:]) + "\n")

    with pytest.raises(SystemExit):
        await run_admin(provisioning_settings, "upgrades", "prepare", sns[0], new_sn(),
                  "--component", "bl", "--version", version)  # fmt: skip
    prepared = await run_admin(provisioning_settings, "upgrades", "prepare", sns[0], "--file",
                         str(listing), "--component", "bl", "--version", version)  # fmt: skip
    cancelled = await run_admin(provisioning_settings, "upgrades", "cancel", sns[2])

    assert prepared["prepared"] == sorted(sns)
    assert cancelled == {"cancelled": [sns[2]]}
    rows = sync_db.execute(
        "SELECT sn FROM provisioning.upgrades WHERE sn = ANY(%s) ORDER BY sn", (sns,)
    ).fetchall()
    assert [r[0] for r in rows] == sorted(sns[:2])
