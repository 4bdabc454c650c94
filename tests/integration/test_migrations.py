import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import psycopg
import pytest
import sqlparse

from energy_platform import seeding
from energy_platform.core.db.migrations import (
    MigrationError,
    applied,
    definitions,
    discover,
    migrate,
)
from energy_platform.core.paths import migrations_dir
from energy_platform.core.tokens import token_digest
from tests.support.engine import process


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text)
    return path


def table_exists(url: str, name: str) -> bool:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (name,)).fetchone()
    return bool(row and row[0])


def test_files_apply_in_order_once_and_are_recorded_with_checksums(
    empty_database_url: str, tmp_path: Path
) -> None:
    write(tmp_path, "0002_second.sql", "ALTER TABLE first ADD COLUMN b int;")
    write(tmp_path, "0001_first.sql", "CREATE TABLE first (a int);\n-- a comment only\n")

    first_run = migrate(empty_database_url, tmp_path)
    second_run = migrate(empty_database_url, tmp_path)

    assert [m.filename for m in first_run] == ["0001_first.sql", "0002_second.sql"]
    assert second_run == []
    recorded = applied(empty_database_url)
    assert [(r.version, r.name) for r in recorded] == [(1, "first"), (2, "second")]
    assert recorded[0].checksum == first_run[0].checksum
    assert len(recorded[0].checksum) == 64


def test_a_changed_applied_file_is_an_error_naming_it(
    empty_database_url: str, tmp_path: Path
) -> None:
    path = write(tmp_path, "0001_first.sql", "CREATE TABLE first (a int);")
    migrate(empty_database_url, tmp_path)
    path.write_text("CREATE TABLE first (a bigint);")
    write(tmp_path, "0002_second.sql", "CREATE TABLE second (a int);")

    with pytest.raises(MigrationError, match=r"0001_first\.sql changed after it was applied"):
        migrate(empty_database_url, tmp_path)
    assert not table_exists(empty_database_url, "second")


def test_a_failing_file_changes_nothing_and_names_file_and_statement(
    empty_database_url: str, tmp_path: Path
) -> None:
    write(tmp_path, "0001_first.sql", "CREATE TABLE first (a int);")
    write(
        tmp_path,
        "0002_broken.sql",
        "CREATE TABLE second (a int);\n"
        "CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql;\n"
        "INSERT INTO no_such_table VALUES (1);\n",
    )

    with pytest.raises(MigrationError) as error:
        migrate(empty_database_url, tmp_path)

    message = error.value.detail
    assert message.startswith("0002_broken.sql: statement 3 failed")
    assert "no_such_table" in message
    assert "INSERT INTO no_such_table VALUES (1)" in message
    assert table_exists(empty_database_url, "first")
    assert not table_exists(empty_database_url, "second")
    assert [r.version for r in applied(empty_database_url)] == [1]


def test_a_badly_named_file_is_refused_before_anything_runs(
    empty_database_url: str, tmp_path: Path
) -> None:
    write(tmp_path, "0001_first.sql", "CREATE TABLE first (a int);")
    write(tmp_path, "2_second.sql", "CREATE TABLE second (a int);")
    with pytest.raises(MigrationError, match=r"2_second\.sql: name must look like"):
        migrate(empty_database_url, tmp_path)
    assert not table_exists(empty_database_url, "first")


def test_the_project_migrations_install_timescaledb_and_the_schemas(database_url: str) -> None:
    assert migrate(database_url, migrations_dir()) == []
    with psycopg.connect(database_url) as conn:
        version = conn.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'timescaledb'"
        ).fetchone()
        schemas = {
            row[0]
            for row in conn.execute(
                "SELECT nspname FROM pg_namespace"
                " WHERE nspname IN ('provisioning', 'cluster', 'forwarder')"
            )
        }
        gist = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'btree_gist'").fetchone()
    assert version is not None
    assert version[0].split(".")[0] == "2"
    assert schemas == {"provisioning", "cluster", "forwarder"}
    assert gist is not None


def scalar(url: str, query: str) -> object:
    with psycopg.connect(url) as conn:
        row = conn.execute(query.encode()).fetchone()
    return row[0] if row else None


def test_definitions_are_reapplied_on_every_run_after_the_migrations_in_name_order(
    empty_database_url: str, tmp_path: Path
) -> None:
    write(tmp_path, "0001_first.sql", "CREATE TABLE first (a int);")
    (tmp_path / "functions").mkdir()
    # 20_ calls 10_'s function and 10_ reads the migration's table: SQL bodies are checked when
    # created, so this applies only after the migrations and in name order.
    write(
        tmp_path / "functions",
        "20_outer.sql",
        "CREATE OR REPLACE FUNCTION outer_f()"
        " RETURNS bigint LANGUAGE sql AS $$ SELECT inner_f() * 10 $$;",
    )
    inner = write(
        tmp_path / "functions",
        "10_inner.sql",
        "CREATE OR REPLACE FUNCTION inner_f()"
        " RETURNS bigint LANGUAGE sql AS $$ SELECT count(*) + 1 FROM first $$;",
    )

    assert [m.filename for m in migrate(empty_database_url, tmp_path)] == ["0001_first.sql"]
    assert scalar(empty_database_url, "SELECT outer_f()") == 10

    inner.write_text(inner.read_text().replace("+ 1", "+ 2"))
    assert migrate(empty_database_url, tmp_path) == []
    assert scalar(empty_database_url, "SELECT outer_f()") == 20


