"""A cluster reaches provisioning only through its HTTP API (docs/scaling.md): no SQL on the
cluster's side reads or writes the provisioning schema, so a cluster runs on a database of its
own. Landed migrations are history (0007's view is replaced by sql/functions/90_core_views.sql)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROVISIONING_SIDE = ("src/energy_platform/provisioning/",)
SQL_ON_PROVISIONING = re.compile(r"\b(FROM|JOIN|UPDATE|INTO|TABLE)\s+provisioning\.\w+")


def cluster_side_files() -> list[Path]:
    code = [
        p
        for p in (ROOT / "src/energy_platform").rglob("*.py")
        if not str(p.relative_to(ROOT)).startswith(PROVISIONING_SIDE)
    ]
    return [*code, *(ROOT / "sql/functions").glob("*.sql")]


def test_no_cluster_side_sql_touches_the_provisioning_schema() -> None:
    found = [
        f"{path.relative_to(ROOT)}: {match.group()}"
        for path in cluster_side_files()
        for match in SQL_ON_PROVISIONING.finditer(path.read_text())
    ]
    assert found == []


def test_the_check_sees_such_sql() -> None:
    # The pattern itself, on what the CoAP data server and the rules' view used to hold.
    assert SQL_ON_PROVISIONING.search("SELECT x\n  FROM provisioning.coap_devices WHERE sn = $1")
    assert SQL_ON_PROVISIONING.search("LEFT JOIN provisioning.homebases h ON h.sn = f.homebase_sn")
    assert len(cluster_side_files()) > 50