def test_a_failing_definition_changes_no_definition_and_names_file_and_statement(
    empty_database_url: str, tmp_path: Path
) -> None:
    (tmp_path / "functions").mkdir()
    good = write(
        tmp_path / "functions",
        "10_good.sql",
        "CREATE OR REPLACE FUNCTION good() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;",
    )
    migrate(empty_database_url, tmp_path)
    good.write_text(good.read_text().replace("SELECT 1", "SELECT 2"))
    write(
        tmp_path / "functions",
        "20_bad.sql",
        "CREATE VIEW v AS SELECT 1 AS a;\nCREATE OR REPLACE VIEW v AS SELECT 1 AS b;",
    )

    with pytest.raises(MigrationError) as error:
        migrate(empty_database_url, tmp_path)

    assert error.value.detail.startswith("functions/20_bad.sql: statement 2 failed")
    assert scalar(empty_database_url, "SELECT good()") == 1
    assert scalar(empty_database_url, "SELECT to_regclass('v') IS NULL") is True


PROJECT_SCHEMAS = ["cluster", "forwarder", "provisioning"]
CREATES = re.compile(r"CREATE (?:OR REPLACE )?(FUNCTION|VIEW) ([a-z_]+\.[a-z_]+)", re.IGNORECASE)


def test_every_function_and_view_has_its_one_definition_in_sql_functions(
    database_url: str,
) -> None:
    defined = {
        (kind.upper(), name)
        for d in definitions(migrations_dir())
        for kind, name in CREATES.findall(d.path.read_text())
    }
    with psycopg.connect(database_url) as conn:
        functions = conn.execute(
            "SELECT 'FUNCTION', n.nspname || '.' || p.proname FROM pg_proc p"
            " JOIN pg_namespace n ON n.oid = p.pronamespace"
            " WHERE n.nspname = ANY(%s)",
            (PROJECT_SCHEMAS,),
        ).fetchall()
        views = conn.execute(
            "SELECT 'VIEW', schemaname || '.' || viewname FROM pg_views WHERE schemaname = ANY(%s)",
            (PROJECT_SCHEMAS,),
        ).fetchall()
    assert set(functions) | set(views) == defined


# Migrations up to this one created functions and views themselves (their history stays); the
# later ones only change tables, or a current definition would be overwritten by an older one.
LAST_MIGRATION_WITH_DEFINITIONS = 7


def test_no_later_migration_defines_a_function_or_view() -> None:
    later = [m for m in discover(migrations_dir()) if m.version > LAST_MIGRATION_WITH_DEFINITIONS]
    for migration in later:
        code = sqlparse.format(migration.path.read_text(), strip_comments=True)
        assert not CREATES.search(code), f"{migration.filename}: move it to sql/functions/"


def test_0021_makes_each_users_token_their_write_token_default(
    empty_database_url: str, tmp_path: Path
) -> None:
    # The schema as it was before 0021, with users as they held one token each.
    older = tmp_path / "sql"
    older.mkdir()
    for migration in discover(migrations_dir()):
        if migration.version < 21:
            shutil.copy(migration.path, older / migration.filename)
    migrate(empty_database_url, older)
    with psycopg.connect(empty_database_url) as conn:
        users = {
            name: conn.execute(
                "INSERT INTO cluster.users (name, token_sha256, is_admin, created_at)"
                " VALUES (%s, %s, %s, '2026-01-02T03:04:05Z') RETURNING id",
                (name, token_digest(f"{name}-token"), name == "root"),
            ).fetchone()[0]  # type: ignore[index]
            for name in ("alice", "root")
        }

    # The current sql/: 0021 onwards and the definitions of today.
    assert [m.version for m in migrate(empty_database_url, migrations_dir())][:1] == [21]
    with psycopg.connect(empty_database_url) as conn:
        tokens = conn.execute(
            "SELECT user_id, name, scope, token_sha256, created_at, last_used_at"
            " FROM cluster.user_tokens ORDER BY user_id"
        ).fetchall()
        callers = [
            conn.execute(
                "SELECT user_id, is_admin, scope FROM cluster.token_caller(%s)",
                (token_digest(f"{name}-token"),),
            ).fetchall()
            for name in ("alice", "root")
        ]
        column = conn.execute(
            "SELECT 1 FROM information_schema.columns"
            " WHERE table_schema = 'cluster' AND table_name = 'users'"
            " AND column_name = 'token_sha256'"
        ).fetchone()
    moved = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert tokens == [
        (users["alice"], "default", "write", token_digest("alice-token"), moved, None),
        (users["root"], "default", "write", token_digest("root-token"), moved, None),
    ]
    assert callers == [[(users["alice"], False, "write")], [(users["root"], True, "write")]]
    assert column is None  # one place holds digests: cluster.user_tokens


COST_POINTS = """
SELECT p.ts, p.value FROM cluster.processed_points p
 WHERE p.stream_id IN (SELECT id FROM cluster.streams WHERE feed_id = $1 AND quantity = 'cost')
 ORDER BY p.ts"""


async def test_0034_queues_the_feeds_whose_weekday_bands_priced_nothing_and_records_them(
    empty_database_url: str, tmp_path: Path
) -> None:
    # The schema without 0034, with today's definitions (the engine's queue functions, which
    # read the later migrations' columns too): 0034 then runs last, as on a database upgraded
    # from before it.
    older = tmp_path / "sql"
    shutil.copytree(migrations_dir() / "functions", older / "functions")
    for migration in discover(migrations_dir()):
        if migration.version != 34:
            shutil.copy(migration.path, older / migration.filename)
    migrate(empty_database_url, older)
    wednesday = int(datetime(2026, 11, 18, 12, tzinfo=UTC).timestamp())
    conn = await asyncpg.connect(empty_database_url)
    try:
        owner = await seeding.add_user(conn, "household")
        feeds = {}
        # Day and night bands without holidays (affected), the same with NL's holidays (priced
        # right before), and a flat price (no day kind at all).
        for key, holidays in (("day-night", None), ("with-holidays", "NL"), ("flat", None)):
            feeds[key] = await seeding.add_feed(conn, owner.id, f"00000000000003{len(feeds)}A")
            banded = key != "flat"
            await conn.execute(
                "SELECT cluster.set_tariff($1, 'power', '2026-01-01T00:00:00Z',"
                " $2::text[]::time[], $3::float8[], p_days => $4::text[], p_holidays => $5,"
                " p_holiday_days => $6::date[], p_holiday_names => $7::text[],"
                " p_holiday_years => $8::int4range)",
                feeds[key],
                ["07:00", "23:00", "00:00"] if banded else ["00:00"],
                [0.30, 0.20, 0.20] if banded else [0.25],
                ["weekday", "weekday", "weekend"] if banded else None,
                holidays,
                [] if holidays else None,
                [] if holidays else None,
                asyncpg.Range(2000, 2037) if holidays else None,
            )
            clamp = await seeding.raw_stream(conn, feeds[key], 1, 1)
            await seeding.write_points(
                conn, clamp, [(t, 1000.0) for t in range(wednesday, wednesday + 3601, 30)]
            )
        await process(conn)
        # As the engine left them under the old rule: the affected feed's weekday buckets
        # without their cost, nothing queued.
        await conn.execute(
            "DELETE FROM cluster.processed_points p USING cluster.streams s"
            " WHERE s.id = p.stream_id AND s.feed_id = $1 AND s.quantity = 'cost'",
            feeds["day-night"],
        )
    finally:
        await conn.close()

    assert [m.version for m in migrate(empty_database_url, migrations_dir())][:1] == [34]

    conn = await asyncpg.connect(empty_database_url)
    try:
        repairs = await conn.fetch("SELECT migration, feed_id, period FROM cluster.repairs")
        queued = await conn.fetch(
            "SELECT feed_id, channel, lower(buckets) AS lo, upper(buckets) AS hi"
            " FROM cluster.engine_work"
        )
    finally:
        await conn.close()
    # Only the feed whose weekday bands judged the day kind with no holidays, over its tariff's
    # period cut to its data: the hour of points, in 90 s buckets (12:00 is one's start).
    assert [(r["migration"], r["feed_id"]) for r in repairs] == [(34, feeds["day-night"])]
    work = [(q["feed_id"], q["channel"], q["lo"].timestamp(), q["hi"].timestamp()) for q in queued]
    assert work == [(feeds["day-night"], 1, wednesday, wednesday + 3600 + 90)]

    conn = await asyncpg.connect(empty_database_url)
    try:
        await process(conn)
        costs = [await conn.fetch(COST_POINTS, feeds[key]) for key in ("day-night", "flat")]
    finally:
        await conn.close()
    # Its 40 buckets of 25 Wh each cost 0.025 kWh x 0.30 again, as the flat feed's 0.25 did.
    assert [r["value"] for r in costs[0]] == [pytest.approx(0.0075)] * 40
    assert [r["value"] for r in costs[1]] == [pytest.approx(0.00625)] * 40
